import { Check, Column, Entity, Index } from 'typeorm';
import { BigintIdColumn, CreatedAtColumn } from '../../../platform/database/columns.js';

/**
 * A bulk action (docs/api.md, "Bulk actions"): the `kind` of single action it repeats, the
 * `filter` that chose its rows, the operator's `reason`, the key that started it (`actor`) and
 * the request, the `cap` it was started with and the number of rows frozen for it (`total`, in
 * `bulk_action_items`); `status` `running` until the worker has done every row (`done`) or an
 * operator cancelled it (`cancelled`); the counts of rows done, skipped and failed so far, kept in
 * the transaction of each row.
 */
@Entity('bulk_actions')
@Check('bulk_actions_kind_check', "kind IN ('quarantine_replay', 'outbox_retry', 'outbox_skip')")
@Check('bulk_actions_status_check', "status IN ('running', 'done', 'cancelled')")
@Check('bulk_actions_cap_check', 'cap BETWEEN 1 AND 10000')
@Check('bulk_actions_counts_check', 'done_count + skipped_count + failed_count <= total')
@Index('bulk_actions_running_idx', ['id'], { where: "status = 'running'" })
export class BulkActionEntity {
  @BigintIdColumn('bulk_actions_pkey') id: string;
  @Column('text') kind: string;
  @Column('jsonb') filter: Record<string, unknown>;
  @Column('text') reason: string;
  @Column('text') actor: string;
  @Column('text', { name: 'request_id', nullable: true }) requestId: string | null;
  @Column('int') cap: number;
  @Column('int') total: number;
  @Column('text', { default: 'running' }) status: string;
  @Column('int', { name: 'done_count', default: 0 }) doneCount: number;
  @Column('int', { name: 'skipped_count', default: 0 }) skippedCount: number;
  @Column('int', { name: 'failed_count', default: 0 }) failedCount: number;
  @CreatedAtColumn() createdAt: Date;
  @Column('timestamptz', { name: 'finished_at', nullable: true }) finishedAt: Date | null;
  @Column('text', { name: 'cancelled_by', nullable: true }) cancelledBy: string | null;
}
