import { DataSourceOptions } from 'typeorm';
import { ENTITIES } from './entities.js';
import { MIGRATIONS } from '../../../migrations/index.js';
import type { ExtensionSchema } from './extension-schema.js';
import { PooledClient } from './pooled-client.js';

/**
 * Timeouts of the app's database work (milliseconds). The statement, lock and idle-in-transaction
 * timeouts are not sent at connection start (a transaction-mode PgBouncer refuses startup
 * `options`, and would lose them between server connections): {@link Tx} sets them per
 * transaction (SET LOCAL, in its first group), docs/production.md#pgbouncer.
 */
export interface SessionTimeouts {
  statementTimeoutMs: number;
  lockTimeoutMs: number;
  idleInTransactionTimeoutMs: number;
  /**
   * Backstop on this side for a query whose answer never comes (a hung server): after this many
   * milliseconds the connection is destroyed. Transactions give each statement their deadline
   * instead (Tx); this one covers the rest (START TRANSACTION, COMMIT, entity reads). Unset for
   * migrations, which may run long.
   */
  queryTimeoutMs?: number;
  /**
   * Longest wait for a connection of the pool, queued behind busy ones or being opened (default
   * 3000). The app passes the callback deadline: each transaction also stops waiting at its own
   * deadline (TransactionRunner), so a burst queued behind a full pool gets the whole deadline.
   */
  connectionWaitMs?: number;
}

/** The `application_name` of the receiver's sessions (its `pg_stat_activity` rows). */
export const APPLICATION_NAME = 'settlement-receiver';

/**
 * TypeORM options for the app, the migration CLI (`ormconfig.ts`) and the tests: PostgreSQL at
 * `url`, the entities and migrations of this repository and of the extensions (`extensions`,
 * docs/extending.md#schema), never `synchronize`. Nothing is sent
 * at connection start but the application name: the same options work directly and through a
 * transaction-mode PgBouncer (the timeouts are set per transaction by {@link Tx}, §5).
 */
export function buildDataSourceOptions(
  url: string,
  timeouts: SessionTimeouts = {
    statementTimeoutMs: 5000,
    lockTimeoutMs: 3000,
    idleInTransactionTimeoutMs: 5000,
  },
  poolSize = 16,
  extensions?: ExtensionSchema,
): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    entities: [...ENTITIES, ...(extensions?.entities ?? [])],
    migrations: [...MIGRATIONS, ...(extensions?.migrations ?? [])],
    migrationsTableName: 'schema_migrations',
    synchronize: false,
    migrationsRun: false,
    // Failures are logged by the exception filter, without parameters (they hold whole payloads).
    logging: false,
    applicationName: APPLICATION_NAME,
    poolSize,
    extra: {
      max: poolSize,
      // A connection once opened stays (no idle timeout below the maximum): a burst after a quiet
      // minute found the pool emptied and paid for new connections, their catalog caches and
      // prepared statements, under load: seconds of answers at its start (issue 40).
      min: poolSize,
      // Idle connections do not keep the process alive (a pool a failed start left behind).
      allowExitOnIdle: true,
      Client: PooledClient,
      connectionTimeoutMillis: timeouts.connectionWaitMs ?? 3000,
      // A connection whose peer vanished (host down, partition) is noticed by TCP keepalive.
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      ...(timeouts.queryTimeoutMs ? { query_timeout: timeouts.queryTimeoutMs } : {}),
      // node-postgres pipeline mode: statements queued on one connection are written without
      // waiting for the previous answer (the callback's hot path sends its transaction in two
      // such groups, see Tx.send); statements awaited one by one behave exactly as without it.
      pipeline: true,
    },
  };
}
