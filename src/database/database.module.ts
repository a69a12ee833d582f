import { Global, Logger, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import type { Client as PgClient, Pool as PgPool } from 'pg';
import { DataSource } from 'typeorm';
import { APP_CONFIG } from '../config/configuration.js';
import type { AppConfig } from '../config/configuration.js';
import { buildDataSourceOptions } from './data-source-options.js';
import { runMigrationsLocked } from './migrator.js';
import { TransactionRunner } from './transaction.js';

/**
 * Every pooled pg client gets a permanent 'error' listener: a backend terminated while its client
 * sits idle or between pool hand-overs (admin shutdown, failover) emits 'error' on the client, and
 * without a listener Node would end the process. The broken client is discarded by the pool on
 * its next use; the request that meets it fails and is answered 503.
 */
function guardPoolClients(dataSource: DataSource): void {
  const logger = new Logger('Database');
  const pool = (dataSource.driver as unknown as { master?: PgPool }).master;
  if (!pool) return;
  const guard = (client: PgClient) => {
    if ((client as PgClient & { __guarded?: boolean }).__guarded) return;
    (client as PgClient & { __guarded?: boolean }).__guarded = true;
    client.on('error', (err: Error) => logger.warn(`database connection lost: ${err.message}`));
  };
  pool.on('connect', guard);
  for (const client of (pool as unknown as { _clients?: PgClient[] })._clients ?? []) guard(client);
}

/**
 * PostgreSQL through TypeORM: the `DataSource` (pool with session timeouts), pending migrations
 * run at start-up under an advisory lock (never `synchronize`), and the {@link TransactionRunner}.
 * The URL is `DATABASE_URL`, or the embedded server's that `main.ts` started.
 */
@Global()
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => ({
        ...buildDataSourceOptions(
          config.databaseUrl as string,
          {
            statementTimeoutMs: config.statementTimeoutMs,
            lockTimeoutMs: config.lockTimeoutMs,
            idleInTransactionTimeoutMs: config.idleInTransactionTimeoutMs,
          },
          config.dbPoolSize,
        ),
        retryAttempts: 3,
        retryDelay: 1000,
        migrationsRunOnStart: config.runMigrationsOnStart,
      }),
      dataSourceFactory: async (options) => {
        const { migrationsRunOnStart, ...rest } = options as typeof options & {
          migrationsRunOnStart?: boolean;
        };
        const dataSource = await new DataSource(rest as typeof options & object).initialize();
        guardPoolClients(dataSource);
        if (migrationsRunOnStart !== false) await runMigrationsLocked(dataSource, new Logger('Migrations'));
        return dataSource;
      },
    }),
  ],
  providers: [TransactionRunner],
  exports: [TransactionRunner],
})
export class DatabaseModule {}
