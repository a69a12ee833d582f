import { Inject, Injectable, Logger, Module, OnModuleDestroy } from '@nestjs/common';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import { connect, headers } from '@nats-io/transport-node';
import type { MsgHdrs } from '@nats-io/transport-node';
import { traceContextHeaders } from '../../../platform/observability/tracing.js';
import type { NatsConnection } from '@nats-io/transport-node';
import { EVENTS_CONFIG } from '../events.config.js';
import type { EventsConfig } from '../events.config.js';
import { excerpt, headerToken, permanentFailure } from '../../outbox/outbox-rules.js';
import type { OutboxDelivery } from '../../outbox/outbox.types.js';
import { EventPublisher, PublishedEvent, PublishRequest } from '../event-publisher.js';
import { BrokerConnection } from './broker-connection.js';
import { publishEach } from './publish-each.js';

/**
 * Publishes settlement events to NATS JetStream (`EVENT_PUBLISHERS=nats`; `@nats-io/*`): one
 * connection, opened on first use and again after it closes (the client itself reconnects while
 * the server is away); the stream `NATS_STREAM` (subjects `NATS_SUBJECT_PREFIX.>`, duplicate window
 * `NATS_DUPLICATE_WINDOW`) is created when missing. Each event goes to
 * `<prefix>.operation.<type>` with `Nats-Msg-Id` = the operation key as a {@link headerToken} (a
 * NATS header cannot carry CR or LF), and is `delivered` on the stream's ack, a duplicate within
 * the window included (JetStream stored it once); no ack in time is `retry`; a message the client
 * refuses to build ({@link permanentFailure}) is `refused`, parked at once (docs/events.md).
 */
@Injectable()
export class NatsPublisher extends EventPublisher implements OnModuleDestroy {
  readonly name = 'nats';
  private readonly logger = new Logger('NatsPublisher');
  private readonly settings: EventsConfig['nats'];
  private readonly timeoutMs: number;
  private readonly client = new BrokerConnection(() => this.open());

  constructor(@Inject(EVENTS_CONFIG) config: EventsConfig) {
    super();
    this.settings = config.nats;
    this.timeoutMs = config.timeoutMs;
  }

  /** The subject of an event: `<prefix>.operation.<type>`. */
  subjectOf(event: PublishedEvent['event']): string {
    return `${this.settings.subjectPrefix}.operation.${event.type}`;
  }

  publish(request: PublishRequest): Promise<OutboxDelivery[]> {
    return publishEach(
      'NATS',
      request,
      async () => (await this.client.get()).js,
      (js, e) => this.publishOne(js, e),
    );
  }

  /** One event, `delivered` on the stream's ack. */
  private async publishOne(js: JetStreamClient, e: PublishedEvent): Promise<OutboxDelivery> {
    try {
      const ack = await js.publish(this.subjectOf(e.event), e.body, {
        msgID: headerToken(e.event.eventId),
        timeout: this.timeoutMs,
        // No instrumentation exists for NATS: the publish span's trace context by hand.
        ...natsTraceHeaders(),
      });
      return {
        outcome: 'delivered',
        answer: `${ack.stream} seq ${ack.seq}${ack.duplicate ? ' (duplicate)' : ''}`,
      };
    } catch (err) {
      const permanent = permanentFailure(err);
      if (permanent) return { outcome: 'refused', reason: permanent };
      return { outcome: 'retry', reason: excerpt(`JetStream did not ack: ${(err as Error).message}`) };
    }
  }

  /** Opens the connection and its JetStream client (the stream made sure of); forgotten at a close. */
  private async open(): Promise<{ connection: NatsConnection; js: JetStreamClient }> {
    const connection = await connect({
      servers: this.settings.servers,
      name: 'settlement-receiver',
      timeout: this.timeoutMs,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
    });
    void connection.closed().then((err) => {
      if (err)
        this.logger.warn(
          `NATS connection closed (${(err as Error).message}): reconnecting at the next publish`,
        );
      this.client.forget();
    });
    await this.ensureStream(await jetstreamManager(connection));
    return { connection, js: jetstream(connection) };
  }

  /** Creates the stream when it does not exist (an existing one is left as the operator set it). */
  private async ensureStream(jsm: JetStreamManager): Promise<void> {
    const { stream, subjectPrefix, duplicateWindowMs } = this.settings;
    try {
      await jsm.streams.info(stream);
    } catch {
      await jsm.streams.add({
        name: stream,
        subjects: [`${subjectPrefix}.>`],
        // Nanoseconds.
        duplicate_window: duplicateWindowMs * 1_000_000,
      });
    }
  }

  onModuleDestroy(): Promise<void> {
    return this.client.close(({ connection }) => connection.drain());
  }
}

/** The NATS JetStream publisher, added when `EVENT_PUBLISHERS` names `nats`. */
@Module({ providers: [NatsPublisher] })
export class NatsPublisherModule {}

/** The active trace context as NATS message headers (`traceparent`, `tracestate`), or none. */
function natsTraceHeaders(): { headers?: MsgHdrs } {
  const context = traceContextHeaders();
  if (!context) return {};
  const h = headers();
  for (const [name, value] of Object.entries(context)) h.set(name, value);
  return { headers: h };
}
