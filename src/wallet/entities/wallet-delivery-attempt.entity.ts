import {
  Check,
  Column,
  Entity,
  Index,
  JoinColumn,
  ManyToOne,
  PrimaryColumn,
  PrimaryGeneratedColumn,
} from 'typeorm';
import type { Relation } from 'typeorm';
import type { AttemptOutcome } from '../../outbox/outbox.types.js';
import { WalletOutboxEntryEntity } from './wallet-outbox-entry.entity.js';

/**
 * One delivery attempt of an outbox row to the wallet: when, with which request id, how long, the
 * outcome, the wallet's HTTP status and an excerpt of its answer (at most 500 characters, never a
 * secret). Append-only history shown by `GET /wallet/outbox/{id}`.
 */
@Entity('wallet_delivery_attempts')
@Check(
  'wallet_delivery_attempts_outcome_check',
  "outcome IN ('delivered', 'retry', 'refused', 'conflict', 'unauthorized')",
)
@Check('wallet_delivery_attempts_duration_check', 'duration_ms >= 0')
// One line per row and request (a record run again adds none: ON CONFLICT); also the row's history.
@Index('wallet_delivery_attempts_outbox_request_key', ['outboxId', 'requestId', 'startedAt'], {
  unique: true,
})
@Index('wallet_delivery_attempts_request_idx', ['requestId'])
export class WalletDeliveryAttemptEntity {
  @PrimaryGeneratedColumn({ type: 'bigint', primaryKeyConstraintName: 'wallet_delivery_attempts_pkey' })
  id: string;
  @Column('bigint', { name: 'outbox_id' }) outboxId: string;
  @ManyToOne(() => WalletOutboxEntryEntity)
  @JoinColumn({ name: 'outbox_id', foreignKeyConstraintName: 'wallet_delivery_attempts_outbox_id_fkey' })
  outbox: Relation<WalletOutboxEntryEntity>;
  @Column('int') attempt: number;
  @Column('text', { name: 'request_id' }) requestId: string;
  @Column('text') connector: string;
  @PrimaryColumn('timestamptz', {
    name: 'started_at',
    primaryKeyConstraintName: 'wallet_delivery_attempts_pkey',
  })
  startedAt: Date;
  @Column('int', { name: 'duration_ms' }) durationMs: number;
  @Column('text') outcome: AttemptOutcome;
  @Column('int', { name: 'http_status', nullable: true }) httpStatus: number | null;
  @Column('text', { nullable: true }) answer: string | null;
  /** The attempt's OpenTelemetry trace id (32 hex) when tracing was on; null otherwise. */
  @Column('char', { name: 'trace_id', length: 32, nullable: true }) traceId: string | null;
}
