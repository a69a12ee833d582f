import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnModuleDestroy,
  OnModuleInit,
} from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { discoverExtensions } from '../../platform/common/extension-discovery.js';
import type { CurrencyTable } from '../../platform/common/currency.js';
import { EVENT_METRIC } from '../outbox/outbox-metrics.js';
import { Outbox, OutboxParts } from '../outbox/outbox.js';
import type { OutboxDeliverer, OutboxDestination } from '../outbox/outbox.types.js';
import { EventPublisher, SettlementEvent, settlementEventOf } from './event-publisher.js';
import { EVENTS_CONFIG, unknownEventPublishers } from './events.config.js';
import type { EventsConfig } from './events.config.js';

/** The background-work governor's kind of the publishers' claims (docs/background-work.md). */
export const BROKER_WORK = 'broker';

/**
 * A publisher as an outbox destination: its rows of `event_outbox` (`publisher = name`), the
 * `EVENT_*` settings; a parked event flags no coupon (the money is settled; only the broker is late).
 */
export function eventDestination(
  config: EventsConfig,
  currencies: CurrencyTable,
  publisher: string,
): OutboxDestination {
  return {
    name: publisher,
    statementPrefix: `eo_${publisher.replaceAll('-', '_')}`,
    tables: { outbox: 'event_outbox', attempts: 'event_delivery_attempts', state: 'event_outbox_state' },
    scope: { column: 'publisher', value: publisher },
    operationTypes: config.operationTypes,
    flagReason: null,
    messageOf: (op) => settlementEventOf(op, (amount, currency) => currencies.format(amount, currency)),
    settings: config,
  };
}

/** An event publisher as the outbox's deliverer: one publish call per claim (or per batch of it). */
export function publisherDeliverer(publisher: EventPublisher): OutboxDeliverer {
  const call = (
    messages: Parameters<NonNullable<OutboxDeliverer['deliverMany']>>[0],
    requestId: string,
    signal: AbortSignal,
  ) =>
    publisher.publish({
      events: messages.map((m) => ({
        event: m.message as SettlementEvent,
        body: m.body,
        outboxId: m.outboxId,
        attempt: m.attempt,
      })),
      requestId,
      signal,
    });
  return {
    name: publisher.name,
    deliver: async (message, requestId, signal) => (await call([message], requestId, signal))[0],
    deliverMany: call,
  };
}

/** One publisher's outbox (its SQL, its operators' service, its workers) and, once found, its publisher. */
export interface EventOutbox {
  outbox: Outbox;
  publisher?: EventPublisher;
}

/**
 * The settlement events' outboxes (docs/events.md), one per publisher `EVENT_PUBLISHERS` names: the
 * posting statement writes an `event_outbox` row per publisher for each new operation of
 * `EVENT_OPERATION_TYPES`; each publisher's workers publish them after COMMIT, at least once, in
 * order per account, with the operation key as the message id, under the governor's `broker`
 * permits. The publishers are found among the app's providers by name (the receiver's RabbitMQ and
 * NATS ones, or a module's given to `AppModule.forRoot`).
 */
@Injectable()
export class EventOutboxes implements OnModuleInit, OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('EventOutboxes');
  private readonly outboxes = new Map<string, EventOutbox>();

  constructor(
    @Inject(EVENTS_CONFIG) private readonly config: EventsConfig,
    private readonly parts: OutboxParts,
    private readonly discovery: DiscoveryService,
  ) {
    const metrics = parts.metrics(EVENT_METRIC, 'publisher', 'the message broker');
    for (const name of config.publishers) {
      const outbox = parts.open(
        eventDestination(config, parts.currencies, name),
        {
          row: 'event_outbox',
          pause: 'publisher_pause',
          resume: 'publisher_resume',
          pauseTarget: { kind: 'publisher', id: name },
        },
        metrics,
      );
      this.outboxes.set(name, { outbox });
    }
  }

  /**
   * Finds each named publisher among the app's providers.
   * @throws Error naming `EVENT_PUBLISHERS` and the known publishers when one is not registered.
   */
  onModuleInit(): void {
    if (!this.outboxes.size) return;
    const publishers = discoverExtensions(this.discovery, EventPublisher);
    const missing = [...this.outboxes.keys()].filter((name) => !publishers.some((p) => p.name === name));
    if (missing.length)
      throw unknownEventPublishers(
        missing,
        publishers.map((p) => p.name),
      );
    // Every publisher's claims take permits of one kind: they back off together while the callback is slow.
    const gate = this.parts.governor.register(BROKER_WORK, this.config.concurrency * this.outboxes.size);
    for (const [name, entry] of this.outboxes) {
      entry.publisher = publishers.find((p) => p.name === name) as EventPublisher;
      entry.outbox.deliverThrough(publisherDeliverer(entry.publisher), gate);
    }
  }

  onApplicationBootstrap(): void {
    for (const { outbox } of this.outboxes.values()) outbox.start();
    if (this.outboxes.size)
      this.logger.log(
        `settlement events (${this.config.operationTypes.join(', ')}) published to ${[...this.outboxes.keys()].join(', ')}`,
      );
  }

  async onModuleDestroy(): Promise<void> {
    await Promise.all([...this.outboxes.values()].map(({ outbox }) => outbox.stop()));
  }

  /** The publishers in force, in `EVENT_PUBLISHERS` order. */
  get names(): string[] {
    return [...this.outboxes.keys()];
  }

  /** The outbox of publisher `name`, or undefined. */
  of(name: string): EventOutbox | undefined {
    return this.outboxes.get(name);
  }

  /** Ends the sleep of every publisher's idle workers (tests). */
  wake(): void {
    for (const { outbox } of this.outboxes.values()) outbox.wake();
  }
}
