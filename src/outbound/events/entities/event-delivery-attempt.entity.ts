import { Check, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import type { Relation } from 'typeorm';
import { BigintIdColumn } from '../../../platform/database/columns.js';
import { DeliveryAttemptColumns } from '../../outbox/entities/outbox-columns.js';
import { EventOutboxEntryEntity } from './event-outbox-entry.entity.js';

/**
 * One publish attempt of a settlement event: when, with which request id, through which publisher
 * (`connector`), how long, the outcome and an excerpt of the broker's answer (at most 500
 * characters). Append-only history shown by `GET /events/{publisher}/outbox/{id}`.
 */
@Entity('event_delivery_attempts')
@Check(
  'event_delivery_attempts_outcome_check',
  "outcome IN ('delivered', 'retry', 'refused', 'conflict', 'unauthorized')",
)
@Check('event_delivery_attempts_duration_check', 'duration_ms >= 0')
// One line per row and request (a record run again adds none: ON CONFLICT); also the row's history.
@Index('event_delivery_attempts_outbox_request_key', ['outboxId', 'requestId', 'startedAt'], { unique: true })
@Index('event_delivery_attempts_request_idx', ['requestId'])
export class EventDeliveryAttemptEntity extends DeliveryAttemptColumns {
  @BigintIdColumn('event_delivery_attempts_pkey') id: string;
  @ManyToOne(() => EventOutboxEntryEntity)
  @JoinColumn({ name: 'outbox_id', foreignKeyConstraintName: 'event_delivery_attempts_outbox_id_fkey' })
  outbox: Relation<EventOutboxEntryEntity>;
  @PrimaryColumn('timestamptz', {
    name: 'started_at',
    primaryKeyConstraintName: 'event_delivery_attempts_pkey',
  })
  startedAt: Date;
}
