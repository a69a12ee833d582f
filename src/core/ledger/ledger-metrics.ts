import { Injectable, Logger } from '@nestjs/common';
import { Counter } from 'prom-client';
import { MetricsRegistry } from '../../platform/observability/metrics-registry.js';
import { OperationType } from './ledger.types.js';

/** Metric names of the ledger (`ops/alerts.yml`, docs/operating.md#metrics). */
export const LEDGER_METRIC = {
  ledgerOperations: 'settlement_ledger_operations_total',
} as const;

/** Financial operations committed to the ledger, by type (CONTRACT §7). Never throws. */
@Injectable()
export class LedgerMetrics {
  private readonly logger = new Logger('Metrics');
  private readonly ledgerOperations: Counter<'type'>;

  constructor(metrics: MetricsRegistry) {
    this.ledgerOperations = new Counter({
      name: LEDGER_METRIC.ledgerOperations,
      help: 'Financial operations committed to the ledger, by type (CONTRACT §7)',
      labelNames: ['type'],
      registers: [metrics.registry],
    });
    for (const type of Object.values(OperationType)) this.ledgerOperations.inc({ type }, 0);
  }

  /** Counts financial operations of a transaction that has COMMITTED (call from `Tx.afterCommit`). */
  ledgerOperationsCommitted(types: OperationType[]): void {
    try {
      for (const type of types) this.ledgerOperations.inc({ type });
    } catch (err) {
      this.logger.warn(`ledger operations not counted: ${(err as Error).message}`);
    }
  }
}
