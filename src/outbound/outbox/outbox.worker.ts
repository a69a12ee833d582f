import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import type { WorkGate } from '../../platform/background/background-governor.js';
import { PollingLoops, StepFound } from '../../platform/background/polling-loops.js';
import { TransactionRunner } from '../../platform/database/transaction.js';
import { checkedDelivery, excerpt, nextStep, permanentFailure } from './outbox-rules.js';
import { ClaimedOutboxRow, OutboxRepository, RecordedAttempt } from './outbox.repository.js';
import type { OutboxDeliverer, OutboxDelivery, OutboxMessage } from './outbox.types.js';
import type { OutboxMetrics } from './outbox-metrics.js';
import type { Attributes } from '@opentelemetry/api';
import { activeTraceId, tracedDelivery } from '../../platform/observability/tracing.js';

/** Milliseconds given to each short transaction of a claim (claim, bodies, record). */
const TRANSACTION_DEADLINE_MS = 5000;

/**
 * The delivery workers of one outbox destination (docs/wallet.md): `concurrency`
 * {@link PollingLoops} per process, in every replica, each delivering up to `claimSize` rows at a
 * time ({@link deliverNext}), each claim after a permit of the background-work governor (`gate`).
 * No database transaction is open during the network calls: rows are claimed (leased) in one,
 * delivered, and their attempts recorded in another. The destination's module starts and stops it.
 */
export class OutboxWorker {
  private readonly logger: Logger;
  private readonly loops: PollingLoops;
  /** A claimed row's lease: longer than any attempt can take, so no two workers hold one row. */
  private readonly leaseMs: number;

  constructor(
    private readonly outbox: OutboxRepository,
    private readonly deliverer: OutboxDeliverer,
    private readonly transactions: TransactionRunner,
    private readonly metrics: OutboxMetrics,
    gate: WorkGate,
  ) {
    const { name, settings } = outbox.destination;
    this.logger = new Logger(name === 'wallet' ? 'OutboxWorker' : `OutboxWorker ${name}`);
    this.leaseMs = 2 * settings.timeoutMs + 2 * TRANSACTION_DEADLINE_MS;
    this.loops = new PollingLoops(
      this.logger,
      () => this.deliverNext(),
      (signal) => gate.acquire(signal),
    );
  }

  private get settings() {
    return this.outbox.destination.settings;
  }

  /** Starts the workers (the destination's module, at bootstrap). */
  start(): void {
    this.loops.start(this.settings.concurrency, this.settings.pollIntervalMs);
    this.logger.log(
      `delivering ${this.outbox.destination.operationTypes.join(', ')} operations through ${this.deliverer.name}`,
    );
  }

  /** Stops them, letting claims in flight finish. */
  async stop(): Promise<void> {
    await this.loops.stop();
  }

  /** Ends the sleep of idle workers (after an operator released a row or resumed delivery). */
  wake(): void {
    this.loops.wake();
  }

  /**
   * Claims up to `claimSize` due rows, heads of distinct accounts (see
   * {@link OutboxRepository.claimStatement}), and stores the request bodies of first claims in the
   * same transaction, before anything is sent (every later attempt, in any process, sends those
   * bytes); hands the transactions to the connector with no transaction open: each alone, all in
   * parallel, or with `WALLET_BATCH_SIZE` above 1 and a connector that has the batch call, in
   * arrays of up to that many (each call at most `WALLET_TIMEOUT_MS` + 1 s, then its `signal` is
   * aborted); and records every attempt with the step {@link nextStep} decides, in one
   * transaction, or, when that fails, each in its own. A row whose record fails is delivered again
   * after its lease with the same key and body (the wallet applies a transaction id once). Two
   * short transactions per claim, whatever its size (docs/wallet.md).
   * @returns false when no row was due; `'more'` when the claim was full (more may be due: another
   * worker joins, {@link PollingLoops}); else true (this worker claims again at once: the next
   * rows of the accounts it delivered are due now).
   */
  async deliverNext(): Promise<StepFound> {
    const requests = await this.transactions.run(
      async (tx) => {
        const { claimed } = await tx.send({
          claimed: this.outbox.claimStatement(this.leaseMs, this.settings.claimSize),
        });
        const built = claimed.rows.map((row) => this.messageOf(row));
        const first = built.filter((r) => !r.row.body).map((r) => ({ id: r.row.id, body: r.body }));
        if (first.length) await tx.commitWith({ bodies: this.outbox.bodiesStatement(first) });
        return built;
      },
      { deadline: Date.now() + TRANSACTION_DEADLINE_MS },
    );
    if (!requests.length) return false;
    const batchSize = this.settings.batchSize;
    const calls: Promise<RecordedAttempt[]>[] = [];
    if (batchSize > 1 && this.deliverer.deliverMany) {
      for (let i = 0; i < requests.length; i += batchSize)
        calls.push(this.attemptBatch(requests.slice(i, i + batchSize)));
    } else {
      for (const r of requests) calls.push(this.attempt(r).then((a) => [a]));
    }
    const attempts = (await Promise.all(calls)).flat();
    const found = requests.length >= this.settings.claimSize ? 'more' : true;
    if (await this.record(attempts)) return found;
    // One row's record may fail alone (its coupon's flag waiting on a lock): record each by
    // itself, so that the others are not delivered again after their leases.
    if (attempts.length > 1) for (const a of attempts) await this.record([a]);
    return found;
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
      for (const a of attempts) this.metrics.attempted(this.outbox.destination.name, a.outcome);
      return true;
    } catch (err) {
      const rows = attempts.map((a) => `${a.row.id} attempt ${a.row.attempt}`).join(', ');
      this.logger.error(
        `outbox row ${rows} not recorded (${(err as Error).message})${attempts.length > 1 ? ': recording each by itself' : ': delivered again after its lease'}`,
      );
      return false;
    }
  }

  /** One delivery attempt of a claimed row: the destination's answer and the row's next step, logged. */
  private attempt(message: OutboxMessage & { row: ClaimedOutboxRow }): Promise<RecordedAttempt> {
    return tracedDelivery(this.spanName, [message.row.traceparent], () => this.attemptNow(message), {
      ...this.spanAttributes(1),
      'outbox.row_id': message.row.id,
      'outbox.attempt': message.row.attempt,
    });
  }

  /** The receiver's span of one delivery (docs/operating.md, "Traces"). */
  private get spanName(): string {
    return this.outbox.destination.name === 'wallet' ? 'wallet.push' : 'events.publish';
  }

  private spanAttributes(count: number): Attributes {
    const name = this.outbox.destination.name;
    return name === 'wallet'
      ? { 'wallet.connector': this.deliverer.name, 'messaging.batch.message_count': count }
      : {
          'messaging.system': name,
          'messaging.operation.type': 'send',
          'messaging.batch.message_count': count,
        };
  }

  private async attemptNow(message: OutboxMessage & { row: ClaimedOutboxRow }): Promise<RecordedAttempt> {
    const requestId = randomUUID();
    const startedAt = new Date();
    const delivery = await this.bounded<OutboxDelivery>(
      async (signal) =>
        this.deliverer
          .deliver(message, requestId, signal)
          .then((answer: unknown) => checkedDelivery(answer, this.deliverer.name)),
      (reason) => reason,
    );
    return this.recorded(message.row, delivery, requestId, startedAt);
  }

  /**
   * One batch call of claimed rows (distinct accounts, docs/wallet-http-contract.md#the-batch-call):
   * each row's attempt with its element's answer, all under the call's request id.
   */
  private attemptBatch(messages: (OutboxMessage & { row: ClaimedOutboxRow })[]): Promise<RecordedAttempt[]> {
    return tracedDelivery(
      this.spanName,
      messages.map((m) => m.row.traceparent),
      () => this.attemptBatchNow(messages),
      this.spanAttributes(messages.length),
    );
  }

  private async attemptBatchNow(
    messages: (OutboxMessage & { row: ClaimedOutboxRow })[],
  ): Promise<RecordedAttempt[]> {
    const requestId = randomUUID();
    const startedAt = new Date();
    const name = this.deliverer.name;
    const deliveries = await this.bounded<OutboxDelivery[]>(
      async (signal) => {
        const answers = await (this.deliverer.deliverMany as NonNullable<OutboxDeliverer['deliverMany']>)(
          messages,
          requestId,
          signal,
        );
        if (!Array.isArray(answers) || answers.length !== messages.length)
          return messages.map((): OutboxDelivery => ({
            outcome: 'retry',
            reason: `the ${name} connector answered ${Array.isArray(answers) ? answers.length : 'no'} results for ${messages.length} transactions`,
          }));
        return answers.map((a) => checkedDelivery(a, name));
      },
      (reason) => messages.map(() => reason),
    );
    return messages.map((m, i) => this.recorded(m.row, deliveries[i], requestId, startedAt));
  }

  /** The attempt to record for `row` after `delivery`, with its next step; logged. */
  private recorded(
    row: ClaimedOutboxRow,
    delivery: OutboxDelivery,
    requestId: string,
    startedAt: Date,
  ): RecordedAttempt {
    const durationMs = Date.now() - startedAt.getTime();
    const step = nextStep(
      delivery,
      { attempt: row.attempt, retryFrom: row.retryFrom, now: new Date() },
      this.settings,
      this.outbox.destination.name,
    );
    const answer =
      delivery.outcome === 'delivered'
        ? (delivery.answer ?? null)
        : excerpt(`${delivery.reason}${delivery.answer ? `: ${delivery.answer}` : ''}`);
    // e.g. "…: retry 503 after 48 ms; next attempt in 1000 ms", "…: refused 422 after 12 ms; park: …".
    const line = `outbox row ${row.id} (${row.operationKey}) attempt ${row.attempt} request ${requestId}: ${delivery.outcome}${delivery.status ? ` ${delivery.status}` : ''} after ${durationMs} ms`;
    if (step.kind === 'delivered') this.logger.debug(line);
    else if (step.kind === 'retry') this.logger.warn(`${line}; next attempt in ${step.delayMs} ms`);
    else this.logger.error(`${line}; ${step.kind}: ${step.reason}`);
    return {
      row,
      requestId,
      connector: this.deliverer.name,
      startedAt,
      durationMs,
      outcome: delivery.outcome,
      httpStatus: delivery.status ?? null,
      answer,
      step,
      traceId: activeTraceId(),
    };
  }

  /** The row's message: its stored body, or the one built from its operation (stored at its first claim). */
  private messageOf(row: ClaimedOutboxRow): OutboxMessage & { row: ClaimedOutboxRow } {
    const common = { row, outboxId: row.id, attempt: row.attempt, operation: row };
    if (row.body)
      return { ...common, message: JSON.parse(row.body.toString('utf8')) as unknown, body: row.body };
    const message = this.outbox.destination.messageOf(row);
    return { ...common, message, body: Buffer.from(JSON.stringify(message), 'utf8') };
  }

  /**
   * `call`'s answer, or `fallback` with a `retry` when it throws or takes over
   * `WALLET_TIMEOUT_MS` + 1 s, whose `signal` is then aborted so that the connector lets go of its
   * connection rather than reading on in the background; with a `refused` when it throws an error
   * no retry can fix ({@link permanentFailure}: parked at once).
   */
  private async bounded<T>(
    call: (signal: AbortSignal) => Promise<T>,
    fallback: (delivery: OutboxDelivery) => T,
  ): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const limit = this.settings.timeoutMs + 1000;
    const abort = new AbortController();
    try {
      return await Promise.race([
        call(abort.signal),
        new Promise<T>((resolve) => {
          timer = setTimeout(() => {
            abort.abort();
            resolve(fallback({ outcome: 'retry', reason: `no answer from the connector in ${limit} ms` }));
          }, limit);
        }),
      ]);
    } catch (err) {
      const permanent = permanentFailure(err);
      if (permanent) return fallback({ outcome: 'refused', reason: permanent });
      return fallback({
        outcome: 'retry',
        reason: excerpt(
          `the ${this.deliverer.name} connector threw: ${err instanceof Error ? err.message : String(err)}`,
        ),
      });
    } finally {
      clearTimeout(timer);
    }
  }
}
