import { raiseRetentionHorizon } from '../../platform/retention-horizons/retention-horizons.js';
import type { SqlQueryable } from '../../platform/database/sql-queryable.js';
import type { RetentionClass, RetentionConfig } from './retention.config.js';
import { cutoffOf, RetentionPlanner } from './retention-plan.js';
import type { PartitionPlan } from './retention-plan.js';
import {
  detachAndDrop,
  emptyAndDrop,
  ident,
  isPartitioned,
  listPartitions,
  monthStart,
  NOWAIT_WINDOW_MS,
  sqlState,
} from './retention-partitions.js';
import type { PartitionInfo } from './retention-partitions.js';
import type { RetentionReport } from './retention-report.js';
import { RETENTION_TARGETS } from './retention-targets.js';
import type { BoundedTarget } from './retention-targets.js';

/** Before each step of an apply (a partition, a bounded batch): a permit, released after it. */
export type StepGate = () => Promise<(() => void) | undefined>;

/** Writes what expires elsewhere before it goes (archive.ts): a partition, or a batch of bounded rows. */
export interface RetentionArchiver {
  partition(db: SqlQueryable, partition: PartitionInfo, dataClass: RetentionClass): Promise<void>;
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

/**
 * The retention policy over one database session: {@link report} says what a run would remove
 * now and what it keeps and why; {@link apply} does it (archive, DETACH PARTITION … CONCURRENTLY
 * and DROP for partitions, small batches for bounded rows) and returns the same report with what
 * it removed, so that report = apply on a quiet database. Never a bulk DELETE of a partitioned
 * table; never a protected row (docs/retention.md).
 */
export class RetentionEngine {
  /** The plans and reports before and after an apply, over the same session. */
  private readonly planner: RetentionPlanner;

  constructor(
    private readonly db: SqlQueryable,
    private readonly config: RetentionConfig,
    private readonly options: {
      archiver?: RetentionArchiver;
      gate?: StepGate;
      log?: (line: string) => void;
      /** How long one partition's detach and drop may wait for a moment without conflicts (ms; default 60 000). */
      lockWindowMs?: number;
    } = {},
  ) {
    this.planner = new RetentionPlanner(db, config);
  }

  /** What the policy would remove at `now`, and what it keeps. */
  async report(now = new Date()): Promise<RetentionReport> {
    return this.yielding(async () => {
      const plans = await this.planner.planPartitions(now);
      return this.planner.build(now, plans, false, new Map());
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
    const plans = await this.planner.planPartitions(now);
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
    const after = await this.planner.planPartitions(now);
    return this.planner.build(now, after, true, removed, plans);
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
   * ({@link detachAndDrop}: a callback waits behind its locks `NOWAIT_HOLD_MS` at most).
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
        if (await this.planner.holdsProtected(target, p.name)) {
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
        if ((at && at >= cutoff) || (await this.planner.holdsProtected(target, name))) continue;
        if (!(await this.unlessStuck(stuck, name, () => emptyAndDrop(this.db, name, this.until())))) continue;
        const before = to ?? at;
        if (before) await this.raiseHorizon(target.dataClass, before);
        this.options.log?.(`dropped ${name}, detached by an interrupted run`);
      }
    }
  }

  private async raiseHorizon(dataClass: RetentionClass, before: Date): Promise<void> {
    await raiseRetentionHorizon(this.db, dataClass, before);
  }
}
