import { detached } from '../observability/tracing.js';
import { BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import { TransactionRunner } from '../database/transaction.js';
import { DeliveryMetrics } from './delivery-metrics.js';
import { DeliveryAttemptRepository, DeliveryAttemptRow } from './delivery-attempt.repository.js';

/** Attempts waiting to be written at most; more are dropped and counted. */
const MAX_BACKLOG = 10_000;
/** Attempts written per transaction. */
const CHUNK = 200;
/** Milliseconds one write may take. */
const WRITE_BUDGET_MS = 2000;
/** Longest wait between two writes while the database is away (doubling from 250 ms). */
const MAX_RETRY_DELAY_MS = 30_000;

/**
 * Writes the delivery attempts of failed deliveries after their answer was sent (CONTRACT §8), so
 * the database never delays an answer past the deadline: a queue written in the background,
 * retried with backoff while the database is away. An attempt that cannot be kept (a full backlog,
 * or left at shutdown) is counted in `settlement_delivery_attempts_unrecorded_total` and logged
 * with its request id, never lost silently.
 */
@Injectable()
export class DeliveryAttemptWriter implements BeforeApplicationShutdown {
  private readonly logger = new Logger('DeliveryAudit');
  private readonly backlog: DeliveryAttemptRow[] = [];
  private writing: Promise<void> | undefined;
  private stopped = false;
  private wake: (() => void) | undefined;

  constructor(
    private readonly transactions: TransactionRunner,
    private readonly attempts: DeliveryAttemptRepository,
    private readonly metrics: DeliveryMetrics,
  ) {}

  /** Queues `attempt` to be written; drops and counts it when the backlog is full. */
  enqueue(attempt: DeliveryAttemptRow): void {
    if (this.stopped || this.backlog.length >= MAX_BACKLOG) return this.unrecorded([attempt], 'backlog full');
    this.backlog.push(attempt);
    this.writing ??= detached(() => this.drain()).finally(() => (this.writing = undefined));
  }

  /** Attempts not written yet. */
  get pending(): number {
    return this.backlog.length;
  }

  /** Resolves once every attempt queued so far is written (tests, shutdown). */
  async flushed(): Promise<void> {
    // An answer just written queues its attempt from its 'finish' listener: let those run first.
    await new Promise((r) => setImmediate(r));
    while (this.writing) await this.writing;
  }

  /** Writes what it can within 2 s of the shutdown; the rest is counted as unrecorded. */
  async beforeApplicationShutdown(): Promise<void> {
    this.wake?.();
    await Promise.race([this.flushed(), new Promise((r) => setTimeout(r, WRITE_BUDGET_MS).unref())]);
    this.stopped = true;
    this.wake?.();
    if (this.backlog.length) this.unrecorded(this.backlog.splice(0), 'shutting down');
  }

  private async drain(): Promise<void> {
    let delay = 0;
    while (this.backlog.length && !this.stopped) {
      const chunk = this.backlog.slice(0, CHUNK);
      try {
        await this.transactions.run((tx) => this.attempts.insertMany(tx, chunk), {
          deadline: Date.now() + WRITE_BUDGET_MS,
          retries: 0,
        });
        this.backlog.splice(0, chunk.length);
        delay = 0;
      } catch (err) {
        delay = Math.min(MAX_RETRY_DELAY_MS, Math.max(250, delay * 2));
        this.logger.warn(
          { requestIds: chunk.map((a) => a.requestId) },
          `${this.backlog.length} delivery attempt(s) not written yet (${(err as Error).message}); retry in ${delay} ms`,
        );
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, delay);
          this.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.wake = undefined;
      }
    }
  }

  private unrecorded(attempts: DeliveryAttemptRow[], why: string): void {
    this.metrics.attemptsUnrecorded(attempts.length);
    for (const a of attempts) {
      this.logger.error(
        `delivery attempt not recorded (${why}): request ${a.requestId}, batch ${a.batchId}, ${a.outcome} ${a.httpStatus} at ${a.receivedAt.toISOString()}`,
      );
    }
  }
}
