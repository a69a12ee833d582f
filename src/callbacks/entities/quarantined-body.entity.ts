import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** A signed body rejected with 400 or 409, kept verbatim with the reason for a later replay (CONTRACT §8). */
@Entity('quarantined_bodies')
export class QuarantinedBodyEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: string;
  @Column('text', { name: 'batch_id', nullable: true }) batchId: string | null;
  @Column('text') reason: string;
  @Column('jsonb', { nullable: true }) details: unknown;
  @Column('int', { name: 'http_status' }) httpStatus: number;
  @Column('bytea') body: Buffer;
  @Column('text', { name: 'content_type', nullable: true }) contentType: string | null;
  @Column('char', { name: 'payload_hash', length: 64 }) payloadHash: string;
  @CreateDateColumn({ name: 'received_at', type: 'timestamptz' }) receivedAt: Date;
  @Column('timestamptz', { name: 'replayed_at', nullable: true }) replayedAt: Date | null;
  @Column('text', { name: 'replay_outcome', nullable: true }) replayOutcome: string | null;
  @Column('int', { name: 'replay_count' }) replayCount: number;
  /** The inbox row whose application failed `INBOX_MAX_ATTEMPTS` times, when it came from there. */
  @Column('bigint', { name: 'inbox_id', nullable: true }) inboxId: string | null;
}
