import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A publisher's shared state (one row per publisher, from its first pause on; none: not paused):
 * delivery paused (by an operator, or after an unauthorized answer) with why, when and by whom
 * (null: the receiver itself). Every replica's workers read it before claiming.
 */
@Entity('event_outbox_state')
export class EventOutboxStateEntity {
  @PrimaryColumn('text', { primaryKeyConstraintName: 'event_outbox_state_pkey' }) publisher: string;
  @Column('boolean', { default: false }) paused: boolean;
  @Column('text', { nullable: true }) reason: string | null;
  @Column('timestamptz', { name: 'changed_at', default: () => 'now()' }) changedAt: Date;
  @Column('text', { name: 'changed_by', nullable: true }) changedBy: string | null;
}
