import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** Types of financial operation (CONTRACT §7, §10). */
export enum OperationType {
  STAKE_DEBIT = 'stake_debit',
  FINAL_CREDIT = 'final_credit',
  RECALCULATION_DEBIT = 'recalculation_debit',
  DEPOSIT = 'deposit',
  WITHDRAWAL = 'withdrawal',
}

/**
 * A financial operation: one money movement between a player account and the house account,
 * identified by a unique operation key (`<coupon_code>:<generation>:<type>` for coupons,
 * `adjustment:<Idempotency-Key>` for adjustments). `amount` is positive; the type gives the
 * direction. Append-only.
 */
@Entity('financial_operations')
export class FinancialOperationEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: string;
  @Column('text', { name: 'operation_key', unique: true }) operationKey: string;
  @Column('text') type: OperationType;
  @Column('text', { name: 'coupon_code', nullable: true }) couponCode: string | null;
  @Column('int', { nullable: true }) generation: number | null;
  @Column('text', { name: 'account_id' }) accountId: string;
  @Column('numeric', { precision: 20, scale: 2 }) amount: string;
  @Column('char', { length: 3 }) currency: string;
  @Column('text', { name: 'batch_id', nullable: true }) batchId: string | null;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
}
