import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** A deposit or withdrawal requested with an `Idempotency-Key` and its first result (CONTRACT §10). */
@Entity('account_adjustments')
export class AccountAdjustmentEntity {
  @PrimaryColumn('text', { name: 'idempotency_key' }) idempotencyKey: string;
  @Column('text', { name: 'account_id' }) accountId: string;
  @Column('char', { name: 'request_hash', length: 64 }) requestHash: string;
  @Column('numeric', { precision: 20, scale: 2 }) amount: string;
  @Column('char', { length: 3 }) currency: string;
  @Column('text') reason: string;
  @Column('bigint', { name: 'operation_id' }) operationId: string;
  @Column('numeric', { name: 'balance_after', precision: 20, scale: 2 }) balanceAfter: string;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
}
