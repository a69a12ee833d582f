import { Check, Column, Entity, Index, JoinColumn, ManyToOne, Unique } from 'typeorm';
import type { Relation } from 'typeorm';
import {
  AmountColumn,
  BigintIdColumn,
  CreatedAtColumn,
  CurrencyColumn,
} from '../../../platform/database/columns.js';
import { AccountEntity } from './account.entity.js';
import { OperationType } from '../ledger.types.js';

/**
 * A financial operation: one money movement between a player account and the house account,
 * identified by a unique operation key (`<coupon_code>:<generation>:<type>` for coupons,
 * `adjustment:<Idempotency-Key>` for adjustments). `amount` is positive; the type gives the
 * direction. Append-only: trigger `financial_operations_append_only` (function
 * `forbid_ledger_mutation()`, migrations only: TypeORM does not model triggers) refuses UPDATE and DELETE.
 */
@Entity('financial_operations')
@Unique('financial_operations_key_unique', ['operationKey'])
@Check(
  'financial_operations_type_check',
  "type IN ('stake_debit', 'final_credit', 'recalculation_debit', 'deposit', 'withdrawal')",
)
@Check('financial_operations_generation_check', 'generation >= 0')
@Check('financial_operations_amount_check', 'amount > 0')
@Check('financial_operations_check', '(coupon_code IS NULL) = (generation IS NULL)')
@Index('financial_operations_coupon_idx', ['couponCode'], { where: 'coupon_code IS NOT NULL' })
@Index('financial_operations_account_idx', ['accountId'])
export class FinancialOperationEntity {
  @BigintIdColumn('financial_operations_pkey') id: string;
  @Column('text', { name: 'operation_key' }) operationKey: string;
  @Column('text') type: OperationType;
  @Column('text', { name: 'coupon_code', nullable: true }) couponCode: string | null;
  @Column('int', { nullable: true }) generation: number | null;
  @Column('text', { name: 'account_id' }) accountId: string;
  @ManyToOne(() => AccountEntity)
  @JoinColumn({ name: 'account_id', foreignKeyConstraintName: 'financial_operations_account_id_fkey' })
  account: Relation<AccountEntity>;
  @AmountColumn() amount: string;
  @CurrencyColumn() currency: string;
  @Column('text', { name: 'batch_id', nullable: true }) batchId: string | null;
  @CreatedAtColumn() createdAt: Date;
}
