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
 * The readiness indicators (terminus): not shutting down, PostgreSQL answering `SELECT 1` and
 * every migration of this build recorded, each within {@link READINESS_DB_TIMEOUT_MS} through
 * the TransactionRunner (a hung server: the connection is given up at that deadline). A failure
 * names the indicator only, never the database's address or its driver's error.
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

  /** `database` is up when PostgreSQL answers a query within the probe's budget. */
  async database(): Promise<HealthIndicatorResult<'database'>> {
    const check = this.indicators.check('database');
    const started = Date.now();
    try {
      await this.transactions.run((tx) => tx.query('SELECT 1'), this.budget());
      return check.up({ responseTime: Date.now() - started });
    } catch {
      return check.down({ message: `no answer within ${READINESS_DB_TIMEOUT_MS} ms` });
    }
  }

  /** `shutdown` is down from the first termination signal on. */
  notShuttingDown(): HealthIndicatorResult<'shutdown'> {
    const check = this.indicators.check('shutdown');
    return this.shutdown.shuttingDown
      ? check.down({ message: 'shutting down', inflightRequests: this.shutdown.inflightRequests })
      : check.up();
  }

  /**
   * `migrations` is up when every migration of this build is recorded (checked until it is once,
   * then remembered: a running build's migrations do not disappear).
   */
  async migrations(): Promise<HealthIndicatorResult<'migrations'>> {
    const check = this.indicators.check('migrations');
    const started = Date.now();
    const expected = this.dataSource.migrations.map((m) => m.name ?? m.constructor.name);
    if (!this.migrationsApplied) {
      try {
        const applied = await this.transactions.run((tx) => appliedMigrations(tx), this.budget());
        const pending = expected.filter((name) => !applied.has(name)).length;
        if (pending) return check.down({ message: `${pending} migration(s) not applied` });
        this.migrationsApplied = true;
      } catch {
        return check.down({ message: `no answer within ${READINESS_DB_TIMEOUT_MS} ms` });
      }
    }
    return check.up({ applied: expected.length, responseTime: Date.now() - started });
  }

  private budget() {
    return { deadline: Date.now() + READINESS_DB_TIMEOUT_MS, retries: 0 };
  }
}
