import { Check, Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { CreatedAtColumn } from '../../../platform/database/columns.js';

/**
 * A committed batch by `batchId`, with the SHA-256 of its raw body and the body itself (CONTRACT
 * §4, §8). `actor`: the name of the partner API key whose request applied it (a reconcile, a
 * resolution, a quarantine replay); null for SportAPI's callbacks, inbox workers and scheduled
 * reconciliation runs.
 */
@Entity('callback_batches')
@Check('callback_batches_batch_id_check', 'length(batch_id) BETWEEN 1 AND 128')
@Check('callback_batches_coupon_count_check', 'coupon_count BETWEEN 1 AND 100')
@Check('callback_batches_payload_check', '(payload IS NULL) = (payload_expired_at IS NOT NULL)')
@Index('callback_batches_payload_hash_idx', ['payloadHash'])
@Index('callback_batches_received_idx', ['receivedAt'])
export class CallbackBatchEntity {
  @PrimaryColumn('text', { name: 'batch_id', primaryKeyConstraintName: 'callback_batches_pkey' })
  batchId: string;
  @Column('char', { name: 'payload_hash', length: 64 }) payloadHash: string;
  @Column('int', { name: 'coupon_count' }) couponCount: number;
  /** The raw body; null once expired under `RETENTION_RAW_BODIES` (docs/retention.md). */
  @Column('bytea', { nullable: true }) payload: Buffer | null;
  @CreatedAtColumn('received_at') receivedAt: Date;
  @Column('text', { nullable: true }) actor: string | null;
  /** When the retention job removed the raw body (then `payload` is null). */
  @Column('timestamptz', { name: 'payload_expired_at', nullable: true }) payloadExpiredAt: Date | null;
}
