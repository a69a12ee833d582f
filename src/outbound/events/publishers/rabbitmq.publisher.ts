import { traceContextHeaders } from '../../../platform/observability/tracing.js';
import { Inject, Injectable, Logger, Module, OnModuleDestroy } from '@nestjs/common';
import amqp from 'amqplib';
import type { ChannelModel, ConfirmChannel } from 'amqplib';
import { EVENTS_CONFIG } from '../events.config.js';
import type { EventsConfig } from '../events.config.js';
import { excerpt } from '../../outbox/outbox-rules.js';
import type { OutboxDelivery } from '../../outbox/outbox.types.js';
import { EventPublisher, PublishedEvent, PublishRequest } from '../event-publisher.js';
import { BrokerConnection } from './broker-connection.js';
import { publishEach } from './publish-each.js';

/** Routing key of an event on the topic exchange: `operation.<type>`, e.g. `operation.final_credit`. */
export function routingKeyOf(event: PublishedEvent['event']): string {
  return `operation.${event.type}`;
}

/**
 * Publishes settlement events to RabbitMQ (`EVENT_PUBLISHERS=rabbitmq`; amqplib): one connection
 * and one confirm channel, opened on first use and again after any failure; each event is published
 * persistent to the durable topic exchange `RABBITMQ_EXCHANGE` with routing key
 * `operation.<type>`, `message-id` = the operation key, and is `delivered` only when the broker
 * confirms it (publisher confirms: the broker has taken responsibility for it; a nack, a closed
 * channel or an unreachable broker is `retry`). Bind a durable queue to the exchange before
 * events flow: RabbitMQ confirms a message no queue takes, and drops it (docs/events.md).
 */
@Injectable()
export class RabbitMqPublisher extends EventPublisher implements OnModuleDestroy {
  readonly name = 'rabbitmq';
  private readonly logger = new Logger('RabbitMqPublisher');
  private readonly url: string;
  private readonly exchange: string;
  private readonly connectTimeoutMs: number;
  private readonly channel = new BrokerConnection(() => this.open());
  private closing = false;

  constructor(@Inject(EVENTS_CONFIG) config: EventsConfig) {
    super();
    this.url = config.rabbitmq.url;
    this.exchange = config.rabbitmq.exchange;
    this.connectTimeoutMs = config.timeoutMs;
  }

  publish(request: PublishRequest): Promise<OutboxDelivery[]> {
    return publishEach(
      'RabbitMQ',
      request,
      async () => (await this.channel.get()).channel,
      (channel, e) => this.publishOne(channel, e),
    );
  }

  /** One event, `delivered` on the broker's ack. */
  private publishOne(channel: ConfirmChannel, e: PublishedEvent): Promise<OutboxDelivery> {
    return new Promise<OutboxDelivery>((resolve) => {
      try {
        channel.publish(
          this.exchange,
          routingKeyOf(e.event),
          e.body,
          {
            persistent: true,
            messageId: e.event.eventId,
            contentType: 'application/json',
            type: e.event.eventType,
            timestamp: Math.floor(Date.now() / 1000),
            appId: 'settlement-receiver',
            // The publish span's trace context (docs/operating.md, "Traces"), when tracing is on.
            ...withHeaders(traceContextHeaders()),
          },
          (err: unknown) =>
            resolve(
              err
                ? { outcome: 'retry', reason: excerpt(`RabbitMQ did not confirm: ${errorText(err)}`) }
                : { outcome: 'delivered', answer: `confirmed by ${this.exchange}` },
            ),
        );
      } catch (err) {
        // The channel closed under the call: open another at the next publish.
        this.channel.forget();
        resolve({ outcome: 'retry', reason: excerpt(`RabbitMQ publish failed: ${errorText(err)}`) });
      }
    });
  }

  /** Opens the connection and its confirm channel (the exchange declared); forgotten at a failure. */
  private async open(): Promise<{ connection: ChannelModel; channel: ConfirmChannel }> {
    const connection = await amqp.connect(this.url, { timeout: this.connectTimeoutMs });
    const forget = (why: string) => {
      if (!this.closing)
        this.logger.warn(`RabbitMQ connection lost (${why}): reconnecting at the next publish`);
      this.channel.forget();
    };
    connection.on('error', (err: Error) => forget(err.message));
    connection.on('close', () => forget('closed'));
    const channel = await connection.createConfirmChannel();
    channel.on('error', (err: Error) => forget(err.message));
    channel.on('close', () => forget('channel closed'));
    await channel.assertExchange(this.exchange, 'topic', { durable: true });
    return { connection, channel };
  }

  async onModuleDestroy(): Promise<void> {
    this.closing = true;
    await this.channel.close(({ connection }) => connection.close());
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The RabbitMQ publisher, added when `EVENT_PUBLISHERS` names `rabbitmq`. */
@Module({ providers: [RabbitMqPublisher] })
export class RabbitMqPublisherModule {}

/** amqplib's `headers` option, or none. */
function withHeaders(headers: Record<string, string> | undefined): { headers?: Record<string, string> } {
  return headers ? { headers } : {};
}
