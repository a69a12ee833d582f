import { Check, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import type { Relation } from 'typeorm';
import { BigintIdColumn } from '../../../platform/database/columns.js';
import { DeliveryAttemptColumns } from '../../outbox/entities/outbox-columns.js';
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
export class WalletDeliveryAttemptEntity extends DeliveryAttemptColumns {
  @BigintIdColumn('wallet_delivery_attempts_pkey') id: string;
  @ManyToOne(() => WalletOutboxEntryEntity)
  @JoinColumn({ name: 'outbox_id', foreignKeyConstraintName: 'wallet_delivery_attempts_outbox_id_fkey' })
  outbox: Relation<WalletOutboxEntryEntity>;
  @PrimaryColumn('timestamptz', {
    name: 'started_at',
    primaryKeyConstraintName: 'wallet_delivery_attempts_pkey',
  })
  startedAt: Date;
}
