import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/**
 * A coupon by `coupon_code` (kept exactly as sent): its registration (account, stake, currency;
 * null while `unallocated`) and its settlement state (CONTRACT §6): status and `realWin` of the
 * last applied snapshot, settlement generation, whether it is settled and for how much, whether a
 * recalculation is open, and the `needs_review` flag.
 */
@Entity('coupons')
export class CouponEntity {
  @PrimaryColumn('text', { name: 'coupon_code' }) couponCode: string;
  @Column('text', { name: 'account_id', nullable: true }) accountId: string | null;
  @Column('numeric', { precision: 20, scale: 2, nullable: true }) stake: string | null;
  @Column('char', { length: 3, nullable: true }) currency: string | null;
  @Column('char', { name: 'registration_hash', length: 64, nullable: true }) registrationHash: string | null;
  @Column('timestamptz', { name: 'registered_at', nullable: true }) registeredAt: Date | null;
  @Column('int', { nullable: true }) status: number | null;
  @Column('numeric', { name: 'real_win', precision: 20, scale: 2, nullable: true }) realWin: string | null;
  @Column('int', { name: 'settlement_generation' }) settlementGeneration: number;
  @Column('boolean', { name: 'generation_settled' }) generationSettled: boolean;
  @Column('numeric', { name: 'settled_amount', precision: 20, scale: 2, nullable: true })
  settledAmount: string | null;
  @Column('boolean', { name: 'recalculation_open' }) recalculationOpen: boolean;
  @Column('boolean', { name: 'needs_review' }) needsReview: boolean;
  @Column('text', { name: 'review_reason', nullable: true }) reviewReason: string | null;
  @Column('text', { name: 'last_batch_id', nullable: true }) lastBatchId: string | null;
  /** When the reconciliation last read this coupon from SportAPI (CONTRACT §9). */
  @Column('timestamptz', { name: 'last_reconciled_at', nullable: true }) lastReconciledAt: Date | null;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' }) updatedAt: Date;
}
