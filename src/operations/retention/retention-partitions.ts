import type { SqlQueryable } from '../../platform/database/sql-queryable.js';
import { RETENTION_TARGETS } from './retention-targets.js';
import type { PartitionedTarget } from './retention-targets.js';

// The monthly partitions of the retention policy: the catalog's view of them, their creation
// ahead of time, and their detach and drop under locks no callback waits behind
// (docs/retention.md, "Time partitions"). The engine (retention-engine.ts) decides which go.

/** A monthly partition as the catalog describes it; times in UTC, `from` null for MINVALUE. */
export interface PartitionInfo {
  table: string;
  name: string;
  from: Date | null;
  to: Date;
  bytes: number;
  /** PostgreSQL's estimate (`reltuples`), -1 when never analysed. */
  estimatedRows: number;
  detachPending: boolean;
}

/** Milliseconds a DETACH or DROP waits for its lock before it gives up and tries again. */
const DDL_LOCK_TIMEOUT_MS = 100;
/** Tries of one DETACH or DROP under {@link DDL_LOCK_TIMEOUT_MS}. */
const DDL_TRIES = 100;

/**
 * Runs one DDL statement under `lock_timeout` {@link DDL_LOCK_TIMEOUT_MS}, tried again (backing
 * off) while it times out on its lock (55P03), at most {@link DDL_TRIES} times: the callback's
 * statements queued behind its lock request wait no longer than that.
 */
async function shortLockDdl(db: SqlQueryable, sql: string): Promise<void> {
  await db.query(`SET lock_timeout = ${DDL_LOCK_TIMEOUT_MS}`);
  try {
    for (let n = 1; ; n++) {
      try {
        await db.query(sql);
        return;
      } catch (err) {
        if ((err as { code?: string }).code !== '55P03' || n >= DDL_TRIES) throw err;
        await new Promise((r) => setTimeout(r, Math.min(50 * n, 1000)));
      }
    }
  } finally {
    await db.query('RESET lock_timeout');
  }
}

/** How long the detach or drop of a partition keeps trying to take its locks without queueing. */
export const NOWAIT_WINDOW_MS = 60_000;

/**
 * The longest the transaction holding those locks waits for anything else (`FINALIZE` waits for
 * the snapshots older than its own to end), in ms: what a callback may wait behind it at worst.
 */
export const NOWAIT_HOLD_MS = 20;

export const sqlState = (err: unknown) => (err as { code?: string }).code;

/** The tables partition `name` (quoted) references by foreign key, as `LOCK TABLE` names them, sorted. */
async function referencedTables(db: SqlQueryable, name: string): Promise<string[]> {
  const { rows } = await db.query<{ referenced: string }>(
    `SELECT DISTINCT confrelid::regclass::text AS referenced FROM pg_constraint
      WHERE conrelid = $1::regclass AND contype = 'f' ORDER BY 1`,
    [name],
  );
  return rows.map((r) => r.referenced);
}

const pause = () => new Promise((r) => setTimeout(r, 10 + Math.random() * 20));

/** The error when {@link NOWAIT_WINDOW_MS} ran out: a lock timeout (55P03), kept for the next run. */
const windowRanOut = (what: string) =>
  Object.assign(new Error(`${what}: no moment without conflicting locks or old snapshots in its window`), {
    code: '55P03',
  });

/**
 * Runs `statements` in one transaction once `locks` (`LOCK TABLE … NOWAIT`, in the order given)
 * are all held. NOWAIT never queues, so no callback ever waits behind a lock this only wants;
 * the statements then wait at most {@link NOWAIT_HOLD_MS} for anything else. Before each try,
 * `ready` (holding no lock) may say to wait. Tried again every 10-30 ms on 55P03 (and 40P01)
 * until `until` (epoch ms), then 55P03.
 */
async function underNowaitLocks(
  db: SqlQueryable,
  locks: string[],
  statements: string[],
  until: number,
  ready: () => Promise<boolean> = async () => true,
): Promise<void> {
  for (;;) {
    if (Date.now() >= until) throw windowRanOut(statements.join('; '));
    if (!(await ready())) {
      await pause();
      continue;
    }
    await db.query('BEGIN');
    try {
      await db.query(`SET LOCAL lock_timeout = ${NOWAIT_HOLD_MS}`);
      for (const sql of [...locks, ...statements]) await db.query(sql);
      await db.query('COMMIT');
      return;
    } catch (err) {
      await db.query('ROLLBACK');
      if (!['55P03', '40P01'].includes(sqlState(err) ?? '')) throw err;
      await pause();
    }
  }
}

/**
 * Whether no other transaction of this database has held a snapshot for longer than
 * {@link NOWAIT_HOLD_MS}: `FINALIZE` waits for every snapshot older than its own, while holding
 * locks callbacks need, so it only starts when those it would wait for are young (an idle
 * transaction of an operator's session would otherwise make every try hold them its full time).
 */
async function snapshotsYoung(db: SqlQueryable): Promise<boolean> {
  const { rows } = await db.query<{ old: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_xmin IS NOT NULL
          AND backend_type <> 'autovacuum worker'
          AND xact_start < clock_timestamp() - make_interval(secs => $1::float8 / 1000)) AS old`,
    [NOWAIT_HOLD_MS],
  );
  return !rows[0].old;
}

/**
 * Detaches partition `name` of `table` concurrently and drops it (docs/retention.md, "Time
 * partitions"). A partition without foreign keys: each DDL under the short lock timeout. One that
 * references tables the callback writes (`coupons`, `callback_batches`, an outbox) locks them to
 * detach (SHARE ROW EXCLUSIVE: its foreign key becomes its own) and to drop (ACCESS EXCLUSIVE): a
 * request queued for them would hold up every callback behind it. So the concurrent detach runs
 * under a 1 ms lock timeout, which leaves it pending as soon as it would wait; it is emptied
 * (`TRUNCATE`, which frees its files and locks only itself), then finished (`FINALIZE`) and
 * dropped in one transaction under locks taken with NOWAIT, once old snapshots are gone.
 * @throws 55P03 when no moment came in {@link NOWAIT_WINDOW_MS} (the next run finishes it).
 */
export async function detachAndDrop(
  db: SqlQueryable,
  table: string,
  name: string,
  until: number,
): Promise<void> {
  const referenced = await referencedTables(db, ident(name));
  const detach = `ALTER TABLE ${ident(table)} DETACH PARTITION ${ident(name)}`;
  if (!referenced.length) {
    await shortLockDdl(db, `${detach} CONCURRENTLY`);
    await shortLockDdl(db, `DROP TABLE ${ident(name)}`);
    return;
  }
  for (;;) {
    let detached = true;
    await db.query('SET lock_timeout = 1');
    try {
      await db.query(`${detach} CONCURRENTLY`);
    } catch (err) {
      if (sqlState(err) !== '55P03') throw err;
      detached = false;
    } finally {
      await db.query('RESET lock_timeout');
    }
    if (detached) return emptyAndDrop(db, name, until);
    const { rows } = await db.query<{ pending: boolean }>(
      `SELECT inhdetachpending AS pending FROM pg_inherits WHERE inhrelid = $1::regclass`,
      [ident(name)],
    );
    if (rows[0]?.pending) return emptyAndDrop(db, name, until, table);
    if (Date.now() >= until) throw windowRanOut(`${detach} CONCURRENTLY`);
    await pause();
  }
}

/**
 * Drops `name`, a partition detached already or, with `pendingFrom`, one whose detach from that
 * table is pending ({@link detachAndDrop}). It is emptied first when it has rows (`TRUNCATE`
 * locks only itself and frees its files); then `FINALIZE` (when pending) and `DROP` run in one
 * transaction under NOWAIT locks: `ONLY` the parent's SHARE UPDATE EXCLUSIVE (when pending), its
 * own and the referenced tables' ACCESS EXCLUSIVE (a foreign key's drop needs it; it covers the
 * finalize's), held for catalog changes only; a pending one once old snapshots are gone.
 */
export async function emptyAndDrop(
  db: SqlQueryable,
  name: string,
  until: number,
  pendingFrom?: string,
): Promise<void> {
  const { rows } = await db.query<{ any: boolean }>(`SELECT EXISTS (SELECT 1 FROM ${ident(name)}) AS any`);
  if (rows[0].any) await shortLockDdl(db, `TRUNCATE ${ident(name)}`);
  const referenced = await referencedTables(db, ident(name));
  const pending = pendingFrom === undefined ? [] : [ident(pendingFrom)];
  await underNowaitLocks(
    db,
    [
      ...pending.map((parent) => `LOCK TABLE ONLY ${parent} IN SHARE UPDATE EXCLUSIVE MODE NOWAIT`),
      `LOCK TABLE ${ident(name)} IN ACCESS EXCLUSIVE MODE NOWAIT`,
      ...referenced.map((r) => `LOCK TABLE ${r} IN ACCESS EXCLUSIVE MODE NOWAIT`),
    ],
    [
      ...pending.map((parent) => `ALTER TABLE ${parent} DETACH PARTITION ${ident(name)} FINALIZE`),
      `DROP TABLE ${ident(name)}`,
    ],
    until,
    pending.length ? () => snapshotsYoung(db) : undefined,
  );
}

/** `<table>_pYYYYMM` of the month starting at `from` (UTC). */
export function partitionName(table: string, from: Date): string {
  return `${table}_p${from.getUTCFullYear()}${String(from.getUTCMonth() + 1).padStart(2, '0')}`;
}

/** The first instant of the month `months` after the one of `at` (UTC). */
export function monthStart(at: Date, months = 0): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + months, 1));
}

/** A quoted identifier. */
export const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** The partitions of `table`, oldest first. */
export async function listPartitions(db: SqlQueryable, table: string): Promise<PartitionInfo[]> {
  const { rows } = await db.query<{
    name: string;
    from: Date | null;
    to: Date;
    bytes: string;
    estimate: string;
    pending: boolean;
  }>(
    `SELECT c.relname AS name,
            (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \\(''([^'']+)''\\)'))[1]::timestamptz AS "from",
            (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \\(''([^'']+)''\\)'))[1]::timestamptz AS "to",
            pg_total_relation_size(c.oid)::text AS bytes, c.reltuples::bigint::text AS estimate,
            i.inhdetachpending AS pending
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = $1::regclass
      ORDER BY 3`,
    [table],
  );
  return rows.map((r) => ({
    table,
    name: r.name,
    from: r.from,
    to: r.to,
    bytes: Number(r.bytes),
    estimatedRows: Number(r.estimate),
    detachPending: r.pending,
  }));
}

/**
 * Creates the monthly partitions of every partitioned table from the current month of `now` to
 * `ahead` months after it, where none covers the month yet (also the months between the newest
 * partition and now). @returns the names created.
 */
export async function ensurePartitions(
  db: SqlQueryable,
  now: Date,
  ahead: number,
  from?: Date,
): Promise<string[]> {
  const created: string[] = [];
  const tables = [...new Set(RETENTION_TARGETS.filter(isPartitioned).map((t) => t.table))];
  for (const table of tables) {
    const parts = await listPartitions(db, table);
    const newest = parts.length ? parts[parts.length - 1].to : null;
    let month = monthStart(from ?? now);
    if (!from && newest && newest < month) month = newest;
    const last = monthStart(now, ahead);
    for (; month <= last; month = monthStart(month, 1)) {
      if (parts.some((p) => (p.from === null || p.from <= month) && p.to > month)) continue;
      const name = partitionName(table, month);
      // It locks the parent table as it attaches: under the short lock timeout, tried again.
      await shortLockDdl(
        db,
        `CREATE TABLE IF NOT EXISTS ${ident(name)} PARTITION OF ${ident(table)}
           FOR VALUES FROM ('${month.toISOString()}') TO ('${monthStart(month, 1).toISOString()}')`,
      );
      created.push(name);
    }
  }
  return created;
}

export function isPartitioned(t: (typeof RETENTION_TARGETS)[number]): t is PartitionedTarget {
  return t.kind === 'partitions';
}
