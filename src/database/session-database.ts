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

/**
 * Whether two connections of `dataSource` held at once were served by the same server process:
 * true only behind a transaction- (or statement-) mode pooler, which hands the server connection
 * a transaction used to the next one (PgBouncer reuses the last one freed first); a direct
 * connection, or a session-mode pooler, has a backend of its own per client. false proves nothing
 * (another client may have taken that server connection in between).
 */
export async function sharesServerConnections(dataSource: DataSource): Promise<boolean> {
  // A pool of one connection cannot hold two at once (and never meets itself).
  if (((dataSource.options.extra as { max?: number } | undefined)?.max ?? 10) < 2) return false;
  const first = dataSource.createQueryRunner();
  const second = dataSource.createQueryRunner();
  try {
    const pid = async (runner: typeof first) =>
      ((await runner.query('SELECT pg_backend_pid() AS pid')) as { pid: number }[])[0].pid;
    const a = await pid(first);
    const b = await pid(second);
    return a === b;
  } finally {
    await first.release();
    await second.release();
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
  const why = '(two connections held at once were served by the same PostgreSQL process)';
  if (main && !pooled && (await sharesServerConnections(main)))
    throw new Error(
      `DATABASE_URL goes through a transaction-mode pooler ${why}: set DATABASE_POOLED=1, and DATABASE_DIRECT_URL to the PostgreSQL server itself (docs/production.md#pgbouncer)`,
    );
  if (direct && (await sharesServerConnections(direct)))
    throw new Error(
      `DATABASE_DIRECT_URL goes through a transaction-mode pooler ${why}: migrations and session advisory locks need the PostgreSQL server itself (or a session-mode pool) (docs/production.md#pgbouncer)`,
    );
}
