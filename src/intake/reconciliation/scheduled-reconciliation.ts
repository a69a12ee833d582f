import { Inject, Injectable, Logger } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { IntervalJob } from '../../platform/background/interval-job.js';
import { BackgroundGovernor, WorkGate } from '../../platform/background/background-governor.js';
import { DomainException, ErrorCode } from '../../platform/common/domain.exception.js';
import { RECONCILIATION_CONFIG } from './reconciliation.config.js';
import type { ReconciliationConfig } from './reconciliation.config.js';
import { isConnectionLoss } from '../../platform/database/pg-errors.js';
import { DeadlineExceededError, TransactionRunner } from '../../platform/database/transaction.js';
import { TransitionName } from '../../core/settlement-rules/settlement.types.js';
import { ReconciliationRepository } from './reconciliation.repository.js';
import { ReconciliationService } from './reconciliation.service.js';
import { SportApiClient } from './sportapi.client.js';

/**
 * Session-level advisory lock key held by the replica running a scheduled reconciliation
 * (the migrator uses 727_001).
 */
export const RECONCILIATION_LOCK_KEY = 727_002;

/** Counts of one scheduled run (also logged as one line). */
export interface ReconciliationRunSummary {
  /** true: another replica (or run) held the advisory lock; nothing was read. */
  skipped: boolean;
  candidates: number;
  /** New snapshots applied, of which `settled` settled or re-settled a generation. */
  applied: number;
  settled: number;
  unchanged: number;
  notFound: number;
  invalid: number;
  /** Coupons with pending inbox batches, or changing during every read: tried again next run. */
  deferred: number;
  failed: number;
  durationMs: number;
}

/** Transitions after which the coupon's current generation is settled by the read result. */
const SETTLING = new Set<TransitionName>([
  TransitionName.SETTLED,
  TransitionName.RESETTLED,
  TransitionName.RECALCULATION_SETTLED,
]);

/**
 * The scheduled reconciliation (CONTRACT §9, docs/reconciliation.md#scheduled-runs): every
 * `RECONCILE_INTERVAL`, one replica at a time (a session advisory lock), reads the coupons left
 * unsettled or flagged and applies each read through {@link ReconciliationService.readAndApply},
 * one coupon per permit of the background-work governor.
 */
@Injectable()
export class ScheduledReconciliation extends IntervalJob {
  /** The governor's permits of scheduled runs: one coupon at a time, none while the callback is slow. */
  private readonly gate: WorkGate;

  constructor(
    @Inject(RECONCILIATION_CONFIG) private readonly config: ReconciliationConfig,
    private readonly transactions: TransactionRunner,
    private readonly sportApi: SportApiClient,
    private readonly repository: ReconciliationRepository,
    private readonly reconciliation: ReconciliationService,
    scheduler: SchedulerRegistry,
    governor: BackgroundGovernor,
  ) {
    super(scheduler, new Logger('Reconciliation'), {
      name: 'reconciliation',
      what: 'reconciliation run',
      everyMs: config.intervalMs,
      offMessage: 'scheduled reconciliation is off (RECONCILE_INTERVAL=0)',
      runAtStart: false,
    });
    // Pure catch-up work: its floor is 0, where it still reads one coupon a second (the trickle).
    this.gate = governor.register('reconciliation', 1, 0);
  }

  override onApplicationBootstrap(): void {
    const { intervalMs, afterMs, batchSize } = this.config;
    if (!this.sportApi.enabled) {
      this.logger.log('polling SportAPI is disabled (SPORTAPI_BASE_URL unset): no scheduled reconciliation');
      return;
    }
    if (this.startRuns())
      this.logger.log(
        `scheduled reconciliation every ${intervalMs} ms (coupons unsettled for ${afterMs} ms or flagged, ${batchSize} per run)`,
      );
  }

  /**
   * One scheduled reconciliation run (what the interval calls; tests call it directly). Takes the
   * session advisory lock {@link RECONCILIATION_LOCK_KEY} on a dedicated connection with
   * `pg_try_advisory_lock`: when another replica holds it the run is skipped. Otherwise reads and
   * applies up to `RECONCILE_BATCH_SIZE` candidates one by one, each after a permit of the
   * background-work governor (one transaction each, a failure is
   * counted and the run goes on), stamps each coupon read (not after a transient failure, so it is
   * tried again next run) and logs one line with the counts. A run asked for directly is the run
   * in progress as a scheduled one is (a tick meanwhile is skipped, shutdown waits for it).
   * @throws DomainException POLLING_DISABLED when SPORTAPI_BASE_URL is unset.
   */
  async runOnce(): Promise<ReconciliationRunSummary> {
    if (!this.sportApi.enabled) {
      throw new DomainException(
        ErrorCode.POLLING_DISABLED,
        'polling SportAPI is disabled: SPORTAPI_BASE_URL is not configured',
      );
    }
    return this.track(this.lockedRun());
  }

  private async lockedRun(): Promise<ReconciliationRunSummary> {
    const started = Date.now();
    const summary: ReconciliationRunSummary = {
      skipped: false,
      candidates: 0,
      applied: 0,
      settled: 0,
      unchanged: 0,
      notFound: 0,
      invalid: 0,
      deferred: 0,
      failed: 0,
      durationMs: 0,
    };
    const run = await this.transactions.withSessionLock(RECONCILIATION_LOCK_KEY, () => this.work(summary));
    if ('skipped' in run) {
      summary.skipped = true;
      summary.durationMs = Date.now() - started;
      this.logger.log('reconciliation run skipped: another replica holds the lock');
      return summary;
    }
    summary.durationMs = Date.now() - started;
    this.logger.log(
      `reconciliation run: ${summary.candidates} candidates, ${summary.applied} applied ` +
        `(${summary.settled} settled), ${summary.unchanged} unchanged, ${summary.notFound} not found at SportAPI, ` +
        `${summary.invalid} invalid, ${summary.deferred} deferred (inbox pending), ${summary.failed} failed, ${summary.durationMs} ms`,
    );
    return summary;
  }

  private async work(summary: ReconciliationRunSummary): Promise<void> {
    const { afterMs, batchSize } = this.config;
    const codes = await this.transactions.run((tx) => this.repository.candidates(tx, afterMs, batchSize));
    summary.candidates = codes.length;
    for (const code of codes) {
      const release = await this.gate.acquire(this.stopping.signal);
      if (!release) break;
      try {
        const result = await this.reconciliation.readAndApply(code, null);
        if (result.outcome === 'unchanged') summary.unchanged++;
        else {
          summary.applied++;
          if (result.transition !== null && SETTLING.has(result.transition)) summary.settled++;
        }
      } catch (err) {
        const code_ = err instanceof DomainException ? err.code : undefined;
        if (code_ === ErrorCode.SPORTAPI_COUPON_NOT_FOUND) summary.notFound++;
        else if (code_ === ErrorCode.SPORTAPI_BAD_RESPONSE) summary.invalid++;
        else if (code_ === ErrorCode.COUPON_INBOX_PENDING || code_ === ErrorCode.COUPON_CHANGED_DURING_READ)
          summary.deferred++;
        else summary.failed++;
        if (
          code_ !== ErrorCode.SPORTAPI_UNAVAILABLE &&
          code_ !== ErrorCode.COUPON_INBOX_PENDING &&
          code_ !== ErrorCode.COUPON_CHANGED_DURING_READ &&
          code_ !== undefined
        ) {
          // A definite answer: read this coupon again only after RECONCILE_AFTER.
          await this.transactions
            .run((tx) => this.repository.markReconciled(tx, code))
            .catch(() => undefined);
        }
        if (!(err instanceof DomainException))
          this.logger.warn(`reconciliation of coupon ${code} failed: ${(err as Error).message}`);
        if (err instanceof DeadlineExceededError || isConnectionLoss(err)) {
          // The database is away or hung: give the run up (its lock is released) and leave the
          // remaining coupons to the next run rather than waiting out a deadline for each.
          this.logger.warn(`reconciliation run stopped after ${code}: the database did not answer in time`);
          break;
        }
      } finally {
        release();
      }
    }
  }
}
