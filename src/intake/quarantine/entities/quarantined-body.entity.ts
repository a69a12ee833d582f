import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import type { Relation } from 'typeorm';
import { BigintIdColumn, CreatedAtColumn } from '../../../platform/database/columns.js';
import { InboxEntryEntity } from '../../inbox/entities/inbox-entry.entity.js';

/**
 * A signed body rejected with 400 or 409, kept verbatim with the reason for a later replay (CONTRACT
 * §8); `replayed_by` is the name of the partner API key of the last replay.
 */
@Entity('quarantined_bodies')
@Index('quarantined_bodies_batch_idx', ['batchId'])
@Index('quarantined_bodies_inbox_idx', ['inboxId'], { where: 'inbox_id IS NOT NULL' })
@Index('quarantined_bodies_unreplayed_idx', ['id'], { where: 'replayed_at IS NULL' })
export class QuarantinedBodyEntity {
  @BigintIdColumn('quarantined_bodies_pkey') id: string;
  @Column('text', { name: 'batch_id', nullable: true }) batchId: string | null;
  @Column('text') reason: string;
  @Column('jsonb', { nullable: true }) details: unknown;
  @Column('int', { name: 'http_status' }) httpStatus: number;
  @Column('bytea') body: Buffer;
  @Column('text', { name: 'content_type', nullable: true }) contentType: string | null;
  @Column('char', { name: 'payload_hash', length: 64 }) payloadHash: string;
  @CreatedAtColumn('received_at') receivedAt: Date;
  @Column('timestamptz', { name: 'replayed_at', nullable: true }) replayedAt: Date | null;
  @Column('text', { name: 'replay_outcome', nullable: true }) replayOutcome: string | null;
  @Column('int', { name: 'replay_count', default: 0 }) replayCount: number;
  /** The inbox row whose application failed `INBOX_MAX_ATTEMPTS` times, when it came from there. */
  @Column('bigint', { name: 'inbox_id', nullable: true }) inboxId: string | null;
  @ManyToOne(() => InboxEntryEntity)
  @JoinColumn({ name: 'inbox_id', foreignKeyConstraintName: 'quarantined_bodies_inbox_id_fkey' })
  inbox: Relation<InboxEntryEntity> | null;
  @Column('text', { name: 'replayed_by', nullable: true }) replayedBy: string | null;
}
