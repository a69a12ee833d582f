import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

/**
 * One coupon's state in one batch, kept forever (CONTRACT §6 "every snapshot is stored"), with the
 * transition decided for it, whether it was applied, and the financial operations it decided.
 */
@Entity('coupon_snapshots')
export class CouponSnapshotEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: string;
  @Column('text', { name: 'coupon_code' }) couponCode: string;
  @Column('text', { name: 'batch_id' }) batchId: string;
  @Column('int') status: number;
  @Column('numeric', { name: 'real_win', precision: 20, scale: 2, nullable: true }) realWin: string | null;
  @Column('boolean') applied: boolean;
  @Column('text') transition: string;
  @Column('int') generation: number;
  @Column('jsonb') operations: unknown[];
  @Column('jsonb') payload: Record<string, unknown>;
  @CreateDateColumn({ name: 'received_at', type: 'timestamptz' }) receivedAt: Date;
}
