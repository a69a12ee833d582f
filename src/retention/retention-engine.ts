import { DAY_MS, RETENTION_CLASS_NAMES } from './retention.config.js';
import type { RetentionClass, RetentionConfig } from './retention.config.js';
import { RETENTION_TARGETS } from './retention-targets.js';
import type { BoundedTarget, PartitionedTarget } from './retention-targets.js';

/** What the engine needs of a PostgreSQL connection: one session (pg.Client or a pool client). */
export interface RetentionDb {
  query<R extends Record<string, unknown> = Record<string, unknown>>(
    text: string,
    values?: unknown[],
  ): Promise<{ rows: R[] }>;
}

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

/** One line of a report: a partition or a set of rows removed, or kept and why. */
export interface ReportItem {
  target: string;
  action: 'drop partition' | 'delete' | 'null body' | 'keep';
  rows: number;
  bytes: number;
  /** For a partition: its bounds. */
  partition?: { table: string; name: string; from: string | null; to: string };
  /** Why kept (`keep` only). */
  why?: string;
  /** true: `rows` is PostgreSQL's estimate, not a count. */
  estimated?: boolean;
}

/** One data class's part of a report. */
export interface ClassReport {
  dataClass: RetentionClass;
  /** Days kept; null: forever. */
  keepDays: number | null;
  /** Data older than this goes; null: nothing does. */
  cutoff: string | null;
  remove: ReportItem[];
  keep: ReportItem[];
  /** Rows and bytes removed (in a report: that would be), summed over `remove`. */
  removeRows: number;
  removeBytes: number;
  /** Bytes the class holds now (partitions' sizes, the bounded columns' sizes). */
  totalBytes: number;
  /** The oldest time the class still holds (after a run: what is left), or null when empty. */
  oldest: string | null;
}

/** What the policy removes now and keeps, per class (`npm run retention`). */
export interface RetentionReport {
  at: string;
  applied: boolean;
  classes: ClassReport[];
}

/** Before each step of an apply (a partition, a bounded batch): a permit, released after it. */
export type StepGate = () => Promise<(() => void) | undefined>;

/** Writes what expires elsewhere before it goes (archive.ts): a partition, or a batch of bounded rows. */
export interface RetentionArchiver {
  partition(db: RetentionDb, partition: PartitionInfo, dataClass: RetentionClass): Promise<void>;
  /** `lines`: the rows as `row_to_json` text, about to be deleted or to lose their body. */
  rows(target: BoundedTarget, lines: string[], cutoff: Date): Promise<void>;
}

/** The run was stopped (shutdown) while it waited for a permit; what it did so far stays done. */
export class RetentionStopped extends Error {
  constructor() {
    super('retention run stopped');
  }
}

/** Session-level advisory lock key of the retention job (one replica at a time; 727_001..005 are taken). */
export const RETENTION_LOCK_KEY = 727_006;

/** Milliseconds a DETACH or DROP waits for its lock before it gives up and tries again. */
const DDL_LOCK_TIMEOUT_MS = 100;
/** Tries of one DETACH or DROP under {@link DDL_LOCK_TIMEOUT_MS}. */
const DDL_TRIES = 100;

/**
 * Runs one DDL statement under `lock_timeout` {@link DDL_LOCK_TIMEOUT_MS}, tried again (backing
 * off) while it times out on its lock (55P03), at most {@link DDL_TRIES} times: the callback's
 * statements queued behind its lock request wait no longer than that.
 */
async function shortLockDdl(db: RetentionDb, sql: string): Promise<void> {
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
const NOWAIT_WINDOW_MS = 60_000;

/**
 * The longest the transaction holding those locks waits for anything else (`FINALIZE` waits for
 * the snapshots older than its own to end), in ms: what a callback may wait behind it at worst.
 */
const NOWAIT_HOLD_MS = 20;

const sqlState = (err: unknown) => (err as { code?: string }).code;

/** The tables partition `name` (quoted) references by foreign key, as `LOCK TABLE` names them, sorted. */
async function referencedTables(db: RetentionDb, name: string): Promise<string[]> {
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
  db: RetentionDb,
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
async function snapshotsYoung(db: RetentionDb): Promise<boolean> {
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
async function detachAndDrop(db: RetentionDb, table: string, name: string, until: number): Promise<void> {
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
async function emptyAndDrop(
  db: RetentionDb,
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
const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** The partitions of `table`, oldest first. */
export async function listPartitions(db: RetentionDb, table: string): Promise<PartitionInfo[]> {
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
  db: RetentionDb,
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

function isPartitioned(t: (typeof RETENTION_TARGETS)[number]): t is PartitionedTarget {
  return t.kind === 'partitions';
}

/** The cutoff of a class at `now`: data older goes; null: kept forever. */
function cutoffOf(config: RetentionConfig, dataClass: RetentionClass, now: Date): Date | null {
  const keep = config.keepMs[dataClass];
  return keep === null ? null : new Date(now.getTime() - keep);
}

/** One partition's plan: expiring (with exact rows and protected rows) or kept. */
interface PartitionPlan {
  target: PartitionedTarget;
  partition: PartitionInfo;
  expiring: boolean;
  rows: number;
  protectedRows: number;
}

/**
 * The retention policy over one database session: {@link report} says what a run would remove
 * now and what it keeps and why; {@link apply} does it (archive, DETACH PARTITION … CONCURRENTLY
 * and DROP for partitions, small batches for bounded rows) and returns the same report with what
 * it removed, so that report = apply on a quiet database. Never a bulk DELETE of a partitioned
 * table; never a protected row (docs/retention.md).
 */
export class RetentionEngine {
  constructor(
    private readonly db: RetentionDb,
    private readonly config: RetentionConfig,
    private readonly options: {
      archiver?: RetentionArchiver;
      gate?: StepGate;
      log?: (line: string) => void;
      /** How long one partition's detach and drop may wait for a moment without conflicts (ms; default 60 000). */
      lockWindowMs?: number;
    } = {},
  ) {}

  /** What the policy would remove at `now`, and what it keeps. */
  async report(now = new Date()): Promise<RetentionReport> {
    return this.yielding(async () => {
      const plans = await this.planPartitions(now);
      return this.build(now, plans, false, new Map());
    });
  }

  /**
   * Runs `work` with the session's scans on one core: no parallel workers, so counting an expiring
   * partition of millions of rows leaves the other cores to the callbacks (docs/retention.md,
   * "The scheduled job").
   */
  private async yielding<T>(work: () => Promise<T>): Promise<T> {
    await this.db.query('SET max_parallel_workers_per_gather = 0');
    try {
      return await work();
    } finally {
      await this.db.query('RESET max_parallel_workers_per_gather');
    }
  }

  /**
   * Removes what {@link report} lists at `now`, target by target in the order of
   * {@link RETENTION_TARGETS}, each partition and each batch of rows after a permit of
   * `options.gate`; records each class's horizon in `retention_horizons`.
   * @returns the report of what was removed (counted as it was removed).
   */
  async apply(now = new Date()): Promise<RetentionReport> {
    return this.yielding(() => this.applyNow(now));
  }

  private async applyNow(now: Date): Promise<RetentionReport> {
    const stuck: string[] = [];
    await this.finishPendingDetaches(now, stuck);
    const plans = await this.planPartitions(now);
    const dropping = plans.filter((p) => p.expiring && p.protectedRows === 0).map((p) => p.partition.name);
    const removed = new Map<string, { rows: number; bytes: number }>();
    for (const target of RETENTION_TARGETS) {
      const cutoff = cutoffOf(this.config, target.dataClass, now);
      if (!cutoff) continue;
      if (target.kind === 'partitions') {
        for (const plan of plans.filter((p) => p.target === target && p.expiring && p.protectedRows === 0)) {
          // A table has one pending detach at most (55000 for a second): its later months wait too.
          if (stuck.some((name) => name.startsWith(`${target.table}_`))) {
            stuck.push(plan.partition.name);
            continue;
          }
          if (
            !(await this.unlessStuck(stuck, plan.partition.name, () =>
              this.step(() => this.dropPartition(plan, target.dataClass)),
            ))
          )
            continue;
          removed.set(plan.partition.name, { rows: plan.rows, bytes: plan.partition.bytes });
          await this.raiseHorizon(target.dataClass, plan.partition.to);
        }
      } else if (!stuck.length) {
        // Rows go only after every partition the run meant to drop is gone (an outbox row waits for its attempts).
        const done = await this.applyRows(target, cutoff, dropping);
        removed.set(target.name, done);
        if (done.rows) await this.raiseHorizon(target.dataClass, cutoff);
      }
    }
    if (stuck.length)
      throw Object.assign(
        new Error(
          `retention: ${stuck.join(', ')} kept for the next run (no moment without conflicting locks or old snapshots); the other partitions were dropped, no rows were removed`,
        ),
        { code: '55P03' },
      );
    const after = await this.planPartitions(now);
    return this.build(now, after, true, removed, plans);
  }

  /** The partitions of every partitioned target with their plan at `now`. */
  private async planPartitions(now: Date): Promise<PartitionPlan[]> {
    const plans: PartitionPlan[] = [];
    for (const target of RETENTION_TARGETS) {
      if (target.kind !== 'partitions') continue;
      const cutoff = cutoffOf(this.config, target.dataClass, now);
      for (const partition of await listPartitions(this.db, target.table)) {
        const expiring = cutoff !== null && partition.to <= cutoff && !partition.detachPending;
        let rows = partition.estimatedRows;
        let protectedRows = 0;
        if (expiring) {
          rows = await this.count(`SELECT count(*) FROM ${ident(partition.name)}`);
          if (target.protectedSql)
            protectedRows = await this.count(target.protectedSql.replace('$P', ident(partition.name)));
        }
        plans.push({ target, partition, expiring, rows, protectedRows });
      }
    }
    return plans;
  }

  private async count(sql: string, values: unknown[] = []): Promise<number> {
    const { rows } = await this.db.query<{ count: string }>(sql, values);
    return Number(rows[0].count);
  }

  /** Builds the report from the partition plans (and, after an apply, what was removed). */
  private async build(
    now: Date,
    plans: PartitionPlan[],
    applied: boolean,
    removed: Map<string, { rows: number; bytes: number }>,
    before?: PartitionPlan[],
  ): Promise<RetentionReport> {
    const dropping = (before ?? plans)
      .filter((p) => p.expiring && p.protectedRows === 0)
      .map((p) => p.partition.name);
    const classes: ClassReport[] = [];
    for (const dataClass of RETENTION_CLASS_NAMES) {
      const cutoff = cutoffOf(this.config, dataClass, now);
      const keep = this.config.keepMs[dataClass];
      const report: ClassReport = {
        dataClass,
        keepDays: keep === null ? null : Math.round((keep / DAY_MS) * 100) / 100,
        cutoff: cutoff?.toISOString() ?? null,
        remove: [],
        keep: [],
        removeRows: 0,
        removeBytes: 0,
        totalBytes: 0,
        oldest: null,
      };
      for (const target of RETENTION_TARGETS.filter((t) => t.dataClass === dataClass)) {
        if (target.kind === 'partitions') {
          const mine = plans.filter((p) => p.target === target);
          if (applied)
            for (const p of (before ?? []).filter(
              (b) => b.target === target && removed.has(b.partition.name),
            ))
              report.remove.push(partitionItem(p, 'drop partition', removed.get(p.partition.name)!.rows));
          let keptRows = 0;
          let keptBytes = 0;
          let keptParts = 0;
          let keptEstimated = false;
          for (const p of mine) {
            report.totalBytes += p.partition.bytes;
            if (!applied && p.expiring && p.protectedRows === 0) {
              report.remove.push(partitionItem(p, 'drop partition', p.rows));
            } else if (p.expiring && p.protectedRows > 0) {
              report.keep.push({
                ...partitionItem(p, 'keep', p.rows),
                why: `holds ${p.protectedRows} protected rows: ${p.target.protectedWhy}`,
              });
            } else if (p.partition.detachPending) {
              report.keep.push({
                ...partitionItem(p, 'keep', p.rows),
                why: 'detach pending: finished by the next apply',
              });
            } else {
              keptParts++;
              keptRows += await this.keptRows(p);
              keptEstimated ||= p.partition.estimatedRows > 0;
              keptBytes += p.partition.bytes;
            }
          }
          if (keptParts)
            report.keep.push({
              target: target.table,
              action: 'keep',
              rows: keptRows,
              bytes: keptBytes,
              estimated: keptEstimated,
              why:
                cutoff === null
                  ? `${keptParts} partitions: kept forever (${RETENTION_CLASS_VARIABLE(dataClass)}=off)`
                  : `${keptParts} partitions within the window (newer than ${cutoff.toISOString()}) or ahead`,
            });
          const oldest = await this.oldestOfPartitions(mine);
          if (oldest && (!report.oldest || oldest < report.oldest)) report.oldest = oldest;
        } else {
          const sums = await this.rowSums(target, cutoff, dropping);
          report.totalBytes += sums.totalBytes;
          if (applied) {
            const done = removed.get(target.name) ?? { rows: 0, bytes: 0 };
            if (done.rows) report.remove.push({ target: target.name, action: target.action, ...done });
          } else if (sums.rows) {
            report.remove.push({
              target: target.name,
              action: target.action,
              rows: sums.rows,
              bytes: sums.bytes,
            });
          }
          if (sums.protectedRows)
            report.keep.push({
              target: target.name,
              action: 'keep',
              rows: sums.protectedRows,
              bytes: 0,
              why: `protected: ${target.protectedWhy}`,
            });
          if (sums.oldest && (!report.oldest || sums.oldest < report.oldest)) report.oldest = sums.oldest;
        }
      }
      for (const item of report.remove) {
        report.removeRows += item.rows;
        report.removeBytes += item.bytes;
      }
      classes.push(report);
    }
    return { at: now.toISOString(), applied, classes };
  }

  /**
   * Rows of a kept partition: PostgreSQL's estimate (`reltuples`) once it has one; counted when
   * it has none, or an estimate of 0 (never analysed, or analysed empty and filled since: a new
   * partition before autovacuum's ANALYZE), so the report never says "~0 rows" of rows it holds.
   */
  private async keptRows(p: PartitionPlan): Promise<number> {
    if (p.partition.estimatedRows > 0) return p.partition.estimatedRows;
    return this.count(`SELECT count(*) FROM ${ident(p.partition.name)}`);
  }

  /**
   * The oldest time of the oldest non-empty partition: the time of its first row by id (the
   * primary key's index; ids grow with time), not the partition's lower bound, which may be
   * hours or days before any row it holds.
   */
  private async oldestOfPartitions(plans: PartitionPlan[]): Promise<string | null> {
    for (const p of plans) {
      const { rows } = await this.db.query<{ oldest: Date }>(
        `SELECT ${ident(p.target.column)} AS oldest FROM ${ident(p.partition.name)} ORDER BY id LIMIT 1`,
      );
      if (rows.length) return new Date(rows[0].oldest).toISOString();
    }
    return null;
  }

  /** A bounded target's rows and bytes past the cutoff (removable and protected), its size and oldest row. */
  private async rowSums(
    target: BoundedTarget,
    cutoff: Date | null,
    dropping: string[],
  ): Promise<{
    rows: number;
    bytes: number;
    protectedRows: number;
    totalBytes: number;
    oldest: string | null;
  }> {
    const isProtected = target.protectedRow ?? 'false';
    const sums = { rows: 0, bytes: 0, protectedRows: 0 };
    if (cutoff) {
      // Only the rows past the cutoff are read (by the time index where the table has one).
      const { rows } = await this.db.query<{ rows: string; bytes: string; protected: string }>(
        `SELECT count(*) FILTER (WHERE NOT (${isProtected}))::text AS rows,
                coalesce(sum(${target.bytes}) FILTER (WHERE NOT (${isProtected})), 0)::text AS bytes,
                count(*) FILTER (WHERE ${isProtected})::text AS protected
           FROM ${ident(target.table)} t WHERE (${target.eligible}) AND cardinality($2::text[]) >= 0`,
        [cutoff, dropping],
      );
      sums.rows = Number(rows[0].rows);
      sums.bytes = Number(rows[0].bytes);
      sums.protectedRows = Number(rows[0].protected);
    }
    // The class's share of the table from the catalog: a body's is the table's TOAST, the rows'
    // the rest (all of it when no body of the table is a class of its own).
    const bodyApart = RETENTION_TARGETS.some(
      (o) => o !== target && o.kind === 'rows' && o.table === target.table && o.action === 'null body',
    );
    const { rows: size } = await this.db.query<{ total: string; toast: string }>(
      `SELECT pg_total_relation_size(c.oid)::text AS total,
              coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0)::text AS toast
         FROM pg_class c WHERE c.oid = $1::regclass`,
      [target.table],
    );
    const total = Number(size[0].total);
    const toast = Number(size[0].toast);
    const totalBytes = target.action === 'null body' ? toast : bodyApart ? total - toast : total;
    const { rows: oldest } = await this.db.query<{ oldest: Date | null }>(
      `SELECT ${TIME_OF[target.name]} AS oldest FROM ${ident(target.table)} t
        WHERE ${target.holds ?? 'true'} ORDER BY ${ORDER_OF[target.table]} LIMIT 1`,
    );
    return {
      ...sums,
      totalBytes,
      oldest: oldest.length && oldest[0].oldest ? new Date(oldest[0].oldest).toISOString() : null,
    };
  }

  /** Deletes or empties a bounded target's eligible rows in batches of `batchRows`, each after a permit. */
  private async applyRows(
    target: BoundedTarget,
    cutoff: Date,
    dropping: string[],
  ): Promise<{ rows: number; bytes: number }> {
    const pick = `SELECT ctid FROM ${ident(target.table)} t
                   WHERE (${target.eligible}) AND NOT (${target.protectedRow ?? 'false'}) AND cardinality($2::text[]) >= 0
                   LIMIT ${this.config.batchRows} FOR UPDATE SKIP LOCKED`;
    const sql =
      target.action === 'delete'
        ? `WITH gone AS (DELETE FROM ${ident(target.table)} t WHERE ctid = ANY (ARRAY(${pick})) RETURNING ${target.bytes} AS bytes)
           SELECT count(*)::text AS rows, coalesce(sum(bytes), 0)::text AS bytes FROM gone`
        : `WITH sized AS (SELECT t.ctid AS at, ${target.bytes} AS bytes FROM ${ident(target.table)} t WHERE t.ctid = ANY (ARRAY(${pick}))),
                emptied AS (UPDATE ${ident(target.table)} t SET ${target.set} FROM sized WHERE t.ctid = sized.at RETURNING sized.bytes)
           SELECT count(*)::text AS rows, coalesce(sum(bytes), 0)::text AS bytes FROM emptied`;
    const archiver = this.config.archiveClasses.includes(target.dataClass)
      ? this.options.archiver
      : undefined;
    const total = { rows: 0, bytes: 0 };
    for (;;) {
      let batch = { rows: 0, bytes: 0 };
      await this.step(async () => {
        if (archiver) {
          const select = pick.replace(
            'SELECT ctid',
            'SELECT t.ctid::text AS at, row_to_json(t)::text AS line',
          );
          batch = await this.archiveAndApply(target, archiver, select, cutoff, dropping);
          return;
        }
        const { rows } = await this.db.query<{ rows: string; bytes: string }>(sql, [cutoff, dropping]);
        batch = { rows: Number(rows[0].rows), bytes: Number(rows[0].bytes) };
      });
      total.rows += batch.rows;
      total.bytes += batch.bytes;
      if (batch.rows < this.config.batchRows) return total;
    }
  }

  /**
   * One batch of an archived bounded target, in one transaction: its rows locked and read, archived,
   * then deleted or emptied (the archive is written before the rows go; a failure keeps them).
   */
  private async archiveAndApply(
    target: BoundedTarget,
    archiver: RetentionArchiver,
    select: string,
    cutoff: Date,
    dropping: string[],
  ): Promise<{ rows: number; bytes: number }> {
    await this.db.query('BEGIN');
    try {
      const { rows } = await this.db.query<{ at: string; line: string }>(select, [cutoff, dropping]);
      if (rows.length)
        await archiver.rows(
          target,
          rows.map((r) => r.line),
          cutoff,
        );
      const { rows: done } = await this.db.query<{ rows: string; bytes: string }>(
        target.action === 'delete'
          ? `WITH gone AS (DELETE FROM ${ident(target.table)} t WHERE ctid = ANY ($1::tid[]) RETURNING ${target.bytes} AS bytes)
             SELECT count(*)::text AS rows, coalesce(sum(bytes), 0)::text AS bytes FROM gone`
          : `WITH sized AS (SELECT t.ctid AS at, ${target.bytes} AS bytes FROM ${ident(target.table)} t WHERE t.ctid = ANY ($1::tid[])),
                  emptied AS (UPDATE ${ident(target.table)} t SET ${target.set} FROM sized WHERE t.ctid = sized.at RETURNING sized.bytes)
             SELECT count(*)::text AS rows, coalesce(sum(bytes), 0)::text AS bytes FROM emptied`,
        [rows.map((r) => r.at)],
      );
      await this.db.query('COMMIT');
      return { rows: Number(done[0].rows), bytes: Number(done[0].bytes) };
    } catch (err) {
      await this.db.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  }

  /** Runs `work` under a permit of the gate (when there is one). */
  private async step(work: () => Promise<void>): Promise<void> {
    const release = this.options.gate ? await this.options.gate() : undefined;
    if (this.options.gate && !release) throw new RetentionStopped();
    try {
      await work();
    } finally {
      release?.();
    }
  }

  /**
   * Archives (when the class asks), detaches concurrently and drops one partition
   * ({@link detachAndDrop}: a callback waits behind its locks {@link NOWAIT_HOLD_MS} at most).
   */
  private async dropPartition(plan: PartitionPlan, dataClass: RetentionClass): Promise<void> {
    const { partition } = plan;
    if (this.options.archiver && this.config.archiveClasses.includes(dataClass))
      await this.options.archiver.partition(this.db, partition, dataClass);
    await detachAndDrop(this.db, partition.table, partition.name, this.until());
    this.options.log?.(`dropped partition ${partition.name} (${plan.rows} rows, ${partition.bytes} bytes)`);
  }

  /**
   * Runs `work` on partition `name`; a lock timeout (55P03: no moment without conflicting locks
   * in the window) adds `name` to `stuck` instead of ending the run. @returns whether it ran.
   */
  private async unlessStuck(stuck: string[], name: string, work: () => Promise<void>): Promise<boolean> {
    try {
      await work();
      return true;
    } catch (err) {
      if (sqlState(err) !== '55P03') throw err;
      this.options.log?.(`kept ${name} for the next run: ${(err as Error).message}`);
      stuck.push(name);
      return false;
    }
  }

  /** When a partition's detach and drop starting now stops waiting for its moment (epoch ms). */
  private until(): number {
    return Date.now() + (this.options.lockWindowMs ?? NOWAIT_WINDOW_MS);
  }

  /** Whether table `name` holds rows of `target` that must not go yet. */
  private async holdsProtected(target: PartitionedTarget, name: string): Promise<boolean> {
    return !!target.protectedSql && (await this.count(target.protectedSql.replace('$P', ident(name)))) > 0;
  }

  /**
   * Finishes what an earlier run left when it was interrupted, unless it holds protected rows by
   * now: a DETACH … CONCURRENTLY still pending (FINALIZE, then drop), or a partition detached but
   * not dropped (a table `<table>_pYYYYMM` or `<table>_legacy` no longer a partition, whose month
   * is past its class's cutoff and whose newest row is older than the cutoff, or empty). Raises
   * the class's horizon as a planned drop does.
   */
  private async finishPendingDetaches(now: Date, stuck: string[]): Promise<void> {
    for (const target of RETENTION_TARGETS.filter(isPartitioned)) {
      const { table } = target;
      const cutoff = cutoffOf(this.config, target.dataClass, now);
      for (const p of await listPartitions(this.db, table)) {
        if (!p.detachPending) continue;
        if (await this.holdsProtected(target, p.name)) {
          this.options.log?.(`kept ${p.name} (detach pending): it holds protected rows`);
          continue;
        }
        if (
          !(await this.unlessStuck(stuck, p.name, () => emptyAndDrop(this.db, p.name, this.until(), table)))
        )
          continue;
        await this.raiseHorizon(target.dataClass, p.to);
        this.options.log?.(`dropped ${p.name}, whose detach an interrupted run left pending`);
      }
      if (!cutoff) continue;
      const { rows } = await this.db.query<{ name: string }>(
        `SELECT c.relname AS name FROM pg_class c
          WHERE c.relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = $1::regclass)
            AND c.relkind = 'r' AND NOT c.relispartition
            AND (c.relname = $2 || '_legacy' OR (left(c.relname, length($2) + 2) = $2 || '_p'
                 AND substr(c.relname, length($2) + 3) ~ '^[0-9]{4}(0[1-9]|1[0-2])$'))
          ORDER BY 1`,
        [table, table],
      );
      for (const { name } of rows) {
        const month = /_p(\d{4})(\d{2})$/.exec(name);
        const to = month
          ? monthStart(new Date(Date.UTC(Number(month[1]), Number(month[2]) - 1, 1)), 1)
          : null;
        if (to && to > cutoff) continue;
        const { rows: newest } = await this.db.query<{ at: Date | null }>(
          `SELECT max(${ident(target.column)}) AS at FROM ${ident(name)}`,
        );
        const at = newest[0].at;
        if ((at && at >= cutoff) || (await this.holdsProtected(target, name))) continue;
        if (!(await this.unlessStuck(stuck, name, () => emptyAndDrop(this.db, name, this.until())))) continue;
        const before = to ?? at;
        if (before) await this.raiseHorizon(target.dataClass, before);
        this.options.log?.(`dropped ${name}, detached by an interrupted run`);
      }
    }
  }

  private async raiseHorizon(dataClass: RetentionClass, before: Date): Promise<void> {
    await this.db.query(
      `INSERT INTO retention_horizons (data_class, expired_before) VALUES ($1, $2)
       ON CONFLICT (data_class) DO UPDATE
         SET expired_before = greatest(retention_horizons.expired_before, EXCLUDED.expired_before), updated_at = now()`,
      [dataClass, before],
    );
  }
}

/** The order of a bounded table's rows by age, by an index (for its oldest row). */
const ORDER_OF: Record<string, string> = {
  wallet_outbox: 't.id',
  event_outbox: 't.id',
  callback_inbox: 't.id',
  callback_batches: 't.received_at',
};

/** The time of each bounded target's row (for its oldest). */
const TIME_OF: Record<string, string> = {
  wallet_outbox: 'coalesce(t.delivered_at, t.skipped_at, t.created_at)',
  'wallet_outbox.body': 'coalesce(t.delivered_at, t.skipped_at)',
  event_outbox: 'coalesce(t.delivered_at, t.skipped_at, t.created_at)',
  'event_outbox.body': 'coalesce(t.delivered_at, t.skipped_at)',
  'callback_batches.payload': 't.received_at',
  callback_inbox: 't.received_at',
  callback_batches: 't.received_at',
};

/** The variable of a class. */
function RETENTION_CLASS_VARIABLE(dataClass: RetentionClass): string {
  return `RETENTION_${dataClass.toUpperCase()}`;
}

function partitionItem(p: PartitionPlan, action: ReportItem['action'], rows: number): ReportItem {
  return {
    target: p.partition.name,
    action,
    rows,
    bytes: p.partition.bytes,
    partition: {
      table: p.partition.table,
      name: p.partition.name,
      from: p.partition.from?.toISOString() ?? null,
      to: p.partition.to.toISOString(),
    },
  };
}

/** Tables no class removes from (docs/retention.md, "Data classes"). */
export const KEPT_FOREVER = [
  'financial_operations',
  'ledger_entries',
  'accounts',
  'account_adjustments',
  'coupons',
  'bets',
  'coupon_resolutions',
  'operator_actions',
  'quarantined_bodies',
];

/** The report as the CLI and the job's log print it: one block per class, then what is kept forever. */
export function formatRetentionReport(report: RetentionReport): string {
  const lines = [
    `retention ${report.applied ? 'applied' : 'report (nothing removed; -- --apply removes it)'} at ${report.at}`,
  ];
  for (const c of report.classes) {
    lines.push(
      `${c.dataClass}: ${c.keepDays === null ? 'kept forever' : `keep ${c.keepDays} days (before ${c.cutoff} goes)`}; ` +
        `${report.applied ? 'removed' : 'would remove'} ${c.removeRows} rows, ${c.removeBytes} bytes; ` +
        `holds ${c.totalBytes} bytes, oldest ${c.oldest ?? 'none'}`,
    );
    for (const i of c.remove) lines.push(`  - ${i.action} ${i.target}: ${i.rows} rows, ${i.bytes} bytes`);
    for (const i of c.keep)
      lines.push(
        `  = keep ${i.target}: ${i.estimated ? '~' : ''}${i.rows} rows, ${i.bytes} bytes (${i.why})`,
      );
  }
  lines.push(`kept forever: ${KEPT_FOREVER.join(', ')} (no class; docs/retention.md)`);
  return lines.join('\n');
}
