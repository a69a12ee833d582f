import { Check, Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * Delivery attempts received in one closed minute, by outcome (the outcomes of
 * `delivery_attempts`), written by the overview's rollup job (docs/api.md, "Overview") so that the
 * overview never counts a day of raw attempts per request. A row per minute since the first run,
 * zero rows included: the newest row says how far the rollup has come.
 */
@Entity('delivery_minutes')
@Check(
  'delivery_minutes_counts_check',
  'processed >= 0 AND accepted >= 0 AND duplicate >= 0 AND conflict >= 0 AND rejected >= 0 AND unauthorized >= 0 AND failed >= 0',
)
export class DeliveryMinuteEntity {
  @PrimaryColumn('timestamptz', { primaryKeyConstraintName: 'delivery_minutes_pkey' }) minute: Date;
  @Column('int', { default: 0 }) processed: number;
  @Column('int', { default: 0 }) accepted: number;
  @Column('int', { default: 0 }) duplicate: number;
  @Column('int', { default: 0 }) conflict: number;
  @Column('int', { default: 0 }) rejected: number;
  @Column('int', { default: 0 }) unauthorized: number;
  @Column('int', { default: 0 }) failed: number;
}
