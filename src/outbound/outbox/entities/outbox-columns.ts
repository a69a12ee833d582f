import { Column } from 'typeorm';
import { CreatedAtColumn } from '../../../platform/database/columns.js';
import type { AttemptOutcome, OutboxStatus, ParkReason } from '../outbox.types.js';

/**
 * The columns every destination's outbox table has (`wallet_outbox`, `event_outbox`; docs/wallet.md
 * describes them): the operation to deliver, the row's state and lease, the stored request body,
 * the last failure, and who parked, skipped or retried it when. Not an entity: each table's entity
 * extends it with its `id`, its `operation` relation and its own constraints' names.
 */
export abstract class OutboxEntryColumns {
  @Column('bigint', { name: 'operation_id' }) operationId: string;
  @Column('text', { name: 'operation_key' }) operationKey: string;
  @Column('text', { name: 'account_id' }) accountId: string;
  @Column('text', { default: 'pending' }) status: OutboxStatus;
  @Column('int', { default: 0 }) attempts: number;
  @Column('timestamptz', { name: 'next_attempt_at', default: () => 'now()' }) nextAttemptAt: Date;
  @Column('timestamptz', { name: 'leased_until', nullable: true }) leasedUntil: Date | null;
  @Column('timestamptz', { name: 'retry_from', default: () => 'now()' }) retryFrom: Date;
  @Column('bytea', { nullable: true }) body: Buffer | null;
  @Column('int', { name: 'last_status', nullable: true }) lastStatus: number | null;
  @Column('text', { name: 'last_error', nullable: true }) lastError: string | null;
  @Column('text', { name: 'parked_reason', nullable: true }) parkedReason: ParkReason | null;
  @CreatedAtColumn() createdAt: Date;
  @Column('timestamptz', { name: 'delivered_at', nullable: true }) deliveredAt: Date | null;
  @Column('timestamptz', { name: 'parked_at', nullable: true }) parkedAt: Date | null;
  @Column('timestamptz', { name: 'skipped_at', nullable: true }) skippedAt: Date | null;
  @Column('text', { name: 'skipped_by', nullable: true }) skippedBy: string | null;
  @Column('text', { name: 'skip_reason', nullable: true }) skipReason: string | null;
  @Column('timestamptz', { name: 'retried_at', nullable: true }) retriedAt: Date | null;
  @Column('text', { name: 'retried_by', nullable: true }) retriedBy: string | null;
  /**
   * W3C `traceparent` of the transaction that wrote the row, when tracing was on: its deliveries
   * join that batch's trace (docs/operating.md, "Traces"); null otherwise.
   */
  @Column('text', { nullable: true }) traceparent: string | null;
}

/**
 * The columns every destination's delivery-attempt table has (`wallet_delivery_attempts`,
 * `event_delivery_attempts`): the outbox row, its attempt number, the request id, the connector or
 * publisher, how long it took (milliseconds), the outcome, the HTTP status (null where there is
 * none) and an excerpt of the answer (at most 500 characters, never a secret). Not an entity: each
 * table's entity extends it with its primary key `(id, started_at)` and its `outbox` relation.
 */
export abstract class DeliveryAttemptColumns {
  @Column('bigint', { name: 'outbox_id' }) outboxId: string;
  @Column('int') attempt: number;
  @Column('text', { name: 'request_id' }) requestId: string;
  @Column('text') connector: string;
  @Column('int', { name: 'duration_ms' }) durationMs: number;
  @Column('text') outcome: AttemptOutcome;
  @Column('int', { name: 'http_status', nullable: true }) httpStatus: number | null;
  @Column('text', { nullable: true }) answer: string | null;
  /** The attempt's OpenTelemetry trace id (32 hex) when tracing was on; null otherwise. */
  @Column('char', { name: 'trace_id', length: 32, nullable: true }) traceId: string | null;
}
