import { Check, Entity, Index, JoinColumn, ManyToOne, Unique } from 'typeorm';
import type { Relation } from 'typeorm';
import { FinancialOperationEntity } from '../../../core/ledger/entities/financial-operation.entity.js';
import { BigintIdColumn } from '../../../platform/database/columns.js';
import { OutboxEntryColumns } from '../../outbox/entities/outbox-columns.js';

/**
 * A financial operation to push to the wallet (docs/wallet.md), written by the posting statement
 * in the transaction that posts the operation. `id` is the order: an account's rows are delivered
 * in it. `attempts` counts claims (a claim leases the row until `leased_until`); `body` is the
 * exact request body, stored at the row's first claim before it is sent, and sent unchanged by
 * every attempt; `retry_from` starts the `WALLET_RETRY_FOR` budget (reset by an operator's retry).
 * `parked_reason` is set while parked and kept when an operator skips the row.
 */
@Entity('wallet_outbox')
@Unique('wallet_outbox_operation_unique', ['operationId'])
@Check('wallet_outbox_status_check', "status IN ('pending', 'delivered', 'parked', 'skipped')")
@Check('wallet_outbox_attempts_check', 'attempts >= 0')
@Check(
  'wallet_outbox_parked_reason_check',
  "parked_reason IN ('refused', 'conflict', 'retry_budget_exhausted')",
)
// A parked row says why; a skipped one keeps the reason it was parked for (null if it never was).
@Check(
  'wallet_outbox_parked_reason_kept_check',
  "status = 'skipped' OR (status = 'parked') = (parked_reason IS NOT NULL)",
)
@Index('wallet_outbox_pending_idx', ['id'], { where: "status = 'pending'" })
@Index('wallet_outbox_open_account_idx', ['accountId', 'id'], { where: "status IN ('pending', 'parked')" })
// The retention policy finds finished rows by age (docs/retention.md).
@Index('wallet_outbox_delivered_idx', ['deliveredAt'], { where: "status = 'delivered'" })
@Index('wallet_outbox_skipped_idx', ['skippedAt'], { where: "status = 'skipped'" })
// The operators' lists of parked and skipped rows, newest first (rare rows: the index is rarely
// written; pending rows have theirs, delivered ones are most of the table).
@Index('wallet_outbox_held_idx', ['id'], { where: "status IN ('parked', 'skipped')" })
export class WalletOutboxEntryEntity extends OutboxEntryColumns {
  @BigintIdColumn('wallet_outbox_pkey') id: string;
  @ManyToOne(() => FinancialOperationEntity)
  @JoinColumn({ name: 'operation_id', foreignKeyConstraintName: 'wallet_outbox_operation_id_fkey' })
  operation: Relation<FinancialOperationEntity>;
}
