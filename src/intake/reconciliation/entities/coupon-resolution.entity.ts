import { Check, Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import type { Relation } from 'typeorm';
import { AmountColumn, CreatedAtColumn } from '../../../platform/database/columns.js';
import { CallbackBatchEntity } from '../../../core/settlement/entities/callback-batch.entity.js';
import { CouponEntity } from '../../../core/coupons/entities/coupon.entity.js';

/**
 * An operator's resolution of a `needs_review` coupon (CONTRACT §6, §9), append-only: the
 * Idempotency-Key it was made under, the hash of its request, the result it set (status code and
 * `realWin`, numeric), who (`resolved_by`, the operator's free text, and `actor`, the name of the
 * partner API key; null before keys had names) and why, the synthetic batch that applied it, the
 * settlement transition and generation it led to and the financial operations it decided. Trigger
 * `coupon_resolutions_append_only` (function `forbid_ledger_mutation()`, migrations only: TypeORM
 * does not model triggers) refuses UPDATE and DELETE.
 */
@Entity('coupon_resolutions')
@Check('coupon_resolutions_idempotency_key_check', 'length(idempotency_key) BETWEEN 1 AND 128')
@Check('coupon_resolutions_real_win_check', 'real_win >= 0')
@Check('coupon_resolutions_reason_check', 'length(reason) BETWEEN 1 AND 1000')
@Check('coupon_resolutions_resolved_by_check', 'length(resolved_by) BETWEEN 1 AND 200')
@Index('coupon_resolutions_coupon_idx', ['couponCode'])
export class CouponResolutionEntity {
  @PrimaryColumn('text', { name: 'idempotency_key', primaryKeyConstraintName: 'coupon_resolutions_pkey' })
  idempotencyKey: string;
  @Column('text', { name: 'coupon_code' }) couponCode: string;
  @ManyToOne(() => CouponEntity)
  @JoinColumn({ name: 'coupon_code', foreignKeyConstraintName: 'coupon_resolutions_coupon_code_fkey' })
  coupon: Relation<CouponEntity>;
  @Column('char', { name: 'request_hash', length: 64 }) requestHash: string;
  @Column('int') status: number;
  @AmountColumn({ name: 'real_win' }) realWin: string;
  @Column('text') reason: string;
  @Column('text', { name: 'resolved_by' }) resolvedBy: string;
  @Column('text', { name: 'batch_id' }) batchId: string;
  @ManyToOne(() => CallbackBatchEntity)
  @JoinColumn({ name: 'batch_id', foreignKeyConstraintName: 'coupon_resolutions_batch_id_fkey' })
  batch: Relation<CallbackBatchEntity>;
  @Column('text') transition: string;
  @Column('int') generation: number;
  @Column('jsonb') operations: unknown;
  @CreatedAtColumn('resolved_at') resolvedAt: Date;
  @Column('text', { nullable: true }) actor: string | null;
}
