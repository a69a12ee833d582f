import { Global, Logger, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { APP_CONFIG } from '../config/configuration.js';
import type { AppConfig } from '../config/configuration.js';
import { buildDataSourceOptions } from './data-source-options.js';
import { runMigrationsLocked } from './migrator.js';
import { TransactionRunner } from './transaction.js';

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
        if (migrationsRunOnStart !== false) await runMigrationsLocked(dataSource, new Logger('Migrations'));
        return dataSource;
      },
    }),
  ],
  providers: [TransactionRunner],
  exports: [TransactionRunner],
})
export class DatabaseModule {}
