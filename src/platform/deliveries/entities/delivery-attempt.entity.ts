import { Check, Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { BigintIdColumn } from '../../database/columns.js';
import { DeliveryOutcome } from '../delivery.types.js';

/**
 * One HTTP delivery of a batch and how it was answered; `durationMs` in milliseconds. `actor`: the
 * name of the partner API key of a quarantine replay; null for SportAPI's deliveries. Partitioned by
 * month of `received_at` (in the primary key), kept for `RETENTION_DELIVERY_ATTEMPTS` (docs/retention.md).
 */
@Entity('delivery_attempts')
@Check(
  'delivery_attempts_outcome_check',
  "outcome IN ('processed', 'accepted', 'duplicate', 'conflict', 'rejected', 'unauthorized', 'failed')",
)
@Index('delivery_attempts_batch_idx', ['batchId'])
@Index('delivery_attempts_received_idx', ['receivedAt'])
@Index('delivery_attempts_request_idx', ['requestId'])
export class DeliveryAttemptEntity {
  @BigintIdColumn('delivery_attempts_pkey') id: string;
  @Column('text', { name: 'batch_id', nullable: true }) batchId: string | null;
  @Column('text', { name: 'request_id', nullable: true }) requestId: string | null;
  @PrimaryColumn('timestamptz', { name: 'received_at', primaryKeyConstraintName: 'delivery_attempts_pkey' })
  receivedAt: Date;
  @Column('text') outcome: DeliveryOutcome;
  @Column('int', { name: 'http_status' }) httpStatus: number;
  @Column('text', { name: 'error_code', nullable: true }) errorCode: string | null;
  @Column('int', { name: 'coupon_count', nullable: true }) couponCount: number | null;
  @Column('int', { name: 'duration_ms' }) durationMs: number;
  @Column('char', { name: 'payload_hash', length: 64, nullable: true }) payloadHash: string | null;
  @Column('text', { nullable: true }) actor: string | null;
  /** The delivery's OpenTelemetry trace id (32 hex) when tracing was on (docs/operating.md, "Traces"). */
  @Column('char', { name: 'trace_id', length: 32, nullable: true }) traceId: string | null;
}
