import { Check, Column, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import type { Relation } from 'typeorm';
import { AmountColumn, CreatedAtColumn, CurrencyColumn } from '../../../platform/database/columns.js';
import { AccountEntity } from './account.entity.js';
import { FinancialOperationEntity } from './financial-operation.entity.js';

/**
 * A deposit or withdrawal requested with an `Idempotency-Key` and its first result (CONTRACT §10),
 * with the name of the partner API key that made it (`actor`; null for rows from before keys had
 * names).
 */
@Entity('account_adjustments')
@Check('account_adjustments_idempotency_key_check', 'length(idempotency_key) BETWEEN 1 AND 128')
@Check('account_adjustments_amount_check', 'amount <> 0')
export class AccountAdjustmentEntity {
  @PrimaryColumn('text', { name: 'idempotency_key', primaryKeyConstraintName: 'account_adjustments_pkey' })
  idempotencyKey: string;
  @Column('text', { name: 'account_id' }) accountId: string;
  @ManyToOne(() => AccountEntity)
  @JoinColumn({ name: 'account_id', foreignKeyConstraintName: 'account_adjustments_account_id_fkey' })
  account: Relation<AccountEntity>;
  @Column('char', { name: 'request_hash', length: 64 }) requestHash: string;
  @AmountColumn() amount: string;
  @CurrencyColumn() currency: string;
  @Column('text') reason: string;
  @Column('bigint', { name: 'operation_id' }) operationId: string;
  @ManyToOne(() => FinancialOperationEntity)
  @JoinColumn({ name: 'operation_id', foreignKeyConstraintName: 'account_adjustments_operation_id_fkey' })
  operation: Relation<FinancialOperationEntity>;
  @AmountColumn({ name: 'balance_after' }) balanceAfter: string;
  @CreatedAtColumn() createdAt: Date;
  @Column('text', { nullable: true }) actor: string | null;
}
