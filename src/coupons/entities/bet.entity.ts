import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/** A bet (event, selection) of a coupon by (`coupon_code`, `uuid`); `payload` keeps every field sent. */
@Entity('bets')
export class BetEntity {
  @PrimaryColumn('text', { name: 'coupon_code' }) couponCode: string;
  @PrimaryColumn('text') uuid: string;
  @Column('int') status: number;
  @Column('jsonb') payload: Record<string, unknown>;
  @Column('text', { name: 'last_batch_id' }) lastBatchId: string;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' }) updatedAt: Date;
}
