import {
  Check,
  Column,
  CreateDateColumn,
  Entity,
  Index,
  JoinColumn,
  ManyToOne,
  PrimaryGeneratedColumn,
  Unique,
} from 'typeorm';
import type { Relation } from 'typeorm';
import { FinancialOperationEntity } from '../../ledger/entities/financial-operation.entity.js';
import type { OutboxStatus, ParkReason } from '../../outbox/outbox.types.js';

/**
 * A settlement event to publish (docs/events.md): one row per financial operation of
 * `EVENT_OPERATION_TYPES` and publisher of `EVENT_PUBLISHERS`, written by the posting statement in
 * the transaction that posts the operation; the same columns and life as a `wallet_outbox` row
 * (docs/wallet.md), per `publisher`. `id` is the order: an account's events go out in it.
 */
@Entity('event_outbox')
@Unique('event_outbox_operation_unique', ['operationId', 'publisher'])
@Check('event_outbox_status_check', "status IN ('pending', 'delivered', 'parked', 'skipped')")
@Check('event_outbox_attempts_check', 'attempts >= 0')
@Check(
  'event_outbox_parked_reason_check',
  "parked_reason IN ('refused', 'conflict', 'retry_budget_exhausted')",
)
@Check(
  'event_outbox_parked_reason_kept_check',
  "status = 'skipped' OR (status = 'parked') = (parked_reason IS NOT NULL)",
)
@Index('event_outbox_pending_idx', ['publisher', 'id'], { where: "status = 'pending'" })
@Index('event_outbox_open_account_idx', ['publisher', 'accountId', 'id'], {
  where: "status IN ('pending', 'parked')",
})
// The retention policy finds finished rows by age (docs/retention.md).
@Index('event_outbox_delivered_idx', ['deliveredAt'], { where: "status = 'delivered'" })
@Index('event_outbox_skipped_idx', ['skippedAt'], { where: "status = 'skipped'" })
// The operators' lists of parked and skipped rows (see wallet_outbox_held_idx).
@Index('event_outbox_held_idx', ['publisher', 'id'], { where: "status IN ('parked', 'skipped')" })
export class EventOutboxEntryEntity {
  @PrimaryGeneratedColumn({ type: 'bigint', primaryKeyConstraintName: 'event_outbox_pkey' }) id: string;
  @Column('text') publisher: string;
  @Column('bigint', { name: 'operation_id' }) operationId: string;
  @ManyToOne(() => FinancialOperationEntity)
  @JoinColumn({ name: 'operation_id', foreignKeyConstraintName: 'event_outbox_operation_id_fkey' })
  operation: Relation<FinancialOperationEntity>;
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
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
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
