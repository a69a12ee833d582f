import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type pg from 'pg';
import { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { APP_CONFIG } from '../config/configuration.js';
import type { AppConfig } from '../config/configuration.js';
import { isRetryable, isTransient } from './pg-errors.js';

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
export class Tx implements StatementExecutor {
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

  /**
   * Runs `statements` one after another inside the transaction (the same {@link Statement}s the
   * pipelined hot path sends as one group), each under the timeouts of {@link query}.
   * @returns the result of each, in order. @throws the first failing statement's error (the
   *   transaction is aborted then).
   */
  async send(statements: Statement[]): Promise<SqlResult<Record<string, unknown>>[]> {
    const results: SqlResult<Record<string, unknown>>[] = [];
    for (const s of statements) results.push(await this.query(s.text, s.values ?? []));
    return results;
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

/** A statement with positional parameters; `name` makes it a prepared statement of the connection. */
export interface Statement {
  text: string;
  values?: unknown[];
  /** Name of the prepared statement (the same name always with the same text). */
  name?: string;
}

/**
 * What statement builders' callers need of a transaction, whichever runs it: {@link Tx} (one
 * statement after another on its query runner) or {@link PipelinedTx} (groups pipelined on a raw
 * connection). One implementation of the SQL serves both.
 */
export interface StatementExecutor {
  /** Runs `statements` in order inside the transaction; the result of each. */
  send(statements: Statement[]): Promise<{ rows: unknown[] }[]>;
  /** Registers a callback run only after the transaction has committed. */
  afterCommit(hook: () => void): void;
}

/**
 * One open transaction on a raw node-postgres connection, for the callback's hot path: statements
 * are sent in groups ({@link send}), each group written to the connection back to back, so the
 * database runs them one after another without waiting for this process in between; the
 * transaction costs as many event-loop turns as groups. A group starts with {@link timeouts},
 * which lowers `statement_timeout` and `lock_timeout` to the time left before the deadline
 * (SET LOCAL), so no statement outlives it. A failed statement makes the later ones of its group fail too (the
 * transaction is aborted); {@link commitWith} ends the group with COMMIT and reports whether it
 * committed.
 */
export class PipelinedTx implements StatementExecutor {
  private readonly commitHooks: (() => void)[] = [];
  /** true while BEGIN was sent and neither COMMIT nor ROLLBACK was. */
  open = false;
  /** The timeouts set in this transaction (ms), once set. */
  private current: { statement: number; lock: number } | undefined;

  constructor(
    private readonly client: pg.PoolClient,
    readonly deadline: number,
    private readonly limits: { statementTimeoutMs: number; lockTimeoutMs: number },
  ) {}

  /** Registers a callback run only after this transaction has committed. */
  afterCommit(hook: () => void): void {
    this.commitHooks.push(hook);
  }

  /** Milliseconds before the deadline. @throws DeadlineExceededError when none is left. */
  timeLeft(): number {
    const left = this.deadline - Date.now();
    if (left <= 0) throw new DeadlineExceededError();
    return left;
  }

  /**
   * The statement that sets `statement_timeout` and `lock_timeout` for the rest of the
   * transaction (SET LOCAL): the configured ones, or the time left before the deadline when that
   * is shorter; `untilDeadline` makes both the time left (e.g. to wait on a concurrent delivery of
   * the same batch id holding its unique index, CONTRACT §4 step 4). None when the values already
   * set in this transaction stand. Spread it first into a group.
   * @throws DeadlineExceededError when no time is left.
   */
  timeouts(untilDeadline = false): Statement[] {
    const left = this.timeLeft();
    const statement = untilDeadline ? left : Math.min(this.limits.statementTimeoutMs, left);
    const lock = untilDeadline ? left : Math.min(this.limits.lockTimeoutMs, left);
    if (this.current?.statement === statement && this.current.lock === lock) return [];
    this.current = { statement, lock };
    return [
      {
        name: 'tx_timeouts',
        text: "SELECT set_config('statement_timeout', $1, true), set_config('lock_timeout', $2, true)",
        values: [`${statement}ms`, `${lock}ms`],
      },
    ];
  }

  /** BEGIN (READ COMMITTED), then `statements`, as one group. @returns their results. */
  async begin(statements: Statement[]): Promise<pg.QueryResult[]> {
    this.open = true;
    const results = await this.group([{ text: 'BEGIN ISOLATION LEVEL READ COMMITTED' }, ...statements]);
    return results.slice(1);
  }

  /** `statements` as one group. @returns the result of each, in order. */
  send(statements: Statement[]): Promise<pg.QueryResult[]> {
    this.timeLeft();
    return this.group(statements);
  }

  /**
   * `statements` and COMMIT as one group, then the after-commit callbacks.
   * @returns the statements' results once committed.
   * @throws the first failing statement's error (the transaction was rolled back by then).
   */
  async commitWith(statements: Statement[]): Promise<pg.QueryResult[]> {
    this.timeLeft();
    const results = await this.group([...statements, { text: 'COMMIT' }]);
    this.open = false;
    const commit = results[results.length - 1];
    if (commit.command !== 'COMMIT') throw new Error(`transaction ended with ${commit.command}, not COMMIT`);
    for (const hook of this.commitHooks.splice(0)) hook();
    return results.slice(0, -1);
  }

  private group(statements: Statement[]): Promise<pg.QueryResult[]> {
    // With the pool's node-postgres pipeline mode the statements are all written at once and the
    // database runs them in order: no round trip, no turn of this process in between. If one
    // fails, the later ones (already sent) fail too or, for COMMIT, answer ROLLBACK; all are awaited.
    const pending = statements.map((s) => this.client.query(s as pg.QueryConfig));
    return Promise.all(pending).catch(async (err: unknown) => {
      await Promise.allSettled(pending);
      if (statements[statements.length - 1].text === 'COMMIT') this.open = false;
      throw err;
    });
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
  run<T>(work: (tx: Tx) => Promise<T>, options: RunOptions = {}): Promise<T> {
    return this.withReruns((deadline) => this.once(work, deadline), options);
  }

  /**
   * Like {@link run}, on a raw connection of the same pool driven through {@link PipelinedTx}: the
   * work sends BEGIN (`tx.begin`), its statement groups and COMMIT (`tx.commitWith`); whatever it
   * left open is rolled back. Same re-runs after 40001/40P01 and the same deadline.
   */
  runPipelined<T>(work: (tx: PipelinedTx) => Promise<T>, options: RunOptions = {}): Promise<T> {
    return this.withReruns((deadline) => this.oncePipelined(work, deadline), options);
  }

  /**
   * Runs `attempt` (one whole transaction) and re-runs it after 40001/40P01 while retries and
   * time before the deadline are left, with a short random back-off.
   * @throws the error of the last attempt.
   */
  private async withReruns<T>(attempt: (deadline: number) => Promise<T>, options: RunOptions): Promise<T> {
    const deadline = options.deadline ?? Date.now() + this.config.callbackDeadlineMs;
    const retries = options.retries ?? this.config.transientRetries;
    for (let n = 0; ; n++) {
      try {
        return await attempt(deadline);
      } catch (err) {
        const timeLeft = deadline - Date.now();
        if (!isRetryable(err) || n >= retries || timeLeft < 100) throw err;
        this.logger.warn(`transaction re-run ${n + 1}/${retries} after ${(err as Error).message}`);
        await new Promise((r) => setTimeout(r, Math.min(timeLeft / 4, 10 + Math.random() * 40 * (n + 1))));
      }
    }
  }

  /** One statement in a transaction of its own (autocommit) on a raw connection of the pool. */
  async queryOnce(statement: Statement): Promise<pg.QueryResult> {
    const [client, release] = await this.obtainConnection();
    try {
      const result = await client.query(statement as pg.QueryConfig);
      release();
      return result;
    } catch (err) {
      release(isTransient(err) ? (err as Error) : undefined);
      throw err;
    }
  }

  private obtainConnection(): Promise<[pg.PoolClient, (err?: Error) => void]> {
    // TypeORM's own pool (one pool, one DB_POOL_SIZE): the PostgreSQL driver hands out a raw pg
    // client with its release callback, as its query runners use them.
    const driver = this.dataSource.driver as unknown as {
      obtainMasterConnection(): Promise<[pg.PoolClient, (err?: Error) => void]>;
    };
    return driver.obtainMasterConnection();
  }

  private async oncePipelined<T>(work: (tx: PipelinedTx) => Promise<T>, deadline: number): Promise<T> {
    if (deadline - Date.now() <= 0) throw new DeadlineExceededError();
    const [client, release] = await this.obtainConnection();
    const tx = new PipelinedTx(client, deadline, {
      statementTimeoutMs: this.config.statementTimeoutMs,
      lockTimeoutMs: this.config.lockTimeoutMs,
    });
    let broken: Error | undefined;
    try {
      const result = await work(tx);
      if (tx.open) throw new Error('the work returned without committing');
      return result;
    } catch (err) {
      if (tx.open) {
        await client.query('ROLLBACK').catch((e: Error) => (broken = e));
        tx.open = false;
      }
      throw err;
    } finally {
      release(broken);
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
