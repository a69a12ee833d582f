import { Inject, Injectable, Logger } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import type pg from 'pg';
import { Counter, Gauge } from 'prom-client';
import { IntervalJob } from '../../platform/background/interval-job.js';
import { BackgroundGovernor, WorkGate } from '../../platform/background/background-governor.js';
import { SessionDatabase } from '../../platform/database/session-database.js';
import { TransactionRunner } from '../../platform/database/transaction.js';
import { MetricsRegistry } from '../../platform/observability/metrics-registry.js';
import { ArchiveConnectors } from './archive-connectors.js';
import { RETENTION_CLASS_NAMES, RETENTION_CONFIG } from './retention.config.js';
import type { RetentionConfig } from './retention.config.js';
import { RETENTION_LOCK_KEY, RetentionEngine, RetentionStopped } from './retention-engine.js';
import { ensurePartitions } from './retention-partitions.js';
import type { RetentionReport } from './retention-report.js';

/** Metric names of the retention job (docs/operating.md#metrics, docs/retention.md). */
export const RETENTION_METRIC = {
  bytes: 'settlement_retention_bytes',
  oldest: 'settlement_retention_oldest_timestamp_seconds',
  removedRows: 'settlement_retention_removed_rows_total',
  removedBytes: 'settlement_retention_removed_bytes_total',
  lastRun: 'settlement_retention_last_run_timestamp_seconds',
  partitionsCreated: 'settlement_retention_partitions_created_total',
} as const;

/** Milliseconds one statement of a run may take (a detach interrupted by it is finished next run). */
const RUN_STATEMENT_TIMEOUT_MS = 15 * 60_000;

/** Milliseconds shutdown waits for a run in progress. */
const SHUTDOWN_WAIT_MS = 3000;

/** What one scheduled run did: skipped (another replica), or its report. */
export type RetentionRun = { skipped: true } | { skipped: false; created: string[]; report: RetentionReport };

/**
 * The retention maintenance job (docs/retention.md): at start and every `RETENTION_INTERVAL`, one
 * replica at a time (`pg_try_advisory_lock(727006)` on a connection of its own, the
 * {@link SessionDatabase}'s: `DATABASE_DIRECT_URL` behind a transaction-mode pooler), creates the
 * monthly partitions `RETENTION_PARTITIONS_AHEAD` months ahead and applies the policy, each
 * partition and each batch of rows after a permit of the background-work governor (kind
 * `retention`, floor 0: it yields to the callback). Logs the same report as `npm run retention`
 * and exports bytes and the oldest row per class, rows removed and the last run.
 */
@Injectable()
export class RetentionJob extends IntervalJob {
  private readonly gate: WorkGate;
  private readonly bytes: Gauge<'class'>;
  private readonly oldest: Gauge<'class'>;
  private readonly removedRows: Counter<'class'>;
  private readonly removedBytes: Counter<'class'>;
  private readonly lastRun: Gauge;
  private readonly created: Counter;

  constructor(
    @Inject(RETENTION_CONFIG) private readonly config: RetentionConfig,
    private readonly session: SessionDatabase,
    private readonly transactions: TransactionRunner,
    scheduler: SchedulerRegistry,
    private readonly archives: ArchiveConnectors,
    metrics: MetricsRegistry,
    governor: BackgroundGovernor,
  ) {
    super(scheduler, new Logger('Retention'), {
      name: 'retention',
      what: 'retention run',
      everyMs: config.intervalMs,
      offMessage: 'scheduled retention is off (RETENTION_INTERVAL=0): npm run retention -- --apply by hand',
      // A statement in progress (e.g. a detach waiting for old snapshots) is not waited for: what it
      // did commits or not on its own, and the next run goes on.
      shutdownWaitMs: SHUTDOWN_WAIT_MS,
    });
    // Pure catch-up work: floor 0, where it still takes one step a second (the trickle).
    this.gate = governor.register('retention', 1, 0);
    const registers = [metrics.registry];
    this.bytes = new Gauge({
      name: RETENTION_METRIC.bytes,
      help: 'Bytes a retention data class holds, as of the last run (partitions, bounded columns)',
      labelNames: ['class'],
      registers,
    });
    this.oldest = new Gauge({
      name: RETENTION_METRIC.oldest,
      help: 'Unix time of the oldest data a retention class still holds, as of the last run (0: none)',
      labelNames: ['class'],
      registers,
    });
    this.removedRows = new Counter({
      name: RETENTION_METRIC.removedRows,
      help: 'Rows the retention job removed (or whose body it removed), by data class',
      labelNames: ['class'],
      registers,
    });
    this.removedBytes = new Counter({
      name: RETENTION_METRIC.removedBytes,
      help: 'Bytes the retention job removed, by data class',
      labelNames: ['class'],
      registers,
    });
    this.lastRun = new Gauge({
      name: RETENTION_METRIC.lastRun,
      help: 'Unix time the last retention run of this replica finished (0: none yet)',
      registers,
    });
    this.created = new Counter({
      name: RETENTION_METRIC.partitionsCreated,
      help: 'Monthly partitions the retention job created ahead',
      registers,
    });
    for (const c of RETENTION_CLASS_NAMES) {
      this.removedRows.inc({ class: c }, 0);
      this.removedBytes.inc({ class: c }, 0);
    }
  }

  /**
   * Before the app takes callbacks: the partitions of this month and the months ahead exist (also
   * with `RETENTION_INTERVAL=off`: a row of a month without its partition could not be written).
   * Then the schedule.
   */
  override async onApplicationBootstrap(): Promise<void> {
    await this.ensureAhead();
    this.startRuns();
  }

  /** Creates the missing partitions up to `RETENTION_PARTITIONS_AHEAD` months ahead; a failure is logged. */
  private async ensureAhead(): Promise<void> {
    const runner = this.session.dataSource.createQueryRunner();
    try {
      const client = (await runner.connect()) as pg.PoolClient;
      const created = await ensurePartitions(client, new Date(), this.config.partitionsAhead);
      this.created.inc(created.length);
      if (created.length) this.logger.log(`created partitions ${created.join(', ')}`);
    } catch (err) {
      // Another replica creating the same partition at once (42P07), or the database away: the
      // scheduled run (or the next start) creates them.
      this.logger.warn(`partitions ahead not created at start: ${(err as Error).message}`);
    } finally {
      await runner.release();
    }
  }

  /**
   * One run (what the interval calls; tests call it directly), at `now`.
   * @returns `skipped` when another replica holds the lock, else what was created and removed.
   */
  async runOnce(now = new Date()): Promise<RetentionRun> {
    try {
      const run = await this.transactions.withSessionLock(RETENTION_LOCK_KEY, async (client) => {
        try {
          // A run's statements (counting a partition, waiting out a concurrent detach) are not the
          // callback's: minutes, not seconds; still bounded, so a hung database frees the connection.
          await client.query(`SET statement_timeout = ${RUN_STATEMENT_TIMEOUT_MS}`);
          const created = await ensurePartitions(client, now, this.config.partitionsAhead);
          this.created.inc(created.length);
          if (created.length) this.logger.log(`created partitions ${created.join(', ')}`);
          const engine = new RetentionEngine(client, this.config, {
            archiver: this.archives.archiver(),
            gate: () => this.gate.acquire(this.stopping.signal),
            log: (line) => this.logger.log(line),
          });
          const report = await engine.apply(now);
          this.record(report);
          // One JSON line: the totals in `msg`, the report as a field (`npm run retention` prints the text).
          this.logger.log(retentionLogEntry(report));
          return { skipped: false as const, created, report };
        } finally {
          await client.query('RESET statement_timeout').catch(() => undefined);
        }
      });
      if ('result' in run) return run.result;
      this.logger.log('retention run skipped: another replica holds the lock');
      return { skipped: true };
    } catch (err) {
      if (err instanceof RetentionStopped) {
        this.logger.log('retention run stopped at shutdown: the next run goes on');
        return { skipped: true };
      }
      throw err;
    }
  }

  /** The report's figures as metrics. */
  private record(report: RetentionReport): void {
    for (const c of report.classes) {
      this.bytes.set({ class: c.dataClass }, c.totalBytes);
      this.oldest.set({ class: c.dataClass }, c.oldest ? Date.parse(c.oldest) / 1000 : 0);
      this.removedRows.inc({ class: c.dataClass }, c.removeRows);
      this.removedBytes.inc({ class: c.dataClass }, c.removeBytes);
    }
    this.lastRun.set(Date.now() / 1000);
  }
}

/**
 * The job's log entry of a run: `msg` with the totals, `retention` the report itself (per class:
 * days kept, cutoff, rows and bytes removed, bytes held, oldest; docs/retention.md), so a log
 * search reads fields instead of one string of lines.
 */
export function retentionLogEntry(report: RetentionReport): { msg: string; retention: RetentionReport } {
  const rows = report.classes.reduce((n, c) => n + c.removeRows, 0);
  const bytes = report.classes.reduce((n, c) => n + c.removeBytes, 0);
  return {
    msg: `retention ${report.applied ? 'applied' : 'report'}: ${report.applied ? 'removed' : 'would remove'} ${rows} rows, ${bytes} bytes`,
    retention: report,
  };
}
