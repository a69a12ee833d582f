import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { APP_CONFIG } from '../../config/configuration.js';
import type { AppConfig } from '../../config/configuration.js';
import { BackgroundGovernor } from '../../background/background-governor.js';
import { PollingLoops } from '../../common/polling-loops.js';
import { TransactionRunner } from '../../database/transaction.js';
import { parseBatch } from '../callback-body.parser.js';
import { CallbackService } from '../callback.service.js';
import { ClaimedInboxRow, InboxOutcome, InboxRepository } from './inbox.repository.js';
import { InboxService } from './inbox.service.js';

/**
 * The inbox workers of this process: `INBOX_CONCURRENCY` {@link PollingLoops}, each applying one
 * inbox row at a time ({@link applyNext}) until none is due, then sleeping
 * `INBOX_POLL_INTERVAL_MS` (woken early when this process accepts a batch or another of its
 * workers finishes a row). Every replica runs them; `FOR UPDATE SKIP LOCKED` and the per-coupon
 * order of the claim keep them apart. Started in inbox mode, and in inline mode too while rows are
 * left from an earlier inbox run.
 */
@Injectable()
export class InboxWorker implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('InboxWorker');
  private readonly loops: PollingLoops;
  private unsubscribe?: () => void;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly transactions: TransactionRunner,
    private readonly rows: InboxRepository,
    private readonly inbox: InboxService,
    private readonly callbacks: CallbackService,
    governor: BackgroundGovernor,
  ) {
    // Each apply waits for a permit of the governor. In inbox mode the apply is the main work, not
    // catch-up: it backs off to half its workers at most (docs/background-work.md).
    const max = config.inboxConcurrency;
    const gate = governor.register('inbox', max, config.callbackMode === 'inbox' ? Math.ceil(max / 2) : 1);
    this.loops = new PollingLoops(
      this.logger,
      () => this.applyNext(),
      (signal) => gate.acquire(signal),
    );
  }

  /**
   * Claims the next due inbox row ({@link InboxRepository.claimNext}) and applies it through
   * {@link CallbackService.applyClaimed} (the batch as this process parsed it when it accepted it,
   * else its bytes read and parsed) in ONE transaction that also marks it done: never
   * applied twice nor lost. A failed apply is rolled back to a savepoint and counted in that
   * transaction; when the transaction itself fails (connection lost, deadline), in a new one.
   * @returns false when no row was due; true when one was applied or its failure recorded.
   * @throws only when claiming itself failed (e.g. the database is down).
   */
  async applyNext(): Promise<boolean> {
    let claimed: ClaimedInboxRow | undefined;
    try {
      return await this.transactions.run(
        async (tx) => {
          claimed = undefined;
          const row = await this.rows.claimNext(tx);
          if (!row) return false;
          claimed = row;
          let outcome: InboxOutcome;
          try {
            outcome = await tx.savepoint('inbox_apply', async () => {
              // Parsed when this process accepted it; else read and parsed here (another replica's).
              const parsed =
                this.inbox.takeParsed(row.id) ??
                parseBatch(await this.rows.payloadOf(tx, row.id), this.config.currencies.maxMinorUnits);
              const batch = { ...parsed, inboxId: row.id };
              return (await this.callbacks.applyClaimed(tx, batch)) === 'claimed' ? 'processed' : 'duplicate';
            });
          } catch (err) {
            // The apply is undone; the failure is counted while this worker still holds the row.
            await this.inbox.recordFailure(tx, row, err);
            return true;
          }
          await tx.commitWith({ done: this.rows.markDoneStatement(row.id, outcome) });
          return true;
        },
        { deadline: Date.now() + this.config.callbackDeadlineMs },
      );
    } catch (err) {
      if (!claimed) throw err;
      const row = claimed;
      await this.transactions
        .run((tx) => this.inbox.recordFailure(tx, row, err), { deadline: Date.now() + 2000, retries: 1 })
        .catch((e: unknown) =>
          // The row stays pending and due: it is claimed and tried again.
          this.logger.error(`could not record the failure of inbox row ${row.id}: ${(e as Error).message}`),
        );
      return true;
    }
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.callbackMode === 'inbox') return this.start();
    // Inline mode: a batch handed to the inbox (earlier rows of its coupons pending, see
    // CallbackService.process) starts the workers too.
    this.unsubscribe = this.inbox.onAccepted(() => this.start());
    const left = await this.inbox.pendingCount().catch(() => 0);
    if (left > 0) {
      this.logger.warn(`CALLBACK_MODE=inline but ${left} inbox row(s) are pending: applying them`);
      this.start();
    }
  }

  async onModuleDestroy(): Promise<void> {
    this.unsubscribe?.();
    await this.loops.stop();
  }

  /** Ends the current sleep of every idle worker. */
  wake(): void {
    this.loops.wake();
  }

  private start(): void {
    if (this.loops.started) return this.wake();
    this.unsubscribe?.();
    this.unsubscribe = this.inbox.onAccepted(() => this.wake());
    this.loops.start(this.config.inboxConcurrency, this.config.inboxPollIntervalMs);
  }
}
