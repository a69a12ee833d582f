import { SpanKind } from '@opentelemetry/api';
import { tracedDelivery } from '../../platform/observability/tracing.js';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { MONEY_CONFIG } from '../../core/ledger/money.config.js';
import type { MoneyConfig } from '../../core/ledger/money.config.js';
import { INBOX_CONFIG } from './inbox.config.js';
import type { InboxConfig } from './inbox.config.js';
import { BackgroundGovernor } from '../../platform/background/background-governor.js';
import { PollingLoops, StepFound } from '../../platform/background/polling-loops.js';
import { TransactionRunner } from '../../platform/database/transaction.js';
import { LedgerService } from '../../core/ledger/ledger.service.js';
import type { Posting } from '../../core/ledger/ledger.types.js';
import { parseBatch } from '../../core/settlement/batch-parser.js';
import { SnapshotSource } from '../../core/settlement-rules/settlement.types.js';
import { SettlementService } from '../../core/settlement/settlement.service.js';
import { ClaimedInboxRow, InboxOutcome, InboxRepository } from './inbox.repository.js';
import { InboxService } from './inbox.service.js';

/**
 * Inbox rows one worker applies in one transaction at most (docs/inbox-mode.md#workers): fewer
 * commits, claims and posting statements per batch; several only when that many are due.
 */
export const ROWS_PER_TRANSACTION = 4;

/**
 * The inbox workers of this process: `INBOX_CONCURRENCY` {@link PollingLoops}, each applying up to
 * {@link ROWS_PER_TRANSACTION} inbox rows at a time ({@link applyNext}) until none is due, then sleeping
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
  /** Claims of one row each still to make after a transaction of several failed. */
  private oneByOne = 0;

  constructor(
    @Inject(INBOX_CONFIG) private readonly config: InboxConfig,
    @Inject(MONEY_CONFIG) private readonly money: MoneyConfig,
    private readonly transactions: TransactionRunner,
    private readonly rows: InboxRepository,
    private readonly inbox: InboxService,
    private readonly settlement: SettlementService,
    private readonly ledger: LedgerService,
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
   * Claims up to {@link ROWS_PER_TRANSACTION} due inbox rows ({@link InboxRepository.claimDue}:
   * pairwise disjoint coupons) and applies each through {@link SettlementService.apply} (the
   * batch as this process parsed it when it accepted it, else its bytes read and parsed) under its
   * own savepoint, then posts all their postings in ONE posting statement (players locked once, in
   * id order: no deadlock between workers) and marks them done with COMMIT: never applied twice
   * nor lost. A row whose apply fails is rolled back to its savepoint and its failure counted in
   * that transaction; the others go on. When the transaction itself fails (the common posting,
   * a lost connection, the deadline), its rows are tried again one per transaction, where a
   * failure is counted for its row (in a new transaction when the transaction itself is lost).
   * @returns false when no row was due; true when rows were applied or their failures recorded,
   * `'more'` when as many as one claim takes (more may be due: {@link PollingLoops}).
   * @throws only when claiming itself failed (e.g. the database is down).
   */
  async applyNext(): Promise<StepFound> {
    const size = this.oneByOne > 0 ? 1 : ROWS_PER_TRANSACTION;
    let claimed: ClaimedInboxRow[] = [];
    try {
      const found = await this.transactions.run(async (tx) => {
        claimed = [];
        const rows = await this.rows.claimDue(tx, size);
        if (!rows.length) return false;
        claimed = rows;
        const done: { id: string; outcome: InboxOutcome }[] = [];
        const postings: Posting[] = [];
        for (const row of rows) {
          try {
            // Tracing on: the apply joins the trace of the delivery that accepted the row.
            const outcome = await tracedDelivery(
              'inbox.apply',
              [row.traceparent],
              () =>
                tx.savepoint('inbox_apply', async () => {
                  // Parsed when this process accepted it; else read and parsed here (another replica's).
                  const parsed =
                    this.inbox.takeParsed(row.id) ??
                    parseBatch(await this.rows.payloadOf(tx, row.id), this.money.currencies.maxMinorUnits);
                  const batch = { ...parsed, inboxId: row.id };
                  const own: Posting[] = [];
                  const { claim } = await this.settlement.apply(tx, batch, {
                    source: SnapshotSource.CALLBACK,
                    postingsInto: own,
                  });
                  postings.push(...own);
                  return claim === 'claimed' ? 'processed' : 'duplicate';
                }),
              { 'inbox.row_id': row.id },
              SpanKind.CONSUMER,
            );
            done.push({ id: row.id, outcome });
          } catch (err) {
            // The apply is undone; the failure is counted while this worker still holds the row.
            await this.inbox.recordFailure(tx, row, err);
          }
        }
        await tx.commitWith({
          ...(postings.length ? this.ledger.postingStatements(tx, postings) : {}),
          ...(done.length ? { done: this.rows.markDoneStatement(done) } : {}),
        });
        return rows.length >= size ? ('more' as const) : true;
      });
      if (size === 1 && this.oneByOne > 0) this.oneByOne--;
      return found;
    } catch (err) {
      if (!claimed.length) throw err;
      if (claimed.length > 1) {
        // Nothing of it committed: its rows again, one per transaction, where a failure is its own.
        this.logger.warn(
          `inbox rows ${claimed.map((r) => r.id).join(', ')} applied together failed (${(err as Error).message}): trying them one by one`,
        );
        this.oneByOne = claimed.length;
        return true;
      }
      if (this.oneByOne > 0) this.oneByOne--;
      const row = claimed[0];
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
