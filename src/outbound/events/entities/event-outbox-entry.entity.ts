import { Check, Column, Entity, Index, JoinColumn, ManyToOne, Unique } from 'typeorm';
import type { Relation } from 'typeorm';
import { FinancialOperationEntity } from '../../../core/ledger/entities/financial-operation.entity.js';
import { BigintIdColumn } from '../../../platform/database/columns.js';
import { OutboxEntryColumns } from '../../outbox/entities/outbox-columns.js';

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
export class EventOutboxEntryEntity extends OutboxEntryColumns {
  @BigintIdColumn('event_outbox_pkey') id: string;
  @Column('text') publisher: string;
  @ManyToOne(() => FinancialOperationEntity)
  @JoinColumn({ name: 'operation_id', foreignKeyConstraintName: 'event_outbox_operation_id_fkey' })
  operation: Relation<FinancialOperationEntity>;
}
