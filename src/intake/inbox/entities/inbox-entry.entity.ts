import { Check, Column, Entity, Index, Unique } from 'typeorm';
import { BigintIdColumn, CreatedAtColumn } from '../../../platform/database/columns.js';
import type { InboxStatus } from '../inbox.types.js';

/**
 * A batch accepted in inbox mode (`CALLBACK_MODE=inbox`): verified, validated and committed with
 * its raw bytes before the 200 (CONTRACT §4, §5); a worker applies it later. `id` is the arrival
 * order; `couponCodes` are the batch's coupons, copied to `callback_inbox_pending_coupons` while the
 * row is pending so a worker can hold it back while an earlier pending row shares a coupon.
 */
@Entity('callback_inbox')
@Unique('callback_inbox_batch_unique', ['batchId'])
@Check('callback_inbox_batch_id_check', 'length(batch_id) BETWEEN 1 AND 128')
@Check('callback_inbox_coupon_count_check', 'coupon_count BETWEEN 1 AND 100')
@Check('callback_inbox_status_check', "status IN ('pending', 'done', 'quarantined')")
@Check('callback_inbox_attempts_check', 'attempts >= 0')
@Check('callback_inbox_outcome_check', "outcome IN ('processed', 'duplicate', 'conflict', 'failed')")
@Index('callback_inbox_pending_idx', ['id'], { where: "status = 'pending'" })
// The retention policy finds applied rows by age (docs/retention.md).
@Index('callback_inbox_done_idx', ['finishedAt'], { where: "status = 'done'" })
export class InboxEntryEntity {
  @BigintIdColumn('callback_inbox_pkey') id: string;
  @Column('text', { name: 'batch_id' }) batchId: string;
  @Column('char', { name: 'payload_hash', length: 64 }) payloadHash: string;
  @Column('int', { name: 'coupon_count' }) couponCount: number;
  @Column('text', { name: 'coupon_codes', array: true }) couponCodes: string[];
  @Column('bytea') payload: Buffer;
  @Column('text', { name: 'request_id', nullable: true }) requestId: string | null;
  /** W3C `traceparent` of the delivery that accepted it, when tracing was on: its apply joins that trace. */
  @Column('text', { nullable: true }) traceparent: string | null;
  @Column('text', { default: 'pending' }) status: InboxStatus;
  @Column('int', { default: 0 }) attempts: number;
  @Column('timestamptz', { name: 'next_attempt_at', default: () => 'now()' }) nextAttemptAt: Date;
  @Column('text', { name: 'last_error', nullable: true }) lastError: string | null;
  @Column('text', { nullable: true }) outcome: string | null;
  @CreatedAtColumn('received_at') receivedAt: Date;
  @Column('timestamptz', { name: 'finished_at', nullable: true }) finishedAt: Date | null;
}
