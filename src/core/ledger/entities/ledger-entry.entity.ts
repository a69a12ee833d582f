import { Check, Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import type { Relation } from 'typeorm';
import { AmountColumn, BigintIdColumn, CreatedAtColumn } from '../../../platform/database/columns.js';
import { AccountEntity } from './account.entity.js';
import { FinancialOperationEntity } from './financial-operation.entity.js';

/**
 * One side of a financial operation: a signed `numeric` amount on one account. Append-only:
 * trigger `ledger_entries_append_only` (function `forbid_ledger_mutation()`, migrations only:
 * TypeORM does not model triggers) refuses UPDATE and DELETE. An account's entries are inserted
 * under its row lock, so their id order is its commit order (the statement's balance after each
 * entry is read through `(account_id, id)`).
 */
@Entity('ledger_entries')
@Check('ledger_entries_amount_check', 'amount <> 0')
@Index('ledger_entries_operation_idx', ['operationId'])
@Index('ledger_entries_account_entry_idx', ['accountId', 'id'])
export class LedgerEntryEntity {
  @BigintIdColumn('ledger_entries_pkey') id: string;
  @Column('bigint', { name: 'operation_id' }) operationId: string;
  @ManyToOne(() => FinancialOperationEntity)
  @JoinColumn({ name: 'operation_id', foreignKeyConstraintName: 'ledger_entries_operation_id_fkey' })
  operation: Relation<FinancialOperationEntity>;
  @Column('text', { name: 'account_id' }) accountId: string;
  @ManyToOne(() => AccountEntity)
  @JoinColumn({ name: 'account_id', foreignKeyConstraintName: 'ledger_entries_account_id_fkey' })
  account: Relation<AccountEntity>;
  @AmountColumn() amount: string;
  @CreatedAtColumn() createdAt: Date;
}
