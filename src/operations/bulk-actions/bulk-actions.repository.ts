import { Injectable } from '@nestjs/common';
import { Tx } from '../../platform/database/transaction.js';
import type { BulkFilter, BulkKind } from './bulk-actions.types.js';

/** A stored bulk action (bigint ids as strings). */
export interface BulkActionRow {
  id: string;
  kind: BulkKind;
  filter: BulkFilter;
  reason: string;
  actor: string;
  requestId: string | null;
  cap: number;
  total: number;
  status: 'running' | 'done' | 'cancelled';
  doneCount: number;
  skippedCount: number;
  failedCount: number;
  createdAt: Date;
  finishedAt: Date | null;
  cancelledBy: string | null;
}

/** A row of a bulk action. */
export interface BulkItemRow {
  seq: number;
  targetId: string;
  groupKeys: string[] | null;
  outcome: 'done' | 'skipped' | 'failed' | null;
  code: string | null;
  message: string | null;
  attempts: number;
  finishedAt: Date | null;
}

/** Whether the row being counted is a running action's last (SET reads the row before the update). */
const LAST_ROW = `status = 'running' AND done_count + skipped_count + failed_count + 1 >= total`;

const ACTION_COLUMNS = `id::text, kind, filter, reason, actor, request_id AS "requestId", cap, total, status,
  done_count AS "doneCount", skipped_count AS "skippedCount", failed_count AS "failedCount",
  created_at AS "createdAt", finished_at AS "finishedAt", cancelled_by AS "cancelledBy"`;

const ITEM_COLUMNS = `seq, target_id::text AS "targetId", group_keys AS "groupKeys", outcome, code, message, attempts,
  finished_at AS "finishedAt"`;

/** The target rows of a filter, in arrival order: `id` and the keys their order is kept per. */
function targets(kind: BulkKind, f: BulkFilter): { text: string; values: unknown[] } {
  const values: unknown[] = [];
  const param = (v: unknown) => `$${values.push(v)}`;
  if (kind === 'quarantine_replay') {
    const where = [f.notReplayed === false ? 'true' : 'replayed_at IS NULL'];
    if (f.quarantineReason !== undefined) where.push(`reason = ${param(f.quarantineReason)}`);
    if (f.batchIdPrefix !== undefined) where.push(`batch_id ^@ ${param(f.batchIdPrefix)}`);
    if (f.receivedFrom !== undefined) where.push(`received_at >= ${param(f.receivedFrom)}::timestamptz`);
    if (f.receivedTo !== undefined) where.push(`received_at < ${param(f.receivedTo)}::timestamptz`);
    return {
      text: `SELECT id, NULL::text[] AS keys FROM quarantined_bodies WHERE ${where.join(' AND ')}`,
      values,
    };
  }
  const where = [`status = 'parked'`];
  if (f.parkedReason !== undefined) where.push(`parked_reason = ${param(f.parkedReason)}`);
  if (f.accountId !== undefined) where.push(`account_id = ${param(f.accountId)}`);
  if (f.parkedFrom !== undefined) where.push(`parked_at >= ${param(f.parkedFrom)}::timestamptz`);
  if (f.parkedTo !== undefined) where.push(`parked_at < ${param(f.parkedTo)}::timestamptz`);
  return {
    text: `SELECT id, ARRAY[account_id] AS keys FROM wallet_outbox WHERE ${where.join(' AND ')}`,
    values,
  };
}

/** The SQL of `bulk_actions` and `bulk_action_items` (docs/api.md#bulk-actions). */
@Injectable()
export class BulkActionsRepository {
  /** How many rows `filter` matches now, and the first `sample` ids, touching nothing. */
  async plan(
    tx: Tx,
    kind: BulkKind,
    filter: BulkFilter,
    sample: number,
  ): Promise<{ matched: number; ids: string[] }> {
    const t = targets(kind, filter);
    const { rows } = await tx.query<{ matched: number; ids: string[] | null }>(
      `WITH m AS (${t.text})
       SELECT (SELECT count(*)::int FROM m) AS matched,
              (SELECT array_agg(id::text ORDER BY id) FROM (SELECT id FROM m ORDER BY id LIMIT ${sample}) s) AS ids`,
      t.values,
    );
    return { matched: rows[0].matched, ids: rows[0].ids ?? [] };
  }

  /**
   * Creates a bulk action and freezes its rows: the first `cap` rows `filter` matches, in arrival
   * order (`seq` 1, 2, …); with no row it is done at once.
   */
  async create(
    tx: Tx,
    a: Pick<BulkActionRow, 'kind' | 'filter' | 'reason' | 'actor' | 'requestId' | 'cap'>,
  ): Promise<BulkActionRow> {
    const t = targets(a.kind, a.filter);
    const n = t.values.length;
    const { rows } = await tx.query<BulkActionRow>(
      `WITH picked AS MATERIALIZED (
         SELECT id, keys, row_number() OVER (ORDER BY id)::int AS seq FROM (${t.text} ORDER BY id LIMIT $${n + 6}) m
       ), action AS (
         INSERT INTO bulk_actions (kind, filter, reason, actor, request_id, cap, total, status, finished_at)
         SELECT $${n + 1}, $${n + 2}, $${n + 3}, $${n + 4}, $${n + 5}, $${n + 6}, c.total,
                CASE WHEN c.total = 0 THEN 'done' ELSE 'running' END, CASE WHEN c.total = 0 THEN now() END
           FROM (SELECT count(*)::int AS total FROM picked) c
         RETURNING *
       ), items AS (
         INSERT INTO bulk_action_items (bulk_action_id, seq, target_id, group_keys)
         SELECT action.id, picked.seq, picked.id, picked.keys FROM action, picked
       )
       SELECT ${ACTION_COLUMNS} FROM action`,
      [...t.values, a.kind, JSON.stringify(a.filter), a.reason, a.actor, a.requestId, a.cap],
    );
    return rows[0];
  }

  async find(tx: Tx, id: string, lock = false): Promise<BulkActionRow | undefined> {
    const { rows } = await tx.query<BulkActionRow>(
      `SELECT ${ACTION_COLUMNS} FROM bulk_actions WHERE id = $1${lock ? ' FOR UPDATE' : ''}`,
      [id],
    );
    return rows[0];
  }

  /** Newest first, at most `limit`, with ids below `before`; of `status` when given. */
  async list(
    tx: Tx,
    status: string | undefined,
    before: string | undefined,
    limit: number,
  ): Promise<BulkActionRow[]> {
    const { rows } = await tx.query<BulkActionRow>(
      `SELECT ${ACTION_COLUMNS} FROM bulk_actions
        WHERE ($1::text IS NULL OR status = $1) AND ($2::bigint IS NULL OR id < $2)
        ORDER BY bulk_actions.id DESC LIMIT $3`,
      [status ?? null, before ?? null, limit],
    );
    return rows;
  }

  /** Rows in arrival order after `afterSeq`, at most `limit`, of `outcome` when given (`pending`: not yet run). */
  async items(
    tx: Tx,
    id: string,
    outcome: string | undefined,
    afterSeq: number,
    limit: number,
  ): Promise<BulkItemRow[]> {
    const { rows } = await tx.query<BulkItemRow>(
      `SELECT ${ITEM_COLUMNS} FROM bulk_action_items
        WHERE bulk_action_id = $1 AND seq > $2
          AND (CASE $3::text WHEN 'pending' THEN outcome IS NULL WHEN '' THEN true ELSE outcome = $3 END)
        ORDER BY seq LIMIT $4`,
      [id, afterSeq, outcome ?? '', limit],
    );
    return rows;
  }

  /** The oldest running bulk action after `afterId`, or undefined. */
  async nextRunning(tx: Tx, afterId: string): Promise<BulkActionRow | undefined> {
    const { rows } = await tx.query<BulkActionRow>(
      `SELECT ${ACTION_COLUMNS} FROM bulk_actions WHERE status = 'running' AND id > $1 ORDER BY bulk_actions.id LIMIT 1`,
      [afterId],
    );
    return rows[0];
  }

  /**
   * The start of a row's transaction: locks the bulk action (a cancel waits for the row in hand)
   * and reads its status and the row's outcome.
   */
  async lockRow(tx: Tx, id: string, seq: number): Promise<{ status: string; outcome: string | null }> {
    const { rows } = await tx.query<{ status: string; outcome: string | null }>(
      `SELECT b.status, i.outcome FROM bulk_actions b JOIN bulk_action_items i ON i.bulk_action_id = b.id
        WHERE b.id = $1 AND i.seq = $2 FOR UPDATE OF b`,
      [id, seq],
    );
    return rows[0];
  }

  /**
   * Records a row's outcome (once: only while it has none) and counts it on the bulk action; the
   * last row's outcome also ends a running action as `done`, in the same statement, so no reader
   * sees every row finished while the action still runs. @returns whether it was recorded.
   */
  async finishRow(
    tx: Tx,
    id: string,
    seq: number,
    r: {
      outcome: 'done' | 'skipped' | 'failed';
      code: string | null;
      message: string | null;
      groupKeys: string[] | null;
    },
  ): Promise<boolean> {
    const column = { done: 'done_count', skipped: 'skipped_count', failed: 'failed_count' }[r.outcome];
    const { rows } = await tx.query<{ counted: boolean }>(
      `WITH row AS (
         UPDATE bulk_action_items SET outcome = $3, code = $4, message = $5,
                group_keys = coalesce($6::text[], group_keys), finished_at = now()
          WHERE bulk_action_id = $1 AND seq = $2 AND outcome IS NULL RETURNING seq
       )
       UPDATE bulk_actions SET ${column} = ${column} + 1,
              status = CASE WHEN ${LAST_ROW} THEN 'done' ELSE status END,
              finished_at = CASE WHEN ${LAST_ROW} THEN now() ELSE finished_at END
        WHERE id = $1 AND EXISTS (SELECT 1 FROM row)
       RETURNING true AS counted`,
      [id, seq, r.outcome, r.code, r.message, r.groupKeys],
    );
    return rows.length > 0;
  }

  /** Counts a failed try of a row (a transient failure); @returns the tries so far. */
  async countAttempt(tx: Tx, id: string, seq: number): Promise<number> {
    const { rows } = await tx.query<{ attempts: number }>(
      `UPDATE bulk_action_items SET attempts = attempts + 1 WHERE bulk_action_id = $1 AND seq = $2 RETURNING attempts`,
      [id, seq],
    );
    return rows[0]?.attempts ?? 0;
  }

  /** Ends a running bulk action: `done` (no row left) or `cancelled` (by `actor`). */
  async end(
    tx: Tx,
    id: string,
    status: 'done' | 'cancelled',
    actor: string | null,
  ): Promise<BulkActionRow | undefined> {
    const { rows } = await tx.query<BulkActionRow>(
      `UPDATE bulk_actions SET status = $2, finished_at = now(), cancelled_by = $3
        WHERE id = $1 AND status = 'running' RETURNING ${ACTION_COLUMNS}`,
      [id, status, actor],
    );
    return rows[0];
  }

  /** The keys of the rows that failed or were skipped, with the first such row of each key. */
  async blockedKeys(tx: Tx, id: string): Promise<Map<string, number>> {
    const { rows } = await tx.query<{ key: string; seq: number }>(
      `SELECT k AS key, min(seq) AS seq FROM bulk_action_items, unnest(group_keys) AS k
        WHERE bulk_action_id = $1 AND outcome IN ('failed', 'skipped') GROUP BY k`,
      [id],
    );
    return new Map(rows.map((r) => [r.key, r.seq]));
  }
}
