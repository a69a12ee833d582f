import { Check, Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import type { Relation } from 'typeorm';
import { BulkActionEntity } from './bulk-action.entity.js';

/**
 * One row a bulk action touches, frozen when it started: `seq` is the arrival order (the target
 * rows' id order), `target_id` the quarantine entry or outbox row. `group_keys` are what the order
 * is kept per (the coupons of a quarantined body, the account of an outbox row); `outcome` is null
 * until the row is done, skipped or failed, with the answer's `code` and `message` (why), written
 * in the transaction of the row's action.
 */
@Entity('bulk_action_items')
@Check('bulk_action_items_outcome_check', "outcome IN ('done', 'skipped', 'failed')")
@Check('bulk_action_items_seq_check', 'seq >= 1')
@Index('bulk_action_items_pending_idx', ['bulkActionId', 'seq'], { where: 'outcome IS NULL' })
export class BulkActionItemEntity {
  @PrimaryColumn('bigint', { name: 'bulk_action_id', primaryKeyConstraintName: 'bulk_action_items_pkey' })
  bulkActionId: string;
  @ManyToOne(() => BulkActionEntity)
  @JoinColumn({ name: 'bulk_action_id', foreignKeyConstraintName: 'bulk_action_items_bulk_action_id_fkey' })
  bulkAction: Relation<BulkActionEntity>;
  @PrimaryColumn('int', { primaryKeyConstraintName: 'bulk_action_items_pkey' }) seq: number;
  @Column('bigint', { name: 'target_id' }) targetId: string;
  @Column('text', { name: 'group_keys', array: true, nullable: true }) groupKeys: string[] | null;
  @Column('text', { nullable: true }) outcome: string | null;
  @Column('text', { nullable: true }) code: string | null;
  @Column('text', { nullable: true }) message: string | null;
  @Column('int', { default: 0 }) attempts: number;
  @Column('timestamptz', { name: 'finished_at', nullable: true }) finishedAt: Date | null;
}
