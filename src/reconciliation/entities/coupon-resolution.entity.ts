import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * An operator's resolution of a `needs_review` coupon (CONTRACT §6, §9), append-only: the
 * Idempotency-Key it was made under, the hash of its request, the result it set (status code and
 * `realWin`, numeric), who and why, the synthetic batch that applied it, the settlement transition
 * and generation it led to and the financial operations it decided.
 */
@Entity('coupon_resolutions')
export class CouponResolutionEntity {
  @PrimaryColumn('text', { name: 'idempotency_key' }) idempotencyKey: string;
  @Column('text', { name: 'coupon_code' }) couponCode: string;
  @Column('char', { name: 'request_hash', length: 64 }) requestHash: string;
  @Column('int') status: number;
  @Column('numeric', { name: 'real_win', precision: 20, scale: 2 }) realWin: string;
  @Column('text') reason: string;
  @Column('text', { name: 'resolved_by' }) resolvedBy: string;
  @Column('text', { name: 'batch_id' }) batchId: string;
  @Column('text') transition: string;
  @Column('int') generation: number;
  @Column('jsonb') operations: unknown;
  @Column('timestamptz', { name: 'resolved_at' }) resolvedAt: Date;
}
