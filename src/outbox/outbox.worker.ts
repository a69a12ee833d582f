import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { BackgroundGovernor } from '../background/background-governor.js';
import { PollingLoops } from '../common/polling-loops.js';
import { APP_CONFIG } from '../config/configuration.js';
import type { AppConfig } from '../config/configuration.js';
import { TransactionRunner } from '../database/transaction.js';
import { checkedDelivery, excerpt, nextStep, walletTransactionOf } from './outbox-rules.js';
import { ClaimedOutboxRow, OutboxRepository, RecordedAttempt } from './outbox.repository.js';
import { WalletConnector, WalletDelivery, WalletTransaction } from '../wallet/wallet-connector.js';
import { WalletMetrics } from './outbox-metrics.js';

/** Milliseconds given to each short transaction of a claim (claim, bodies, record). */
const TRANSACTION_DEADLINE_MS = 5000;

/**
 * The outbox's delivery workers (docs/wallet.md): `WALLET_CONCURRENCY` {@link PollingLoops} per
 * process, in every replica, each delivering up to `WALLET_CLAIM_SIZE` rows at a time
 * ({@link deliverNext}). No database transaction is open during the network calls: rows are
 * claimed (leased) in one, delivered, and their attempts recorded in another. Started only when a
 * connector is configured.
 */
@Injectable()
export class OutboxWorker implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('OutboxWorker');
  private readonly loops: PollingLoops;
  /** A claimed row's lease: longer than any attempt can take, so no two workers hold one row. */
  private readonly leaseMs: number;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly transactions: TransactionRunner,
    private readonly outbox: OutboxRepository,
    private readonly connector: WalletConnector,
    private readonly metrics: WalletMetrics,
    governor: BackgroundGovernor,
  ) {
    this.leaseMs = 2 * config.wallet.timeoutMs + 2 * TRANSACTION_DEADLINE_MS;
    // Each claim waits for a permit of the governor: pushes back off while the callback is slow.
    const gate = governor.register('wallet', config.wallet.concurrency);
    this.loops = new PollingLoops(
      this.logger,
      () => this.deliverNext(),
      (signal) => gate.acquire(signal),
    );
  }

  onApplicationBootstrap(): void {
    this.loops.start(this.config.wallet.concurrency, this.config.wallet.pollIntervalMs);
    this.logger.log(
      `delivering ${this.config.wallet.operationTypes.join(', ')} operations through the ${this.connector.name} wallet connector`,
    );
  }

  async onModuleDestroy(): Promise<void> {
    await this.loops.stop();
  }

  /** Ends the sleep of idle workers (after an operator released a row or resumed delivery). */
  wake(): void {
    this.loops.wake();
  }

  /**
   * Claims up to `WALLET_CLAIM_SIZE` due rows, heads of distinct accounts (see
   * {@link OutboxRepository.claimStatement}), and stores the request bodies of first claims in the
   * same transaction, before anything is sent (every later attempt, in any process, sends those
   * bytes); hands the transactions to the connector with no transaction open: each alone, all in
   * parallel, or with `WALLET_BATCH_SIZE` above 1 and a connector that has the batch call, in
   * arrays of up to that many (each call at most `WALLET_TIMEOUT_MS` + 1 s, then its `signal` is
   * aborted); and records every attempt with the step {@link nextStep} decides, in one
   * transaction, or, when that fails, each in its own. A row whose record fails is delivered again
   * after its lease with the same key and body (the wallet applies a transaction id once). Two
   * short transactions per claim, whatever its size (docs/wallet.md).
   * @returns false when no row was due.
   */
  async deliverNext(): Promise<boolean> {
    const requests = await this.transactions.run(
      async (tx) => {
        const { claimed } = await tx.send({
          claimed: this.outbox.claimStatement(this.leaseMs, this.config.wallet.claimSize),
        });
        const built = claimed.rows.map((row) => ({ row, ...this.requestOf(row) }));
        const first = built.filter((r) => !r.row.body).map((r) => ({ id: r.row.id, body: r.body }));
        if (first.length) await tx.commitWith({ bodies: this.outbox.bodiesStatement(first) });
        return built;
      },
      { deadline: Date.now() + TRANSACTION_DEADLINE_MS },
    );
    if (!requests.length) return false;
    const batchSize = this.config.wallet.batchSize;
    const calls: Promise<RecordedAttempt[]>[] = [];
    if (batchSize > 1 && this.connector.deliverMany) {
      for (let i = 0; i < requests.length; i += batchSize)
        calls.push(this.attemptBatch(requests.slice(i, i + batchSize)));
    } else {
      for (const r of requests) calls.push(this.attempt(r.row, r.transaction, r.body).then((a) => [a]));
    }
    const attempts = (await Promise.all(calls)).flat();
    if (await this.record(attempts)) return true;
    // One row's record may fail alone (its coupon's flag waiting on a lock): record each by
    // itself, so that the others are not delivered again after their leases.
    if (attempts.length > 1) for (const a of attempts) await this.record([a]);
    return true;
  }

  /**
   * Records `attempts` in one transaction. @returns false when that failed (logged): the rows are
   * delivered again after their leases, with the same keys and bodies.
   */
  private async record(attempts: RecordedAttempt[]): Promise<boolean> {
    try {
      await this.transactions.run((tx) => tx.commitWith(this.outbox.recordStatements(attempts)), {
        deadline: Date.now() + TRANSACTION_DEADLINE_MS,
      });
      for (const a of attempts) this.metrics.attempted(a.outcome);
      return true;
    } catch (err) {
      const rows = attempts.map((a) => `${a.row.id} attempt ${a.row.attempt}`).join(', ');
      this.logger.error(
        `outbox row ${rows} not recorded (${(err as Error).message})${attempts.length > 1 ? ': recording each by itself' : ': delivered again after its lease'}`,
      );
      return false;
    }
  }

  /** One delivery attempt of a claimed row: the connector's answer and the row's next step, logged. */
  private async attempt(
    row: ClaimedOutboxRow,
    transaction: WalletTransaction,
    body: Buffer,
  ): Promise<RecordedAttempt> {
    const requestId = randomUUID();
    const startedAt = new Date();
    const delivery = await this.bounded<WalletDelivery>(
      async (signal) =>
        this.connector
          .deliver({ transaction, body, requestId, outboxId: row.id, attempt: row.attempt, signal })
          .then((answer: unknown) => checkedDelivery(answer, this.connector.name)),
      (reason) => ({ outcome: 'retry', reason }),
    );
    return this.recorded(row, delivery, requestId, startedAt);
  }

  /**
   * One batch call of claimed rows (distinct accounts, docs/wallet-http-contract.md#the-batch-call):
   * each row's attempt with its element's answer, all under the call's request id.
   */
  private async attemptBatch(
    requests: { row: ClaimedOutboxRow; transaction: WalletTransaction; body: Buffer }[],
  ): Promise<RecordedAttempt[]> {
    const requestId = randomUUID();
    const startedAt = new Date();
    const items = requests.map((r) => ({
      transaction: r.transaction,
      body: r.body,
      outboxId: r.row.id,
      attempt: r.row.attempt,
    }));
    const deliveries = await this.bounded<WalletDelivery[]>(
      async (signal) => {
        const answers = await (this.connector.deliverMany as NonNullable<WalletConnector['deliverMany']>)({
          items,
          requestId,
          signal,
        });
        if (!Array.isArray(answers) || answers.length !== items.length)
          return items.map((): WalletDelivery => ({
            outcome: 'retry',
            reason: `the ${this.connector.name} connector answered ${Array.isArray(answers) ? answers.length : 'no'} results for ${items.length} transactions`,
          }));
        return answers.map((a) => checkedDelivery(a, this.connector.name));
      },
      (reason) => items.map((): WalletDelivery => ({ outcome: 'retry', reason })),
    );
    return requests.map((r, i) => this.recorded(r.row, deliveries[i], requestId, startedAt));
  }

  /** The attempt to record for `row` after `delivery`, with its next step; logged. */
  private recorded(
    row: ClaimedOutboxRow,
    delivery: WalletDelivery,
    requestId: string,
    startedAt: Date,
  ): RecordedAttempt {
    const durationMs = Date.now() - startedAt.getTime();
    const step = nextStep(
      delivery,
      { attempt: row.attempt, retryFrom: row.retryFrom, now: new Date() },
      this.config.wallet,
    );
    const answer =
      delivery.outcome === 'delivered'
        ? (delivery.answer ?? null)
        : excerpt(`${delivery.reason}${delivery.answer ? `: ${delivery.answer}` : ''}`);
    const line = `outbox row ${row.id} (${row.operationKey}) attempt ${row.attempt} request ${requestId}: ${delivery.outcome}${delivery.status ? ` ${delivery.status}` : ''} in ${durationMs} ms, ${step.kind}`;
    if (step.kind === 'delivered') this.logger.debug(line);
    else if (step.kind === 'retry') this.logger.warn(`${line} in ${step.delayMs} ms`);
    else this.logger.error(`${line}: ${step.reason}`);
    return {
      row,
      requestId,
      connector: this.connector.name,
      startedAt,
      durationMs,
      outcome: delivery.outcome,
      httpStatus: delivery.status ?? null,
      answer,
      step,
    };
  }

  /** The row's stored body, or the one built from its operation (stored at its first claim). */
  private requestOf(row: ClaimedOutboxRow): { transaction: WalletTransaction; body: Buffer } {
    if (row.body)
      return { transaction: JSON.parse(row.body.toString('utf8')) as WalletTransaction, body: row.body };
    const transaction = walletTransactionOf(row, (amount, currency) =>
      this.config.currencies.format(amount, currency),
    );
    return { transaction, body: Buffer.from(JSON.stringify(transaction), 'utf8') };
  }

  /**
   * `call`'s answer, or `fallback` with the reason when it throws or takes over
   * `WALLET_TIMEOUT_MS` + 1 s, whose `signal` is then aborted so that the connector lets go of its
   * connection rather than reading on in the background (the attempt counts as `retry`).
   */
  private async bounded<T>(
    call: (signal: AbortSignal) => Promise<T>,
    fallback: (reason: string) => T,
  ): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const limit = this.config.wallet.timeoutMs + 1000;
    const abort = new AbortController();
    try {
      return await Promise.race([
        call(abort.signal),
        new Promise<T>((resolve) => {
          timer = setTimeout(() => {
            abort.abort();
            resolve(fallback(`no answer from the connector in ${limit} ms`));
          }, limit);
        }),
      ]);
    } catch (err) {
      return fallback(
        excerpt(
          `the ${this.connector.name} connector threw: ${err instanceof Error ? err.message : String(err)}`,
        ),
      );
    } finally {
      clearTimeout(timer);
    }
  }
}
