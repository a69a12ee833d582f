import { Check, Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import type { Relation } from 'typeorm';
import {
  AmountColumn,
  CreatedAtColumn,
  CurrencyColumn,
  UpdatedAtColumn,
} from '../../../platform/database/columns.js';
import { AccountEntity } from '../../ledger/entities/account.entity.js';

/**
 * A coupon by `coupon_code` (kept exactly as sent): its registration (account, stake, currency;
 * null while `unallocated`) and its settlement state (CONTRACT §6): status and `realWin` of the
 * last applied snapshot, settlement generation, whether it is settled and for how much, whether a
 * recalculation is open, and the `needs_review` flag. `registered_by` is the name of the partner
 * API key that registered it (null while unallocated, and for registrations from before keys had
 * names).
 */
@Entity('coupons')
@Check('coupons_coupon_code_check', 'length(coupon_code) BETWEEN 1 AND 32')
@Check('coupons_stake_check', 'stake > 0')
@Check('coupons_real_win_check', 'real_win >= 0')
@Check('coupons_settlement_generation_check', 'settlement_generation >= 0')
@Check('coupons_settled_amount_check', 'settled_amount >= 0')
@Check('coupons_check', '(account_id IS NULL) = (registered_at IS NULL)')
@Check('coupons_check1', 'generation_settled = (settled_amount IS NOT NULL)')
@Index('coupons_needs_review_idx', ['updatedAt'], { where: 'needs_review' })
@Index('coupons_unallocated_idx', ['createdAt'], { where: 'account_id IS NULL' })
@Index('coupons_account_idx', ['accountId'], { where: 'account_id IS NOT NULL' })
@Index('coupons_updated_idx', ['updatedAt'])
@Index('coupons_reconcile_idx', ['updatedAt'], { where: 'needs_review OR NOT generation_settled' })
export class CouponEntity {
  @PrimaryColumn('text', { name: 'coupon_code', primaryKeyConstraintName: 'coupons_pkey' })
  couponCode: string;
  @Column('text', { name: 'account_id', nullable: true }) accountId: string | null;
  @ManyToOne(() => AccountEntity)
  @JoinColumn({ name: 'account_id', foreignKeyConstraintName: 'coupons_account_id_fkey' })
  account: Relation<AccountEntity> | null;
  @AmountColumn({ nullable: true }) stake: string | null;
  @CurrencyColumn({ nullable: true }) currency: string | null;
  @Column('char', { name: 'registration_hash', length: 64, nullable: true }) registrationHash: string | null;
  @Column('timestamptz', { name: 'registered_at', nullable: true }) registeredAt: Date | null;
  @Column('int', { nullable: true }) status: number | null;
  @AmountColumn({ name: 'real_win', nullable: true }) realWin: string | null;
  @Column('int', { name: 'settlement_generation', default: 0 }) settlementGeneration: number;
  @Column('boolean', { name: 'generation_settled', default: false }) generationSettled: boolean;
  @AmountColumn({ name: 'settled_amount', nullable: true }) settledAmount: string | null;
  @Column('boolean', { name: 'recalculation_open', default: false }) recalculationOpen: boolean;
  @Column('boolean', { name: 'needs_review', default: false }) needsReview: boolean;
  @Column('text', { name: 'review_reason', nullable: true }) reviewReason: string | null;
  @Column('text', { name: 'last_batch_id', nullable: true }) lastBatchId: string | null;
  @CreatedAtColumn() createdAt: Date;
  @UpdatedAtColumn() updatedAt: Date;
  /** When the reconciliation last read this coupon from SportAPI (CONTRACT §9). */
  @Column('timestamptz', { name: 'last_reconciled_at', nullable: true }) lastReconciledAt: Date | null;
  @Column('text', { name: 'registered_by', nullable: true }) registeredBy: string | null;
}
