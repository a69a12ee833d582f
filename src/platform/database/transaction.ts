import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type pg from 'pg';
import { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { DATABASE_CONFIG } from './database.config.js';
import type { DatabaseConfig } from './database.config.js';
import { PooledClient } from './pooled-client.js';
import { isConnectionLoss, isRetryable } from './pg-errors.js';
import { activeTraceparent, traced, untraced } from '../observability/tracing.js';
import { SessionDatabase } from './session-database.js';
import { TRANSACTION_CONFIG } from './transaction.config.js';
import type { TransactionConfig } from './transaction.config.js';

/** Thrown when the work could not finish before its deadline; it was rolled back (CONTRACT §5). */
export class DeadlineExceededError extends Error {
  constructor() {
    super('deadline exceeded');
    this.name = 'DeadlineExceededError';
  }
}

/**
 * Thrown when COMMIT was answered ROLLBACK: a statement of the transaction had failed and its
 * error was caught by the work, so nothing was committed (and no after-commit hook ran).
 */
export class TransactionRolledBackError extends Error {
  constructor() {
    super('COMMIT answered ROLLBACK: a statement of this transaction had failed; nothing was committed');
    this.name = 'TransactionRolledBackError';
  }
}

/** Rows and affected-row count of one SQL statement. */
export interface SqlResult<R> {
  rows: R[];
  rowCount: number;
}

/**
 * One SQL statement with positional parameters (`$1`…), built by a repository. `R` is the shape
 * of its rows.
 */
export interface Statement<R = Record<string, unknown>> {
  text: string;
  values?: unknown[];
  /** Name of the prepared statement (the same name always with the same text). */
  name?: string;
  /** Waits for locks until the transaction's deadline rather than the lock timeout. */
  waitsUntilDeadline?: boolean;
  /**
   * Runs under `plan_cache_mode = force_generic_plan` (needs `name`): planned once per connection,
   * not at every execution. For the hot path's large statements, whose custom planning costs more
   * than it wins (docs/architecture.md, "Generic plans"); not for a statement whose plan depends on
   * a parameter's value (a partial index matched by a parameter).
   */
  genericPlan?: boolean;
  /** Turns this statement's error into its module's own exception (e.g. the ledger's). */
  mapError?: (err: unknown) => unknown;
  /** Called with the statement's result when its group has returned (before COMMIT hooks). */
  onResult?: (result: SqlResult<R>) => void;
}

/** Named statements sent together; see {@link Tx.send}. */
export type StatementGroup = Record<string, Statement<any>>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** The results of a {@link StatementGroup}, under the same names. */
export type GroupResults<G extends StatementGroup> = {
  [K in keyof G]: G[K] extends Statement<infer R> ? SqlResult<R> : never;
};

/** The SET LOCAL settings in force in a transaction: timeouts (milliseconds) and plan mode. */
interface SessionSettings {
  statement: number;
  lock: number;
  genericPlan: boolean;
}

/**
 * Timeouts (milliseconds) that hold in a transaction unless the deadline is nearer, and whether
 * statements may be prepared under their names.
 */
export interface TransactionLimits {
  statementTimeoutMs: number;
  lockTimeoutMs: number;
  /** Set once per transaction, with the first group. */
  idleInTransactionTimeoutMs: number;
  /**
   * false behind a transaction-mode pooler (`DATABASE_POOLED`): every statement is sent unnamed
   * (a named one would meet, or miss, its name on another server connection) and `genericPlan`
   * is ignored (docs/production.md#pgbouncer).
   */
  namedStatements: boolean;
}

/** Transaction-scoped settings (SET LOCAL): nothing outlives the transaction on its connection. */
const SET_LOCAL_SETTINGS =
  "SELECT set_config('statement_timeout', $1, true), set_config('lock_timeout', $2, true), set_config('plan_cache_mode', $3, true)";
const SET_LOCAL_FIRST_SETTINGS = `${SET_LOCAL_SETTINGS}, set_config('idle_in_transaction_session_timeout', $4, true)`;

/**
 * Milliseconds past the deadline after which a statement still unanswered is given up on this
 * side: its connection is destroyed (pg's per-query `query_timeout` in pipeline mode), never
 * reused. The server's own timeouts, lowered to the deadline, normally answer first.
 */
export const CLIENT_TIMEOUT_MARGIN_MS = 100;

/**
 * A flat array of strings, numbers, booleans and nulls as PostgreSQL's array literal (`{"a","b\\"c",NULL}`),
 * the text node-postgres would send for it; undefined for any other array (left to node-postgres).
 * The hot path's array of coupon codes goes to three statements of one group, which {@link Tx}
 * formats once; escaping is skipped for elements with no `"` or `\\`.
 */
function arrayLiteral(values: unknown[]): string | undefined {
  let text = '{';
  for (let i = 0; i < values.length; i++) {
    if (i > 0) text += ',';
    const v = values[i];
    if (v === null || v === undefined) {
      text += 'NULL';
      continue;
    }
    const t = typeof v;
    if (t !== 'string' && t !== 'number' && t !== 'boolean' && t !== 'bigint') return undefined;
    const s = String(v);
    text += s.includes('"') || s.includes('\\') ? `"${s.replace(/[\\"]/g, '\\$&')}"` : `"${s}"`;
  }
  return text + '}';
}

/** A pg query with its own read timeout (node-postgres reads `query_timeout` per query too). */
type TimedQuery = pg.QueryConfig & { query_timeout: number };

/**
 * One open PostgreSQL transaction, carried explicitly to every repository that works for it
 * (vendure style). Statements go in named groups ({@link send}): a group is written to the
 * connection at once (node-postgres pipeline mode) and costs one round trip; START TRANSACTION
 * travels with the first, {@link commitWith} ends the last with COMMIT. Before a group,
 * `statement_timeout`, `lock_timeout` and `idle_in_transaction_session_timeout` are set by the
 * first group (SET LOCAL, in the same round trip: nothing is set at connection start or outlives
 * the transaction, so the same code runs through a transaction-mode PgBouncer), and lowered
 * before a later group to the time left before the deadline, so no statement outlives it.
 * `manager` is TypeORM's EntityManager inside this same transaction. Created only by
 * {@link TransactionRunner.run}.
 */
export class Tx {
  private readonly commitHooks: (() => void)[] = [];
  /** Timeouts in force in this transaction (ms), once set by this class. */
  private current: SessionSettings | undefined;
  /** A statement failed: only ROLLBACK (or ROLLBACK TO SAVEPOINT) can follow. */
  private aborted = false;
  /** Statements without results (START, SAVEPOINT, RELEASE, SET LOCAL) sent first with the next group. */
  private readonly pending: Statement[] = [{ text: 'START TRANSACTION' }];
  /** Statements of {@link pending} sent ahead of a group (see {@link manager}), not yet awaited. */
  private readonly sent: Promise<pg.QueryResult>[] = [];
  /** START TRANSACTION was sent: ROLLBACK is needed unless COMMIT was. */
  private started = false;
  private done = false;
  /** @internal COMMIT was sent: a lost connection from here on leaves its outcome unknown. */
  committing = false;

  constructor(
    private readonly runner: QueryRunner,
    private readonly client: pg.PoolClient,
    readonly deadline: number,
    private readonly limits: TransactionLimits,
  ) {}

  /**
   * TypeORM's EntityManager bound to this transaction's connection (reads: its writes would open
   * transactions of their own). The statements waiting for the next group are sent first.
   */
  get manager(): EntityManager {
    if (this.current?.genericPlan) {
      // Its queries do not pass through settingsFor: back to auto before them.
      this.pending.push({ text: "SELECT set_config('plan_cache_mode', 'auto', true)" });
      this.current = { ...this.current, genericPlan: false };
    } else if (!this.current) {
      // Its queries do not pass through settingsFor: this transaction's timeouts before them.
      const first = this.settingsFor({ text: '' }, this.timeLeft());
      if (first) this.pending.push(first as Statement);
    }
    this.sendPending();
    return this.runner.manager;
  }

  /** Milliseconds before the deadline. @throws DeadlineExceededError when none is left. */
  timeLeft(): number {
    const left = this.deadline - Date.now();
    if (left <= 0) throw new DeadlineExceededError();
    return left;
  }

  /** @internal SET LOCAL `name` to `value` (a checked literal), sent with the first group. */
  setLocal(name: string, value: string): void {
    this.pending.push({ text: `SET LOCAL ${name} = '${value}'` });
  }

  /** Registers a callback run only after this transaction has committed (metrics, caches). */
  afterCommit(hook: () => void): void {
    this.commitHooks.push(hook);
  }

  /**
   * Sends the statements of `group` in one round trip; PostgreSQL runs them in order.
   * @returns each statement's result under its name.
   * @throws the first failing statement's error (mapped by its `mapError`); the transaction is
   *   aborted then (the later statements of the group fail too).
   */
  send<G extends StatementGroup>(group: G): Promise<GroupResults<G>> {
    return this.dispatch(group, false);
  }

  /** One statement as its own group. */
  async query<R = Record<string, unknown>>(text: string, values: unknown[] = []): Promise<SqlResult<R>> {
    return (await this.send({ statement: { text, values } as Statement<R> })).statement;
  }

  /**
   * Sends `group` followed by COMMIT in the same round trip, then runs the after-commit hooks.
   * @returns each statement's result once committed.
   * @throws the first failing statement's error; nothing was committed then.
   */
  commitWith<G extends StatementGroup>(group: G): Promise<GroupResults<G>> {
    return traced('db.commit', () => this.dispatch(group, true));
  }

  /**
   * Runs `work` under `SAVEPOINT name`. When it throws, the transaction is rolled back to the
   * savepoint (its writes, after-commit hooks and timeout changes undone), stays usable, and the
   * error is rethrown. SAVEPOINT and RELEASE travel with the next group: no round trip of their own.
   */
  async savepoint<T>(name: string, work: () => Promise<T>): Promise<T> {
    const hooks = this.commitHooks.length;
    const current = this.current;
    const begin: Statement = { text: `SAVEPOINT ${name}` };
    this.pending.push(begin);
    const unsent = () => {
      const at = this.pending.indexOf(begin);
      if (at >= 0) this.pending.splice(at, 1);
      return at >= 0;
    };
    try {
      const result = await work();
      if (!unsent()) this.pending.push({ text: `RELEASE SAVEPOINT ${name}` });
      return result;
    } catch (err) {
      this.commitHooks.splice(hooks);
      if (unsent()) throw err; // nothing was sent under it: nothing to undo
      // Straight on the connection: the transaction may be aborted, so nothing may go before it
      // (not even the SET LOCAL a group sends when the deadline is near). What was sent or queued
      // under the savepoint (an inner RELEASE) is undone with it.
      this.pending.splice(0);
      await Promise.allSettled(this.sent.splice(0));
      await this.client.query({
        text: `ROLLBACK TO SAVEPOINT ${name}`,
        query_timeout: this.timeLeft() + CLIENT_TIMEOUT_MARGIN_MS,
      } as TimedQuery);
      this.aborted = false;
      this.current = current;
      throw err;
    }
  }

  /** @internal COMMIT unless {@link commitWith} did; called by {@link TransactionRunner}. */
  async finish(): Promise<void> {
    if (!this.done) await this.commitWith({});
  }

  /** @internal ROLLBACK unless nothing was sent or COMMIT was (its outcome stands or is unknown). */
  async rollback(): Promise<void> {
    await Promise.allSettled(this.sent.splice(0));
    if (!this.started || this.committing || this.done) return;
    this.done = true;
    await untraced(() => this.client.query('ROLLBACK')).catch(() => undefined);
  }

  /** Writes the statements waiting for the next group now; their results are awaited with it. */
  private sendPending(query_timeout = this.timeLeft() + CLIENT_TIMEOUT_MARGIN_MS): void {
    for (const { text, values, name } of this.pending.splice(0)) {
      if (text === 'START TRANSACTION') this.started = true;
      const sent = untraced(() => this.client.query({ text, values, name, query_timeout } as TimedQuery));
      sent.catch(() => undefined); // its failure is taken by the next group (or rollback)
      this.sent.push(sent);
    }
  }

  private async dispatch<G extends StatementGroup>(group: G, commit: boolean): Promise<GroupResults<G>> {
    if (this.done) throw new Error('the transaction has ended');
    if (this.aborted) throw new Error('the transaction is aborted: a statement failed');
    const left = this.timeLeft();
    const names = Object.keys(group);
    const pending: Promise<pg.QueryResult>[] = [];
    const at: number[] = [];
    const query_timeout = left + CLIENT_TIMEOUT_MARGIN_MS;
    // Array parameters as literals, each array formatted once per group (see arrayLiteral).
    const literals = new Map<unknown[], string | undefined>();
    // The whole group leaves in one write (one system call, one wake-up of the backend), not one
    // per statement as node-postgres writes them (the pool's clients own their socket).
    const socket = this.client instanceof PooledClient ? this.client.socket : undefined;
    let commitFailure: Promise<{ error: unknown } | undefined> | undefined;
    socket?.cork();
    try {
      this.sendPending(query_timeout);
      pending.push(...this.sent.splice(0));
      for (const name of names) {
        const settings = this.settingsFor(group[name], left);
        if (settings)
          pending.push(untraced(() => this.client.query({ ...settings, query_timeout } as TimedQuery)));
        at.push(pending.length);
        const { text, values, name: prepared } = group[name];
        const sentValues = values?.map((v) => {
          if (!Array.isArray(v)) return v;
          if (!literals.has(v)) literals.set(v, arrayLiteral(v));
          return literals.get(v) ?? v;
        });
        pending.push(
          this.client.query({
            text,
            values: sentValues,
            name: this.limits.namedStatements ? prepared : undefined,
            query_timeout,
          } as TimedQuery),
        );
      }
      // COMMIT is issued after the statements above, so it travels in the same round trip; its
      // failure is taken at once (it may come before theirs) and reported after them.
      if (commit) {
        this.done = true;
        this.committing = true;
        // The pool's backstop timeout, not the deadline's: a COMMIT cut short leaves its outcome unknown.
        // PostgreSQL answers the COMMIT of an aborted transaction (a failed statement whose error
        // the work swallowed, e.g. through tx.manager) with ROLLBACK: nothing was committed.
        commitFailure = untraced(() => this.client.query('COMMIT')).then(
          (answer) => (answer.command === 'COMMIT' ? undefined : { error: new TransactionRolledBackError() }),
          (error: unknown) => ({ error }),
        );
      }
    } finally {
      socket?.uncork();
    }
    const settled = await Promise.allSettled(pending);
    const commitError = await commitFailure;
    const failed = settled.findIndex((s) => s.status === 'rejected');
    if (failed >= 0) {
      this.aborted = true;
      const statement = at.includes(failed) ? group[names[at.indexOf(failed)]] : undefined;
      const error = (settled[failed] as PromiseRejectedResult).reason as unknown;
      throw statement?.mapError ? statement.mapError(error) : error;
    }
    if (commitError) throw commitError.error;
    const results = {} as Record<string, SqlResult<unknown>>;
    names.forEach((name, i) => {
      const r = (settled[at[i]] as PromiseFulfilledResult<pg.QueryResult>).value;
      results[name] = { rows: r.rows, rowCount: r.rowCount ?? 0 };
    });
    for (const name of names) group[name].onResult?.(results[name]);
    if (commit) for (const hook of this.commitHooks.splice(0)) hook();
    return results as GroupResults<G>;
  }

  /**
   * The SET LOCAL of timeouts and plan mode `statement` needs before it (`left` ms before the
   * deadline): the configured timeouts, or the time left when that is shorter, or the time left
   * for both when it waits until the deadline; generic plans when it asks for them (named
   * statements only); with the idle-in-transaction timeout before the first statement; undefined
   * when those in force already are these.
   */
  private settingsFor(statement: Statement<unknown>, left: number): pg.QueryConfig | undefined {
    const wanted: SessionSettings = {
      ...(statement.waitsUntilDeadline
        ? { statement: left, lock: left }
        : {
            statement: Math.min(this.limits.statementTimeoutMs, left),
            lock: Math.min(this.limits.lockTimeoutMs, left),
          }),
      // An unnamed statement is planned at every execution: a generic plan would gain nothing.
      genericPlan: statement.genericPlan === true && this.limits.namedStatements,
    };
    const current = this.current;
    if (
      current &&
      current.statement === wanted.statement &&
      current.lock === wanted.lock &&
      current.genericPlan === wanted.genericPlan
    )
      return undefined;
    this.current = wanted;
    const values = [
      `${wanted.statement}ms`,
      `${wanted.lock}ms`,
      wanted.genericPlan ? 'force_generic_plan' : 'auto',
    ];
    const named = this.limits.namedStatements;
    return current
      ? { name: named ? 'tx_settings' : undefined, text: SET_LOCAL_SETTINGS, values }
      : {
          name: named ? 'tx_settings_first' : undefined,
          text: SET_LOCAL_FIRST_SETTINGS,
          values: [...values, `${this.limits.idleInTransactionTimeoutMs}ms`],
        };
  }
}

/**
 * The transaction-local setting that carries the W3C `traceparent` of the active span into SQL
 * while tracing is on (the outboxes' inserts store it with their rows); never set when it is off.
 */
export const TRACEPARENT_SETTING = 'otel.traceparent';
const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** Options of {@link TransactionRunner.run}. */
export interface RunOptions {
  /** Epoch milliseconds after which nothing more is attempted; the transaction rolls back. */
  deadline?: number;
  /**
   * Epoch milliseconds the work's time counts from (a callback's receipt; default: now): without
   * `deadline`, the deadline is `CALLBACK_DEADLINE_MS` after it (CONTRACT §5).
   */
  startedAt?: number;
  /** Re-runs of the whole transaction after 40001/40P01 (default from configuration). */
  retries?: number;
}

/**
 * Runs a unit of work in ONE PostgreSQL transaction (READ COMMITTED plus explicit row locks) on a
 * TypeORM query runner: START TRANSACTION, the work's statement groups, COMMIT; any error rolls
 * everything back. Serialization failures and deadlocks (40001, 40P01) re-run the whole unit a
 * bounded number of times while time is left; other errors are rethrown unchanged for the caller
 * to classify (CONTRACT §4, §5).
 */
@Injectable()
export class TransactionRunner {
  private readonly logger = new Logger('TransactionRunner');

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(DATABASE_CONFIG) private readonly config: DatabaseConfig,
    @Inject(TRANSACTION_CONFIG) private readonly transaction: TransactionConfig,
    private readonly session: SessionDatabase,
  ) {}

  /**
   * Milliseconds a callback's work may take from its receipt (`CALLBACK_DEADLINE_MS`, CONTRACT §5):
   * the deadline {@link run} gives work without one, counted from {@link RunOptions.startedAt}.
   */
  get callbackDeadlineMs(): number {
    return this.transaction.callbackDeadlineMs;
  }

  /** @throws DeadlineExceededError, or the error of the last attempt. */
  async run<T>(work: (tx: Tx) => Promise<T>, options: RunOptions = {}): Promise<T> {
    const deadline =
      options.deadline ?? (options.startedAt ?? Date.now()) + this.transaction.callbackDeadlineMs;
    const retries = options.retries ?? this.transaction.transientRetries;
    for (let n = 0; ; n++) {
      try {
        return await traced('db.transaction', () => this.once(work, deadline), {
          'db.transaction.attempt': n + 1,
        });
      } catch (err) {
        const timeLeft = deadline - Date.now();
        if (!isRetryable(err) || n >= retries || timeLeft < 100) throw err;
        this.logger.warn(`transaction re-run ${n + 1}/${retries} after ${(err as Error).message}`);
        await new Promise((r) => setTimeout(r, Math.min(timeLeft / 4, 10 + Math.random() * 40 * (n + 1))));
      }
    }
  }

  /**
   * Runs `work` while this process holds the session-level advisory lock `key` on a connection of
   * its own (one replica at a time, across many transactions); `skipped` when another session
   * holds it. That connection is the {@link SessionDatabase}'s: `DATABASE_DIRECT_URL` behind a
   * transaction-mode pooler, where a session lock would stay on a server connection others use.
   * `work` gets that connection, for work of many statements in the same session (retention).
   */
  async withSessionLock<T>(
    key: number,
    work: (session: pg.PoolClient) => Promise<T>,
  ): Promise<{ skipped: true } | { result: T }> {
    const runner = this.session.dataSource.createQueryRunner();
    try {
      const session = (await runner.connect()) as pg.PoolClient;
      const [{ locked }] = (await runner.query('SELECT pg_try_advisory_lock($1) AS locked', [key])) as {
        locked: boolean;
      }[];
      if (!locked) return { skipped: true };
      try {
        return { result: await work(session) };
      } finally {
        await runner.query('SELECT pg_advisory_unlock($1)', [key]);
      }
    } finally {
      await runner.release();
    }
  }

  private async once<T>(work: (tx: Tx) => Promise<T>, deadline: number): Promise<T> {
    if (deadline - Date.now() <= 0) throw new DeadlineExceededError();
    const runner = this.dataSource.createQueryRunner();
    // Outside the try below: when no connection came in time, connectBy releases the runner itself.
    const client = await this.connectBy(runner, deadline);
    let tx: Tx | undefined;
    try {
      tx = new Tx(runner, client, deadline, {
        statementTimeoutMs: this.config.statementTimeoutMs,
        lockTimeoutMs: this.config.lockTimeoutMs,
        idleInTransactionTimeoutMs: this.config.idleInTransactionTimeoutMs,
        namedStatements: !this.config.databasePooled,
      });
      const traceparent = activeTraceparent();
      if (traceparent && TRACEPARENT.test(traceparent)) tx.setLocal(TRACEPARENT_SETTING, traceparent);
      const result = await work(tx);
      await tx.finish();
      return result;
    } catch (err) {
      if (tx?.committing && isConnectionLoss(err)) {
        this.logger.warn(
          `COMMIT outcome unknown (${(err as Error).message}): the sender's redelivery finds the batch committed (duplicate) or applies it`,
        );
      }
      await tx?.rollback();
      throw err;
    } finally {
      await runner.release().catch(() => undefined);
    }
  }

  /**
   * A pooled connection for `runner`, or DeadlineExceededError when none is handed out before the
   * deadline (a full pool of busy or hung connections); one handed out later goes back to the pool
   * at once. The caller must not release `runner` when this throws: TypeORM ignores a second
   * release, and a first one made before the connection arrives would keep it from the pool.
   */
  private async connectBy(runner: QueryRunner, deadline: number): Promise<pg.PoolClient> {
    let timer: NodeJS.Timeout | undefined;
    const connecting = runner.connect() as Promise<pg.PoolClient>;
    const late = new Promise<never>((_, fail) => {
      timer = setTimeout(() => fail(new DeadlineExceededError()), Math.max(0, deadline - Date.now()));
    });
    try {
      return await Promise.race([connecting, late]);
    } catch (err) {
      connecting.then(
        () => runner.release(),
        () => undefined,
      );
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }
}
