import { directionOf, OperationType } from '../../core/ledger/ledger.types.js';
import { reversedOperationKey } from '../../core/ledger/postings.js';
import { messageFieldsOf } from '../outbox/outbox.types.js';
import type { OperationMessageFields, OutboxDelivery, OutboxOperation } from '../outbox/outbox.types.js';

/**
 * A settlement event: one financial operation the ledger posted (CONTRACT §7), sent to the
 * bookmaker's message broker after COMMIT, at least once, in order per account (docs/events.md).
 * Its id is the operation key: consumers de-duplicate by it.
 */
export interface SettlementEvent extends OperationMessageFields {
  /** The operation key: the message id (RabbitMQ `message-id`, NATS `Nats-Msg-Id`). */
  eventId: string;
  eventType: 'financial_operation.posted';
  operationKey: string;
  type: OperationType;
  /** `credit` adds to the player's balance, `debit` takes from it. */
  direction: 'credit' | 'debit';
  /** The key of the operation a `recalculation_debit` reverses, else null. */
  reversesOperationKey: string | null;
  /** When the ledger committed the operation, ISO-8601 UTC. */
  postedAt: string;
}

/** The settlement event of an operation (pure: every process, every attempt builds the same). */
export function settlementEventOf(
  op: OutboxOperation,
  format: (amount: string, currency: string) => string,
): SettlementEvent {
  return {
    eventId: op.operationKey,
    eventType: 'financial_operation.posted',
    operationKey: op.operationKey,
    type: op.type,
    direction: directionOf(op.type),
    ...messageFieldsOf(op, format),
    reversesOperationKey: reversedOperationKey(op),
    postedAt: op.createdAt.toISOString(),
  };
}

/** One event to publish: the event and its exact JSON bytes (the same on every attempt). */
export interface PublishedEvent {
  event: SettlementEvent;
  body: Buffer;
  /** Outbox row id and this attempt's number (1 for the first). */
  outboxId: string;
  attempt: number;
}

/** A publish call as the outbox hands it over: events of distinct accounts. */
export interface PublishRequest {
  events: PublishedEvent[];
  /** Correlation id of this call (logs), shared by every event's attempt. */
  requestId: string;
  /** Aborted when the outbox gives up on the call (`EVENT_TIMEOUT_MS` + 1 s): stop waiting. */
  signal: AbortSignal;
}

/**
 * The extension point between the settlement events' outbox and a message broker
 * (docs/extending.md): a provider that extends this class, in the receiver's modules (RabbitMQ,
 * NATS JetStream) or in a module given to `AppModule.forRoot`, and is named in
 * `EVENT_PUBLISHERS`. {@link publish} answers one result per event, in order: `delivered` only
 * once the broker has taken the event durably (a publisher confirm, a JetStream ack); `retry` for
 * anything else transient (the same event comes again, with the same id and bytes: the broker's or
 * the consumer's de-duplication by `eventId` makes it once); `refused` parks the event for an
 * operator; `unauthorized` pauses the publisher. It should not throw (a throw counts as `retry`,
 * or `refused` when no retry can fix it: `permanentFailure` in src/outbound/outbox/outbox-rules.ts).
 */
export abstract class EventPublisher {
  /** The name `EVENT_PUBLISHERS` uses, e.g. `rabbitmq`; also in logs, metrics and operator routes. */
  abstract readonly name: string;

  abstract publish(request: PublishRequest): Promise<OutboxDelivery[]>;
}
