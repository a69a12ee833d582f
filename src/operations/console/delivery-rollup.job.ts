import { Inject, Injectable, Logger } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { IntervalJob } from '../../platform/background/interval-job.js';
import { CONSOLE_CONFIG } from './console.config.js';
import type { ConsoleConfig } from './console.config.js';
import { TransactionRunner } from '../../platform/database/transaction.js';
import { OverviewRepository } from './overview.repository.js';

/**
 * Session advisory lock held by the replica running the delivery rollup (docs/architecture.md,
 * "Locks that are not rows").
 */
export const DELIVERY_ROLLUP_LOCK_KEY = 727_004;

/** Minutes behind the current one that the rollup leaves to the live count (attempts still being written). */
const LAG_MINUTES = 2;
/** Minutes counted per transaction (a first run counts a day). */
const CHUNK_MINUTES = 60;
/** Days of minutes kept. */
const KEEP_DAYS = 8;

/**
 * The overview's rollup job (docs/api.md#overview): every `DELIVERY_ROLLUP_INTERVAL`, one replica
 * at a time (`pg_try_advisory_lock(727004)`), counts the delivery attempts of each closed minute by
 * outcome into `delivery_minutes`, so `GET /overview` reads at most a few minutes of raw attempts.
 */
@Injectable()
export class DeliveryRollupJob extends IntervalJob {
  constructor(
    @Inject(CONSOLE_CONFIG) config: ConsoleConfig,
    private readonly transactions: TransactionRunner,
    private readonly overview: OverviewRepository,
    scheduler: SchedulerRegistry,
  ) {
    super(scheduler, new Logger('DeliveryRollup'), {
      name: 'delivery-rollup',
      what: 'delivery rollup',
      everyMs: config.rollupIntervalMs,
    });
  }

  /**
   * One run (what the interval calls; tests call it directly): the minutes from a few before the
   * last one written (or a day ago) to {@link LAG_MINUTES} before now, an hour per transaction,
   * then minutes older than {@link KEEP_DAYS} days are dropped.
   * @returns minutes written, or `skipped` when another replica holds the lock.
   */
  async runOnce(): Promise<number | 'skipped'> {
    const run = await this.transactions.withSessionLock(DELIVERY_ROLLUP_LOCK_KEY, async () => {
      const { start, cutoff } = await this.transactions.run((tx) =>
        this.overview.rollupRange(tx, LAG_MINUTES),
      );
      let written = 0;
      for (let from = start.getTime(); from < cutoff.getTime(); from += CHUNK_MINUTES * 60_000) {
        const to = new Date(Math.min(from + CHUNK_MINUTES * 60_000, cutoff.getTime()));
        written += await this.transactions.run((tx) => this.overview.rollUp(tx, new Date(from), to));
      }
      await this.transactions.run((tx) => this.overview.prune(tx, KEEP_DAYS));
      return written;
    });
    return 'skipped' in run ? 'skipped' : run.result;
  }
}
