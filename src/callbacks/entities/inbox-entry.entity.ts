import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** State of an inbox row: waiting to be applied, applied (or found a duplicate), or quarantined. */
export type InboxStatus = 'pending' | 'done' | 'quarantined';

/**
 * A batch accepted in inbox mode (`CALLBACK_MODE=inbox`): verified, validated and committed with
 * its raw bytes before the 200 (CONTRACT §4, §5); a worker applies it later. `id` is the arrival
 * order; `couponCodes` lets a worker hold back a row while an earlier pending row shares a coupon.
 */
@Entity('callback_inbox')
export class InboxEntryEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: string;
  @Column('text', { name: 'batch_id' }) batchId: string;
  @Column('char', { name: 'payload_hash', length: 64 }) payloadHash: string;
  @Column('int', { name: 'coupon_count' }) couponCount: number;
  @Column('text', { name: 'coupon_codes', array: true }) couponCodes: string[];
  @Column('bytea') payload: Buffer;
  @Column('text', { name: 'request_id', nullable: true }) requestId: string | null;
  @Column('text') status: InboxStatus;
  @Column('int') attempts: number;
  @Column('timestamptz', { name: 'next_attempt_at' }) nextAttemptAt: Date;
  @Column('text', { name: 'last_error', nullable: true }) lastError: string | null;
  @Column('text', { nullable: true }) outcome: string | null;
  @Column('timestamptz', { name: 'received_at' }) receivedAt: Date;
  @Column('timestamptz', { name: 'finished_at', nullable: true }) finishedAt: Date | null;
}
