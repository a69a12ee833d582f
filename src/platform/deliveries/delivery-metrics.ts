import { Injectable, Logger } from '@nestjs/common';
import { Counter, Histogram } from 'prom-client';
import { MetricsRegistry } from '../observability/metrics-registry.js';
import { DeliveryOutcome } from './delivery.types.js';

/** Metric names of the callback's deliveries, as alert rules and dashboards use them (`ops/alerts.yml`). */
export const DELIVERY_METRIC = {
  deliveries: 'settlement_callback_deliveries_total',
  duration: 'settlement_callback_duration_seconds',
  batchCoupons: 'settlement_callback_batch_coupons',
  attemptsUnrecorded: 'settlement_delivery_attempts_unrecorded_total',
} as const;

/**
 * The callback's delivery metrics (CONTRACT §8): deliveries and their duration by outcome, batch
 * sizes, attempts that could not be stored. Recording never throws and never touches the database.
 */
@Injectable()
export class DeliveryMetrics {
  private readonly logger = new Logger('Metrics');
  private readonly deliveries: Counter<'outcome'>;
  private readonly duration: Histogram<'outcome'>;
  private readonly batchCoupons: Histogram;
  private readonly unrecorded: Counter;

  constructor(metrics: MetricsRegistry) {
    const registers = [metrics.registry];
    this.deliveries = new Counter({
      name: DELIVERY_METRIC.deliveries,
      help: 'Callback deliveries answered, by outcome (CONTRACT §8)',
      labelNames: ['outcome'],
      registers,
    });
    this.duration = new Histogram({
      name: DELIVERY_METRIC.duration,
      help: 'Seconds from receiving a callback delivery to answering it, by outcome',
      labelNames: ['outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 8, 10],
      registers,
    });
    this.batchCoupons = new Histogram({
      name: DELIVERY_METRIC.batchCoupons,
      help: 'Coupons per delivered batch (couponCount)',
      buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000],
      registers,
    });
    this.unrecorded = new Counter({
      name: DELIVERY_METRIC.attemptsUnrecorded,
      help: 'Delivery attempts that could not be written to delivery_attempts (CONTRACT §8), logged instead',
      registers,
    });
    for (const outcome of Object.values(DeliveryOutcome)) this.deliveries.inc({ outcome }, 0);
  }

  /** Counts one answered delivery; `seconds` from receipt to answer, `coupons` when the body was read. */
  deliveryAnswered(outcome: DeliveryOutcome, seconds: number, coupons: number | null): void {
    try {
      this.deliveries.inc({ outcome });
      this.duration.observe({ outcome }, seconds);
      if (coupons !== null) this.batchCoupons.observe(coupons);
    } catch (err) {
      this.logger.warn(`delivery not counted: ${(err as Error).message}`);
    }
  }

  /** Counts delivery attempts that could not be stored (each is logged by its writer). */
  attemptsUnrecorded(n: number): void {
    this.unrecorded.inc(n);
  }
}
