import { OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';

/**
 * The connections for work that needs a PostgreSQL session across transactions: session advisory
 * locks held over many transactions ({@link TransactionRunner.withSessionLock}: scheduled
 * reconciliation, the delivery rollup, bulk actions) and the retention job (its lock, its session
 * timeouts). Behind a transaction-mode pooler (`DATABASE_POOLED=1`) a small pool of its own on
 * `DATABASE_DIRECT_URL`; else the app's pool. Migrations take their own connection to the same
 * server (database.module.ts). docs/production.md#pgbouncer.
 */
export class SessionDatabase implements OnApplicationShutdown {
  constructor(
    readonly dataSource: DataSource,
    /** true: this pool is its own (direct URL), closed at shutdown; false: the app's. */
    private readonly own: boolean,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    if (this.own && this.dataSource.isInitialized) await this.dataSource.destroy();
  }
}

/** Rounds of {@link sharesServerConnections}' probe: each misses only when other clients happen to
 * take the very server connection it looks for, so a miss in every round is vanishingly rare. */
const POOLER_PROBE_ROUNDS = 16;

/**
 * Whether `dataSource` reaches PostgreSQL through a transaction- (or statement-) mode pooler,
 * probed with two connections held at once, A and B: A asks for its server process
 * (`pg_backend_pid()`), then in up to `rounds` rounds B opens a transaction and asks, A asks while
 * B holds it and again after. A direct connection, or a session-mode pooler, has one backend per
 * client for its life: A always meets the same one and B never meets it. Behind a
 * transaction-mode pooler each statement outside a transaction may get any free server
 * connection: B meets A's (PgBouncer hands out the last one freed first), or A meets another one.
 * true: a pooler for certain; false: none seen (other clients may have taken the server
 * connections every time).
 */
export async function sharesServerConnections(
  dataSource: DataSource,
  rounds = POOLER_PROBE_ROUNDS,
): Promise<boolean> {
  // A pool of one connection cannot hold two at once (and never meets itself).
  if (((dataSource.options.extra as { max?: number } | undefined)?.max ?? 10) < 2) return false;
  const a = dataSource.createQueryRunner();
  const b = dataSource.createQueryRunner();
  const pid = async (runner: typeof a) =>
    ((await runner.query('SELECT pg_backend_pid() AS pid')) as { pid: number }[])[0].pid;
  try {
    const first = await pid(a);
    for (let round = 0; round < rounds; round++) {
      await b.startTransaction();
      try {
        const held = await pid(b);
        const during = await pid(a);
        if (held === first || during !== first) return true;
      } finally {
        await b.rollbackTransaction();
      }
      if ((await pid(a)) !== first) return true;
    }
    return false;
  } finally {
    await a.release();
    await b.release();
  }
}

/**
 * The start-up check of the pooling configuration: refuses to start (an Error naming the variable
 * and what to set) when `DATABASE_URL` is seen going through a transaction-mode pooler without
 * `DATABASE_POOLED=1` (named prepared statements would collide, session locks would not hold), or
 * when `DATABASE_DIRECT_URL` does. `main`/`direct` undefined: not checked (yet).
 */
export async function checkPooling(
  main: DataSource | undefined,
  direct: DataSource | undefined,
  pooled: boolean,
): Promise<void> {
  const why = '(two connections held at once met the same PostgreSQL process, or one met two)';
  if (main && !pooled && (await sharesServerConnections(main)))
    throw new Error(
      `DATABASE_URL goes through a transaction-mode pooler ${why}: set DATABASE_POOLED=1, and DATABASE_DIRECT_URL to the PostgreSQL server itself (docs/production.md#pgbouncer)`,
    );
  if (direct && (await sharesServerConnections(direct)))
    throw new Error(
      `DATABASE_DIRECT_URL goes through a transaction-mode pooler ${why}: migrations and session advisory locks need the PostgreSQL server itself (or a session-mode pool) (docs/production.md#pgbouncer)`,
    );
}
