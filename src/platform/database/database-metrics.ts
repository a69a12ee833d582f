import { Injectable, OnModuleInit } from '@nestjs/common';
import { MetricsRegistry } from '../observability/metrics-registry.js';
import { APPLICATION_NAME } from './data-source-options.js';
import { TransactionRunner } from './transaction.js';

/** Metric names of the database's waits (`ops/dashboard.json`, docs/operating.md#metrics). */
export const DATABASE_METRIC = {
  lockWaiting: 'settlement_database_lock_waiting',
} as const;

/**
 * The database gauges, read at scrape time: sessions of the receiver (every replica's: they share
 * the application name) waiting for a row or table lock now, from `pg_stat_activity` (a view of
 * shared memory, no table read). Pool waits are the governor's `settlement_background_pool_waiting`.
 */
@Injectable()
export class DatabaseMetrics implements OnModuleInit {
  constructor(
    private readonly metrics: MetricsRegistry,
    private readonly transactions: TransactionRunner,
  ) {}

  onModuleInit(): void {
    this.metrics.scrapedGauges(
      'database gauges',
      () =>
        this.transactions.run(
          async (tx) => {
            const { rows } = await tx.query<{ n: number }>(
              `SELECT count(*)::int AS n FROM pg_stat_activity
                WHERE datname = current_database() AND application_name = $1 AND wait_event_type = 'Lock'`,
              [APPLICATION_NAME],
            );
            return rows[0].n;
          },
          { deadline: Date.now() + 1000, retries: 0 },
        ),
      [
        {
          name: DATABASE_METRIC.lockWaiting,
          help: "The receiver's database sessions (all replicas) waiting for a lock now, counted at scrape time",
          value: (n) => n,
        },
      ],
    );
  }
}
