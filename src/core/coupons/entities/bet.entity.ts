import { Check, Index, Column, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import type { Relation } from 'typeorm';
import { CreatedAtColumn, UpdatedAtColumn } from '../../../platform/database/columns.js';
import { CouponEntity } from './coupon.entity.js';

/** A bet (event, selection) of a coupon by (`coupon_code`, `uuid`); `payload` keeps every field sent. */
@Entity('bets')
@Check('bets_uuid_check', 'length(uuid) BETWEEN 1 AND 64')
@Index('bets_uuid_idx', ['uuid'])
export class BetEntity {
  @PrimaryColumn('text', { name: 'coupon_code', primaryKeyConstraintName: 'bets_pkey' }) couponCode: string;
  @ManyToOne(() => CouponEntity)
  @JoinColumn({ name: 'coupon_code', foreignKeyConstraintName: 'bets_coupon_code_fkey' })
  coupon: Relation<CouponEntity>;
  @PrimaryColumn('text', { primaryKeyConstraintName: 'bets_pkey' }) uuid: string;
  @Column('int') status: number;
  @Column('jsonb') payload: Record<string, unknown>;
  @Column('text', { name: 'last_batch_id' }) lastBatchId: string;
  @CreatedAtColumn() createdAt: Date;
  @UpdatedAtColumn() updatedAt: Date;
}
