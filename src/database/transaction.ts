import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { APP_CONFIG } from '../config/configuration.js';
import type { AppConfig } from '../config/configuration.js';
import { isRetryable } from './pg-errors.js';

/** Thrown when the work could not finish before its deadline; it was rolled back (CONTRACT §5). */
export class DeadlineExceededError extends Error {
  constructor() {
    super('deadline exceeded');
    this.name = 'DeadlineExceededError';
  }
}

/** Rows and affected-row count of one SQL statement. */
export interface SqlResult<T> {
  rows: T[];
  rowCount: number;
}

/**
 * One open database transaction, carried explicitly to every repository that writes for it
 * (vendure style): `query` runs SQL on the transaction's connection, `manager` is its TypeORM
 * `EntityManager`. Before each statement the deadline is checked and, near it, the statement and
 * lock timeouts are lowered to the time left, so no statement outlives the deadline.
 */
export class Tx {
  private timeoutMs: number;
  private readonly commitHooks: (() => void)[] = [];

  constructor(
    private readonly runner: QueryRunner,
    readonly deadline: number,
    private readonly timeouts: { statementTimeoutMs: number; lockTimeoutMs: number },
  ) {
    this.timeoutMs = Math.max(timeouts.statementTimeoutMs, timeouts.lockTimeoutMs);
  }

  get manager(): EntityManager {
    return this.runner.manager;
  }

  /** Registers a callback run only after this transaction has committed (e.g. cache updates). */
  afterCommit(hook: () => void): void {
    this.commitHooks.push(hook);
  }

  /** @internal Runs the after-commit callbacks; called by {@link TransactionRunner}. */
  committed(): void {
    for (const hook of this.commitHooks.splice(0)) hook();
  }

  /**
   * Runs `work` under a SAVEPOINT `name`. When it throws, the transaction is rolled back to the
   * savepoint (its writes, its after-commit callbacks and its timeout changes are undone), stays
   * usable, and the error is rethrown.
   */
  async savepoint<T>(name: string, work: () => Promise<T>): Promise<T> {
    const hooks = this.commitHooks.length;
    const timeoutMs = this.timeoutMs;
    await this.query(`SAVEPOINT ${name}`);
    try {
      const result = await work();
      await this.query(`RELEASE SAVEPOINT ${name}`);
      return result;
    } catch (err) {
      this.commitHooks.splice(hooks);
      await this.runner.query(`ROLLBACK TO SAVEPOINT ${name}`);
      this.timeoutMs = timeoutMs;
      throw err;
    }
  }

  /** Runs one statement with positional parameters (`$1`…) inside the transaction. */
  async query<T = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<SqlResult<T>> {
    const left = this.deadline - Date.now();
    if (left <= 0) throw new DeadlineExceededError();
    if (left < this.timeoutMs) {
      this.timeoutMs = Math.max(1, left);
      await this.runner.query(
        "SELECT set_config('statement_timeout', $1, true), set_config('lock_timeout', $1, true)",
        [`${this.timeoutMs}ms`],
      );
    }
    const result = await this.runner.query(sql, params, true);
    return { rows: (result.records ?? []) as T[], rowCount: result.affected ?? 0 };
  }

  /**
   * Runs one statement that may wait for locks until the deadline itself (not only the lock
   * timeout), e.g. a concurrent duplicate waiting on the batch id's unique index (CONTRACT §4
   * step 4); the usual timeouts apply again afterwards.
   */
  async queryWaitingUntilDeadline<T = Record<string, unknown>>(
    sql: string,
    params: unknown[] = [],
  ): Promise<SqlResult<T>> {
    const left = this.deadline - Date.now();
    if (left <= 0) throw new DeadlineExceededError();
    await this.runner.query(
      "SELECT set_config('statement_timeout', $1, true), set_config('lock_timeout', $1, true)",
      [`${left}ms`],
    );
    this.timeoutMs = left;
    const result = await this.query<T>(sql, params);
    const { statementTimeoutMs, lockTimeoutMs } = this.timeouts;
    const leftNow = Math.max(1, this.deadline - Date.now());
    await this.runner.query(
      "SELECT set_config('statement_timeout', $1, true), set_config('lock_timeout', $2, true)",
      [`${Math.min(statementTimeoutMs, leftNow)}ms`, `${Math.min(lockTimeoutMs, leftNow)}ms`],
    );
    this.timeoutMs = Math.min(Math.max(statementTimeoutMs, lockTimeoutMs), leftNow);
    return result;
  }
}

/** Options of {@link TransactionRunner.run}. */
export interface RunOptions {
  /** Epoch milliseconds after which nothing more is attempted; the transaction rolls back. */
  deadline?: number;
  /** Re-runs of the whole transaction after 40001/40P01 (default from configuration). */
  retries?: number;
}

/**
 * Runs a unit of work in ONE PostgreSQL transaction (READ COMMITTED plus explicit row locks):
 * BEGIN, work, COMMIT; any error rolls everything back. Serialization failures and deadlocks
 * (40001, 40P01) re-run the whole unit a bounded number of times while time is left; other errors
 * are rethrown unchanged for the caller to classify (CONTRACT §4, §5).
 */
@Injectable()
export class TransactionRunner {
  private readonly logger = new Logger('TransactionRunner');

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /** @throws DeadlineExceededError, or the error of the last attempt. */
  async run<T>(work: (tx: Tx) => Promise<T>, options: RunOptions = {}): Promise<T> {
    const deadline = options.deadline ?? Date.now() + this.config.callbackDeadlineMs;
    const retries = options.retries ?? this.config.transientRetries;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.once(work, deadline);
      } catch (err) {
        const timeLeft = deadline - Date.now();
        if (!isRetryable(err) || attempt >= retries || timeLeft < 100) throw err;
        this.logger.warn(`transaction re-run ${attempt + 1}/${retries} after ${(err as Error).message}`);
        await new Promise((r) =>
          setTimeout(r, Math.min(timeLeft / 4, 10 + Math.random() * 40 * (attempt + 1))),
        );
      }
    }
  }

  private async once<T>(work: (tx: Tx) => Promise<T>, deadline: number): Promise<T> {
    if (deadline - Date.now() <= 0) throw new DeadlineExceededError();
    const runner = this.dataSource.createQueryRunner();
    try {
      await runner.connect();
      await runner.startTransaction('READ COMMITTED');
      const tx = new Tx(runner, deadline, {
        statementTimeoutMs: this.config.statementTimeoutMs,
        lockTimeoutMs: this.config.lockTimeoutMs,
      });
      const result = await work(tx);
      if (deadline - Date.now() <= 0) throw new DeadlineExceededError();
      await runner.commitTransaction();
      tx.committed();
      return result;
    } catch (err) {
      if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
      throw err;
    } finally {
      await runner.release().catch(() => undefined);
    }
  }
}
