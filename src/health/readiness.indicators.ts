import { Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import type { HealthIndicatorResult } from '@nestjs/terminus';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { appliedMigrations } from '../database/migrator.js';
import { TransactionRunner } from '../database/transaction.js';
import { ShutdownState } from './shutdown-state.js';

/** Milliseconds a readiness probe waits for PostgreSQL before reporting it down. */
export const READINESS_DB_TIMEOUT_MS = 1500;

/**
 * The receiver-specific readiness indicators (terminus): not shutting down, and every migration
 * of this build recorded in `schema_migrations`. Database reachability itself is terminus'
 * TypeORM ping (see {@link HealthController}).
 */
@Injectable()
export class ReadinessIndicators {
  private migrationsApplied = false;

  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly shutdown: ShutdownState,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly transactions: TransactionRunner,
  ) {}

  /** `shutdown` is down from the first termination signal on. */
  notShuttingDown(): HealthIndicatorResult<'shutdown'> {
    const check = this.indicators.check('shutdown');
    return this.shutdown.shuttingDown
      ? check.down({ message: 'shutting down', inflightRequests: this.shutdown.inflightRequests })
      : check.up();
  }

  /**
   * `migrations` is up when every migration of this build is recorded (checked until it is once,
   * then remembered: a running build's migrations do not disappear). Times out like the ping.
   */
  migrations(): PromiseLike<HealthIndicatorResult<'migrations'>> {
    const expected = this.dataSource.migrations.map((m) => m.name ?? m.constructor.name);
    return this.indicators
      .check('migrations')
      .attempt(async () => {
        if (!this.migrationsApplied) {
          const applied = await this.transactions.run((tx) => appliedMigrations(tx), { retries: 0 });
          const pending = expected.filter((name) => !applied.has(name));
          if (pending.length) throw new Error(`pending migrations: ${pending.join(', ')}`);
          this.migrationsApplied = true;
        }
        return { applied: expected.length };
      })
      .withTimeout(READINESS_DB_TIMEOUT_MS);
  }
}
