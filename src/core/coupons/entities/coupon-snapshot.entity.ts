import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import type { Relation } from 'typeorm';
import { AmountColumn, BigintIdColumn, CreatedAtColumn } from '../../../platform/database/columns.js';
import { CouponEntity } from './coupon.entity.js';

/**
 * One coupon's state in one batch (CONTRACT §6 "every snapshot is stored"), with the transition
 * decided for it, whether it was applied, and the financial operations it decided. Partitioned by
 * month of `received_at` (the primary key holds it) and kept for `RETENTION_SNAPSHOTS`
 * (docs/retention.md); a batch's coupon appears once because the batch is claimed once.
 */
@Entity('coupon_snapshots')
@Index('coupon_snapshots_coupon_batch_idx', ['couponCode', 'batchId'])
@Index('coupon_snapshots_batch_idx', ['batchId'])
export class CouponSnapshotEntity {
  @BigintIdColumn('coupon_snapshots_pkey') id: string;
  @Column('text', { name: 'coupon_code' }) couponCode: string;
  @ManyToOne(() => CouponEntity)
  @JoinColumn({ name: 'coupon_code', foreignKeyConstraintName: 'coupon_snapshots_coupon_code_fkey' })
  coupon: Relation<CouponEntity>;
  @Column('text', { name: 'batch_id' }) batchId: string;
  // By name: the batch's entity belongs to the settlement module, a layer above coupons.
  @ManyToOne('CallbackBatchEntity')
  @JoinColumn({ name: 'batch_id', foreignKeyConstraintName: 'coupon_snapshots_batch_id_fkey' })
  batch: Relation<{ batchId: string }>;
  @Column('int') status: number;
  @AmountColumn({ name: 'real_win', nullable: true }) realWin: string | null;
  @Column('boolean') applied: boolean;
  @Column('text') transition: string;
  @Column('int') generation: number;
  @Column('jsonb', { default: [] }) operations: unknown[];
  @Column('jsonb') payload: Record<string, unknown>;
  @CreatedAtColumn('received_at', { primaryKeyConstraintName: 'coupon_snapshots_pkey' }) receivedAt: Date;
}
