import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** A committed batch by `batchId`, with the SHA-256 of its raw body and the body itself (CONTRACT §4, §8). */
@Entity('callback_batches')
export class CallbackBatchEntity {
  @PrimaryColumn('text', { name: 'batch_id' }) batchId: string;
  @Column('char', { name: 'payload_hash', length: 64 }) payloadHash: string;
  @Column('int', { name: 'coupon_count' }) couponCount: number;
  @Column('bytea') payload: Buffer;
  @CreateDateColumn({ name: 'received_at', type: 'timestamptz' }) receivedAt: Date;
}
