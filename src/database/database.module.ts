import { Global, Logger, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource, DataSourceOptions } from 'typeorm';
import { APP_CONFIG } from '../config/configuration.js';
import type { AppConfig } from '../config/configuration.js';
import { buildDataSourceOptions, SessionTimeouts } from './data-source-options.js';
import { runMigrationsLocked } from './migrator.js';
import { DatabaseMetrics } from './database-metrics.js';
import { TransactionRunner } from './transaction.js';

/**
 * The pool's session timeouts, the backstop for a statement never answered (a hung server), and
 * the wait for a free connection: up to the callback deadline (CONTRACT §5).
 */
function sessionTimeouts(config: AppConfig): SessionTimeouts {
  return {
    statementTimeoutMs: config.statementTimeoutMs,
    lockTimeoutMs: config.lockTimeoutMs,
    idleInTransactionTimeoutMs: config.idleInTransactionTimeoutMs,
    queryTimeoutMs: Math.max(config.statementTimeoutMs, config.lockTimeoutMs) + 1000,
    connectionWaitMs: config.callbackDeadlineMs,
  };
}

/** Pending migrations under the advisory lock, on a pool of their own without the query backstop. */
async function migrate(options: DataSourceOptions): Promise<void> {
  const extra = { ...(options.extra as Record<string, unknown>), query_timeout: undefined, max: 2 };
  const dataSource = await new DataSource({ ...options, extra } as DataSourceOptions).initialize();
  try {
    await runMigrationsLocked(dataSource, new Logger('Migrations'));
  } finally {
    await dataSource.destroy();
  }
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
        ...buildDataSourceOptions(config.databaseUrl as string, sessionTimeouts(config), config.dbPoolSize),
        retryAttempts: 3,
        retryDelay: 1000,
        migrationsRunOnStart: config.runMigrationsOnStart,
      }),
      dataSourceFactory: async (options) => {
        const { migrationsRunOnStart, ...rest } = options as typeof options & {
          migrationsRunOnStart?: boolean;
        };
        if (migrationsRunOnStart !== false) await migrate(rest as DataSourceOptions);
        return new DataSource(rest as DataSourceOptions).initialize();
      },
    }),
  ],
  providers: [TransactionRunner, DatabaseMetrics],
  exports: [TransactionRunner],
})
export class DatabaseModule {}
