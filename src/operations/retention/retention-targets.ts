import type { RetentionClass } from './retention.config.js';

/**
 * A monthly-partitioned table of a data class (migration RetentionPartitions): a partition whose
 * upper bound is older than the class's cutoff is archived (when asked), detached concurrently
 * and dropped, unless it holds a protected row.
 */
export interface PartitionedTarget {
  kind: 'partitions';
  dataClass: RetentionClass;
  table: string;
  /** The partition key, `timestamptz NOT NULL`. */
  column: string;
  /**
   * SQL counting the rows of partition `$P` (an identifier, substituted) that must not go yet;
   * null when none ever are.
   */
  protectedSql: string | null;
  /** Why such a row is kept (the report's wording). */
  protectedWhy: string | null;
}

/**
 * Rows of a table that cannot be partitioned cleanly, bounded by small statements instead: a
 * row is deleted, or its raw body set to NULL, when `eligible` holds and `protectedRow` does not.
 * In the SQL: `t` is the table's alias, `$1` the cutoff (timestamptz), `$2` the partitions this
 * run drops (text[] of names, to look past rows that go with them).
 */
export interface BoundedTarget {
  kind: 'rows';
  dataClass: RetentionClass;
  /** What the report calls it, e.g. `callback_batches.payload`. */
  name: string;
  table: string;
  action: 'delete' | 'null body';
  /** Rows past the cutoff. */
  eligible: string;
  /** Rows past the cutoff that are kept; null when none are. */
  protectedRow: string | null;
  protectedWhy: string | null;
  /** Bytes the action frees per row. */
  bytes: string;
  /** The SET list of a `null body` action. */
  set?: string;
  /** For a `null body` action: the row still holds its body (for the oldest body kept). */
  holds?: string;
}

/** A target of the policy. */
export type RetentionTarget = PartitionedTarget | BoundedTarget;

/** Coupons whose snapshots and last batch must stay: flagged for review, recalculation open. */
const COUPON_IN_DOUBT = `(c.needs_review OR NOT c.generation_settled) AND (c.needs_review OR c.recalculation_open)`;

/** Not in a partition this run drops (`$2`). */
const KEPT_PARTITION = (alias: string) => `${alias}.tableoid::regclass::text <> ALL ($2::text[])`;

/** An outbox row's columns but its body and the operator's notes (what a deleted row frees besides the body). */
const OUTBOX_COLUMNS =
  't.id, t.operation_id, t.operation_key, t.account_id, t.status, t.attempts, t.last_status, t.last_error, t.created_at, t.delivered_at, t.skipped_at';

/** An outbox's finished rows (delivered or skipped) and their bodies, per destination table. */
function outboxTargets(outbox: string, attempts: string): RetentionTarget[] {
  // Two partial indexes (<outbox>_delivered_idx, <outbox>_skipped_idx) answer it.
  const finishedBefore = `((t.status = 'delivered' AND t.delivered_at < $1) OR (t.status = 'skipped' AND t.skipped_at < $1))`;
  return [
    {
      kind: 'partitions',
      dataClass: 'outbox',
      table: attempts,
      column: 'started_at',
      protectedSql: `SELECT count(*) FROM $P a JOIN ${outbox} o ON o.id = a.outbox_id WHERE o.status IN ('pending', 'parked')`,
      protectedWhy: 'attempts of pending or parked outbox rows',
    },
    {
      kind: 'rows',
      dataClass: 'raw_bodies',
      name: `${outbox}.body`,
      table: outbox,
      action: 'null body',
      eligible: `${finishedBefore} AND t.body IS NOT NULL`,
      protectedRow: null,
      protectedWhy: null,
      bytes: 'pg_column_size(t.body)',
      set: 'body = NULL',
      holds: 't.body IS NOT NULL',
    },
    {
      kind: 'rows',
      dataClass: 'outbox',
      name: outbox,
      table: outbox,
      action: 'delete',
      eligible: finishedBefore,
      protectedRow: `EXISTS (SELECT 1 FROM ${attempts} a WHERE a.outbox_id = t.id AND ${KEPT_PARTITION('a')})`,
      protectedWhy: 'attempts still kept',
      // The row without its body (counted under raw_bodies), unchanged when the body goes first.
      bytes: `pg_column_size(ROW(${OUTBOX_COLUMNS}))`,
    },
  ];
}

/**
 * Every target, in the order a run applies them: partitions first (what references a batch or an
 * outbox row goes before it), then the rows they free. Kept forever, so in no target: the ledger
 * (`financial_operations`, `ledger_entries`, `accounts`, `account_adjustments`), `coupons` and
 * `bets`, `coupon_resolutions`, `operator_actions`, unreplayed `quarantined_bodies`, pending or
 * quarantined inbox rows, pending or parked outbox rows (docs/retention.md).
 */
export const RETENTION_TARGETS: readonly RetentionTarget[] = [
  {
    kind: 'partitions',
    dataClass: 'snapshots',
    table: 'coupon_snapshots',
    column: 'received_at',
    protectedSql: `SELECT count(*) FROM $P s JOIN coupons c ON c.coupon_code = s.coupon_code
                    WHERE (${COUPON_IN_DOUBT}) OR (c.account_id IS NULL AND s.operations <> '[]'::jsonb)`,
    protectedWhy:
      'snapshots of coupons that need review, whose recalculation is open, or unregistered with decided operations',
  },
  {
    kind: 'partitions',
    dataClass: 'delivery_attempts',
    table: 'delivery_attempts',
    column: 'received_at',
    protectedSql: null,
    protectedWhy: null,
  },
  ...outboxTargets('wallet_outbox', 'wallet_delivery_attempts'),
  ...outboxTargets('event_outbox', 'event_delivery_attempts'),
  {
    kind: 'rows',
    dataClass: 'raw_bodies',
    name: 'callback_batches.payload',
    table: 'callback_batches',
    action: 'null body',
    eligible: `t.received_at < $1 AND t.payload IS NOT NULL`,
    protectedRow: `EXISTS (SELECT 1 FROM callback_inbox i WHERE i.batch_id = t.batch_id AND i.status <> 'done')
                   OR EXISTS (SELECT 1 FROM quarantined_bodies q WHERE q.batch_id = t.batch_id AND q.replayed_at IS NULL)`,
    protectedWhy: 'bodies of batches pending in the inbox or quarantined and not replayed',
    bytes: 'pg_column_size(t.payload)',
    set: 'payload = NULL, payload_expired_at = now()',
    holds: 't.payload IS NOT NULL',
  },
  {
    kind: 'rows',
    dataClass: 'raw_bodies',
    name: 'callback_inbox',
    table: 'callback_inbox',
    action: 'delete',
    eligible: `t.status = 'done' AND t.finished_at < $1`,
    protectedRow: `EXISTS (SELECT 1 FROM quarantined_bodies q WHERE q.inbox_id = t.id)`,
    protectedWhy: 'inbox rows a quarantined body refers to',
    bytes: 'pg_column_size(t.*)',
  },
  {
    kind: 'rows',
    dataClass: 'batch_ids',
    name: 'callback_batches',
    table: 'callback_batches',
    action: 'delete',
    eligible: `t.received_at < $1`,
    protectedRow: `EXISTS (SELECT 1 FROM coupon_snapshots s WHERE s.batch_id = t.batch_id AND ${KEPT_PARTITION('s')})
                   OR EXISTS (SELECT 1 FROM coupon_resolutions r WHERE r.batch_id = t.batch_id)
                   OR EXISTS (SELECT 1 FROM callback_inbox i WHERE i.batch_id = t.batch_id AND i.status <> 'done')
                   OR EXISTS (SELECT 1 FROM quarantined_bodies q WHERE q.batch_id = t.batch_id AND q.replayed_at IS NULL)
                   OR EXISTS (SELECT 1 FROM coupons c WHERE c.last_batch_id = t.batch_id AND ${COUPON_IN_DOUBT})`,
    protectedWhy:
      'batches with kept snapshots, resolutions, pending inbox rows, unreplayed quarantined bodies, or the last batch of a coupon in doubt',
    // The id and hash row without its body (counted under raw_bodies), unchanged when the body goes first.
    bytes: 'pg_column_size(ROW(t.batch_id, t.payload_hash, t.coupon_count, t.received_at, t.actor))',
  },
];
