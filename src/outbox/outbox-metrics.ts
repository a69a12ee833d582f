import { Injectable } from '@nestjs/common';
import { Counter } from 'prom-client';
import { MetricsRegistry } from '../observability/metrics-registry.js';
import type { OutboxCounts } from './outbox.repository.js';
import type { AttemptOutcome } from './outbox.types.js';

/** Metric names of the wallet outbox, as `ops/alerts.yml` uses them. */
export const WALLET_METRIC = {
  deliveries: 'settlement_wallet_deliveries_total',
  pending: 'settlement_wallet_outbox_pending',
  oldestPendingAge: 'settlement_wallet_outbox_oldest_pending_age_seconds',
  parked: 'settlement_wallet_outbox_parked',
  paused: 'settlement_wallet_outbox_paused',
} as const;

const OUTCOMES: AttemptOutcome[] = ['delivered', 'retry', 'refused', 'conflict', 'unauthorized'];

/**
 * The wallet outbox's metrics in the receiver's registry: delivery attempts by outcome, and the
 * backlog gauges (pending rows, the oldest one's age, parked rows, paused) counted at scrape time.
 */
@Injectable()
export class WalletMetrics {
  private readonly deliveries: Counter<'outcome'>;

  constructor(private readonly metrics: MetricsRegistry) {
    this.deliveries = new Counter({
      name: WALLET_METRIC.deliveries,
      help: 'Delivery attempts of outbox rows to the wallet, by outcome',
      labelNames: ['outcome'],
      registers: [metrics.registry],
    });
    for (const outcome of OUTCOMES) this.deliveries.inc({ outcome }, 0);
  }

  /** Counts one recorded attempt. */
  attempted(outcome: AttemptOutcome): void {
    this.deliveries.inc({ outcome });
  }

  /** Registers the gauges, read from `source` at scrape time. */
  countOutboxWith(source: () => Promise<OutboxCounts>): void {
    this.metrics.scrapedGauges('wallet outbox gauges', source, [
      { name: WALLET_METRIC.pending, help: 'Outbox rows not delivered yet', value: (c) => c.pending },
      {
        name: WALLET_METRIC.oldestPendingAge,
        help: 'Seconds since the oldest pending outbox row was written (0 when none)',
        value: (c) => c.oldestPendingAgeSeconds,
      },
      { name: WALLET_METRIC.parked, help: 'Outbox rows parked for an operator', value: (c) => c.parked },
      {
        name: WALLET_METRIC.paused,
        help: '1 while delivery to the wallet is paused (by an operator, or after a 401/403)',
        value: (c) => (c.paused ? 1 : 0),
      },
    ]);
  }
}
