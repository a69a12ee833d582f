import { Injectable, Logger } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { DeliveryOutcome } from '../deliveries/delivery.types.js';
import { OperationType } from '../ledger/ledger.types.js';

/** Counts behind the coupon gauges, read at scrape time. */
export interface CouponCounts {
  needingReview: number;
  unallocated: number;
}

/** Milliseconds a scrape waits for the coupon gauges' query before leaving them unchanged. */
const GAUGE_QUERY_TIMEOUT_MS = 1000;

/** Metric names, as alert rules and dashboards use them (`ops/alerts.yml`). */
export const METRIC = {
  deliveries: 'settlement_callback_deliveries_total',
  duration: 'settlement_callback_duration_seconds',
  batchCoupons: 'settlement_callback_batch_coupons',
  ledgerOperations: 'settlement_ledger_operations_total',
  needingReview: 'settlement_coupons_needing_review',
  unallocated: 'settlement_coupons_unallocated',
  attemptsUnrecorded: 'settlement_delivery_attempts_unrecorded_total',
} as const;

/**
 * The receiver's Prometheus metrics (prom-client) in a registry of this application (apps in one
 * process, as in the tests, keep their own): deliveries and their duration by outcome, batch
 * sizes, committed financial operations by type, the coupon gauges counted at scrape time by the
 * source the coupons module registers ({@link countCouponsWith}), and the process defaults. The
 * list: docs/operating.md#metrics. Recording never throws and never touches the database.
 */
@Injectable()
export class SettlementMetrics {
  readonly registry = new Registry();
  private readonly logger = new Logger('Metrics');
  private readonly deliveries: Counter<'outcome'>;
  private readonly duration: Histogram<'outcome'>;
  private readonly batchCoupons: Histogram;
  private readonly ledgerOperations: Counter<'type'>;
  private readonly unrecorded: Counter;

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.deliveries = new Counter({
      name: METRIC.deliveries,
      help: 'Callback deliveries answered, by outcome (CONTRACT §8)',
      labelNames: ['outcome'],
      registers,
    });
    this.duration = new Histogram({
      name: METRIC.duration,
      help: 'Seconds from receiving a callback delivery to answering it, by outcome',
      labelNames: ['outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 8, 10],
      registers,
    });
    this.batchCoupons = new Histogram({
      name: METRIC.batchCoupons,
      help: 'Coupons per delivered batch (couponCount)',
      buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000],
      registers,
    });
    this.ledgerOperations = new Counter({
      name: METRIC.ledgerOperations,
      help: 'Financial operations committed to the ledger, by type (CONTRACT §7)',
      labelNames: ['type'],
      registers,
    });
    this.unrecorded = new Counter({
      name: METRIC.attemptsUnrecorded,
      help: 'Delivery attempts that could not be written to delivery_attempts (CONTRACT §8), logged instead',
      registers,
    });
    for (const outcome of Object.values(DeliveryOutcome)) {
      this.deliveries.inc({ outcome }, 0);
    }
    for (const type of Object.values(OperationType)) this.ledgerOperations.inc({ type }, 0);
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

  /** Counts financial operations of a transaction that has COMMITTED (call from `Tx.afterCommit`). */
  ledgerOperationsCommitted(types: OperationType[]): void {
    try {
      for (const type of types) this.ledgerOperations.inc({ type });
    } catch (err) {
      this.logger.warn(`ledger operations not counted: ${(err as Error).message}`);
    }
  }

  /** Counts delivery attempts that could not be stored (each is logged by its writer). */
  attemptsUnrecorded(n: number): void {
    this.unrecorded.inc(n);
  }

  /** Registers where the coupon gauges are read from at scrape time (the coupons module). */
  countCouponsWith(source: () => Promise<CouponCounts>): void {
    this.scrapedGauges('coupon gauges', source, [
      {
        name: METRIC.needingReview,
        help: 'Coupons flagged needs_review (CONTRACT §6), counted at scrape time',
        value: (c) => c.needingReview,
      },
      {
        name: METRIC.unallocated,
        help: 'Coupons settled by callbacks but not registered yet (no account), counted at scrape time',
        value: (c) => c.unallocated,
      },
    ]);
  }

  /**
   * Gauges set at scrape time from one call of `source` per scrape (however many gauges ask); when
   * it fails or takes over {@link GAUGE_QUERY_TIMEOUT_MS} they keep their last value and a warning
   * names `label`. For figures a module counts in the database (coupons, wallet outbox).
   */
  scrapedGauges<T>(
    label: string,
    source: () => Promise<T>,
    gauges: { name: string; help: string; value: (figures: T) => number }[],
  ): void {
    let pending: Promise<T | undefined> | undefined;
    const read = () => {
      pending ??= this.readWithin(label, source).finally(() => {
        setImmediate(() => (pending = undefined));
      });
      return pending;
    };
    for (const gauge of gauges) {
      new Gauge({
        name: gauge.name,
        help: gauge.help,
        registers: [this.registry],
        async collect() {
          const figures = await read();
          if (figures !== undefined) this.set(gauge.value(figures));
        },
      });
    }
  }

  /** The exposition text (Prometheus text format 0.0.4) and its content type. */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  /** `source()` within {@link GAUGE_QUERY_TIMEOUT_MS}; undefined (and a warning) when it fails or is late. */
  private async readWithin<T>(label: string, source: () => Promise<T>): Promise<T | undefined> {
    let timer: NodeJS.Timeout | undefined;
    try {
      const query = source();
      const timeout = new Promise<never>((_, fail) => {
        timer = setTimeout(
          () => fail(new Error(`no answer in ${GAUGE_QUERY_TIMEOUT_MS} ms`)),
          GAUGE_QUERY_TIMEOUT_MS,
        );
      });
      query.catch(() => undefined);
      return await Promise.race([query, timeout]);
    } catch (err) {
      this.logger.warn(`${label} not refreshed: ${(err as Error).message}`);
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }
}
