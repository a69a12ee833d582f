import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { PollingLoops } from '../common/polling-loops.js';
import { APP_CONFIG } from '../config/configuration.js';
import type { AppConfig } from '../config/configuration.js';
import { TransactionRunner } from '../database/transaction.js';
import { checkedDelivery, excerpt, nextStep, walletTransactionOf } from './outbox-rules.js';
import { ClaimedOutboxRow, OutboxRepository } from './outbox.repository.js';
import { WalletConnector, WalletDelivery, WalletTransaction } from './wallet-connector.js';
import { WalletMetrics } from './wallet-metrics.js';

/** Milliseconds given to each of the two short transactions of a delivery. */
const TRANSACTION_DEADLINE_MS = 5000;

/**
 * The outbox's delivery workers (docs/wallet.md): `WALLET_CONCURRENCY` {@link PollingLoops} per
 * process, in every replica, each delivering one row at a time ({@link deliverNext}). No database
 * transaction is open during the network call: a row is claimed (leased) in one, delivered, and
 * its attempt recorded in another. Started only when a connector is configured.
 */
@Injectable()
export class OutboxWorker implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('OutboxWorker');
  private readonly loops = new PollingLoops(this.logger, () => this.deliverNext());
  /** A claimed row's lease: longer than any attempt can take, so no two workers hold one row. */
  private readonly leaseMs: number;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly transactions: TransactionRunner,
    private readonly outbox: OutboxRepository,
    private readonly connector: WalletConnector,
    private readonly metrics: WalletMetrics,
  ) {
    this.leaseMs = 2 * config.wallet.timeoutMs + 2 * TRANSACTION_DEADLINE_MS;
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
   * Claims the next due row (see {@link OutboxRepository.claimStatement}); on its first claim
   * stores the request body before anything is sent (every later attempt, in any process, sends
   * those bytes); hands the transaction to the connector (at most `WALLET_TIMEOUT_MS` + 1 s, then
   * its `signal` is aborted); and records the attempt with the step {@link nextStep} decides. When
   * recording fails, the lease runs out and the row is delivered again with the same key and body
   * (the wallet applies a transaction id once).
   * @returns false when no row was due.
   */
  async deliverNext(): Promise<boolean> {
    const { claimed } = await this.transactions.run(
      (tx) => tx.commitWith({ claimed: this.outbox.claimStatement(this.leaseMs) }),
      { deadline: Date.now() + TRANSACTION_DEADLINE_MS },
    );
    const row = claimed.rows[0];
    if (!row) return false;
    const { transaction, body } = this.requestOf(row);
    if (!row.body)
      await this.transactions.run((tx) => tx.commitWith({ body: this.outbox.bodyStatement(row.id, body) }), {
        deadline: Date.now() + TRANSACTION_DEADLINE_MS,
      });
    const requestId = randomUUID();
    const startedAt = new Date();
    const delivery = await this.deliver(row, transaction, body, requestId);
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
    try {
      await this.transactions.run(
        (tx) =>
          tx.commitWith(
            this.outbox.recordStatements({
              row,
              requestId,
              connector: this.connector.name,
              startedAt,
              durationMs,
              outcome: delivery.outcome,
              httpStatus: delivery.status ?? null,
              answer,
              step,
            }),
          ),
        { deadline: Date.now() + TRANSACTION_DEADLINE_MS },
      );
      this.metrics.attempted(delivery.outcome);
    } catch (err) {
      this.logger.error(
        `outbox row ${row.id} attempt ${row.attempt} not recorded (${(err as Error).message}): delivered again after its lease`,
      );
    }
    return true;
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
   * The connector's answer, checked ({@link checkedDelivery}); a throw is `retry`, and so is an
   * attempt over `WALLET_TIMEOUT_MS` + 1 s, whose `signal` is then aborted so that the connector
   * lets go of its connection rather than reading on in the background.
   */
  private async deliver(
    row: ClaimedOutboxRow,
    transaction: WalletTransaction,
    body: Buffer,
    requestId: string,
  ): Promise<WalletDelivery> {
    let timer: NodeJS.Timeout | undefined;
    const limit = this.config.wallet.timeoutMs + 1000;
    const abort = new AbortController();
    try {
      const answered = await Promise.race([
        this.connector.deliver({
          transaction,
          body,
          requestId,
          outboxId: row.id,
          attempt: row.attempt,
          signal: abort.signal,
        }),
        new Promise<WalletDelivery>((resolve) => {
          timer = setTimeout(() => {
            abort.abort();
            resolve({ outcome: 'retry', reason: `no answer from the connector in ${limit} ms` });
          }, limit);
        }),
      ]);
      return checkedDelivery(answered, this.connector.name);
    } catch (err) {
      return {
        outcome: 'retry',
        reason: excerpt(
          `the ${this.connector.name} connector threw: ${err instanceof Error ? err.message : String(err)}`,
        ),
      };
    } finally {
      clearTimeout(timer);
    }
  }
}
