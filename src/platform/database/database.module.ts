import { DynamicModule, Logger, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource, DataSourceOptions } from 'typeorm';
import { DATABASE_CONFIG } from './database.config.js';
import type { DatabaseConfig } from './database.config.js';
import type { ExtensionSchema } from './extension-schema.js';
import { buildDataSourceOptions, SessionTimeouts } from './data-source-options.js';
import { runMigrationsLocked } from './migrator.js';
import { DatabaseMetrics } from './database-metrics.js';
import { checkPooling, SessionDatabase } from './session-database.js';
import { TRANSACTION_CONFIG } from './transaction.config.js';
import type { TransactionConfig } from './transaction.config.js';
import { TransactionRunner } from './transaction.js';

/**
 * The pool's session timeouts, the backstop for a statement never answered (a hung server), and
 * the wait for a free connection: up to the callback deadline (CONTRACT §5).
 */
function sessionTimeouts(config: DatabaseConfig, transaction: TransactionConfig): SessionTimeouts {
  return {
    statementTimeoutMs: config.statementTimeoutMs,
    lockTimeoutMs: config.lockTimeoutMs,
    idleInTransactionTimeoutMs: config.idleInTransactionTimeoutMs,
    queryTimeoutMs: Math.max(config.statementTimeoutMs, config.lockTimeoutMs) + 1000,
    connectionWaitMs: transaction.callbackDeadlineMs,
  };
}

/**
 * Pending migrations under the (session) advisory lock, on a pool of their own without the query
 * backstop, on `DATABASE_DIRECT_URL` when set (never through a transaction-mode pooler).
 */
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
 * PostgreSQL through TypeORM: the `DataSource` (the pool; timeouts per transaction), pending
 * migrations run at start-up under an advisory lock (never `synchronize`), the
 * {@link SessionDatabase} for work that needs a session, and the {@link TransactionRunner}.
 * The URL is `DATABASE_URL`, or the embedded server's that `main.ts` started; with
 * `DATABASE_POOLED=1` (a transaction-mode PgBouncer) migrations and session work go to
 * `DATABASE_DIRECT_URL`. The start-up check ({@link checkPooling}) refuses a pooler not declared.
 * `forRoot(extensions)`: the extensions' entities and migrations join ours (none without).
 */
@Module({})
export class DatabaseModule {
  static forRoot(extensions?: ExtensionSchema): DynamicModule {
    return {
      module: DatabaseModule,
      global: true,
      imports: [
        TypeOrmModule.forRootAsync({
          inject: [DATABASE_CONFIG, TRANSACTION_CONFIG],
          useFactory: (config: DatabaseConfig, transaction: TransactionConfig) => ({
            ...buildDataSourceOptions(
              config.databaseUrl as string,
              sessionTimeouts(config, transaction),
              config.dbPoolSize,
              extensions,
            ),
            retryAttempts: 3,
            retryDelay: 1000,
            migrationsRunOnStart: config.runMigrationsOnStart,
            directUrl: config.databaseDirectUrl,
            pooled: config.databasePooled,
          }),
          dataSourceFactory: async (options) => {
            const { migrationsRunOnStart, directUrl, pooled, ...rest } = options as typeof options & {
              migrationsRunOnStart?: boolean;
              directUrl?: string;
              pooled?: boolean;
            };
            const main = await new DataSource(rest as DataSourceOptions).initialize();
            try {
              // Before the migrations: their session lock must not be taken through an undeclared pooler.
              await checkPooling(main, undefined, pooled === true);
              if (migrationsRunOnStart !== false)
                await migrate({ ...rest, ...(directUrl ? { url: directUrl } : {}) } as DataSourceOptions);
            } catch (err) {
              await main.destroy();
              throw err;
            }
            return main;
          },
        }),
      ],
      providers: [
        {
          provide: SessionDatabase,
          inject: [DATABASE_CONFIG, TRANSACTION_CONFIG, DataSource],
          useFactory: async (
            config: DatabaseConfig,
            transaction: TransactionConfig,
            main: DataSource,
          ): Promise<SessionDatabase> => {
            const direct =
              config.databasePooled && config.databaseDirectUrl
                ? await new DataSource(
                    buildDataSourceOptions(
                      config.databaseDirectUrl,
                      sessionTimeouts(config, transaction),
                      4,
                      extensions,
                    ),
                  ).initialize()
                : undefined;
            try {
              if (direct) await checkPooling(undefined, direct, true);
            } catch (err) {
              await direct?.destroy();
              throw err;
            }
            return new SessionDatabase(direct ?? main, direct !== undefined);
          },
        },
        TransactionRunner,
        DatabaseMetrics,
      ],
      exports: [TransactionRunner, SessionDatabase],
    };
  }
}
