import { Injectable } from '@nestjs/common';
import { MetricsRegistry } from '../../platform/observability/metrics-registry.js';

/** Metric names of the coupon gauges (`ops/alerts.yml`, docs/operating.md#metrics). */
export const COUPON_METRIC = {
  needingReview: 'settlement_coupons_needing_review',
  unallocated: 'settlement_coupons_unallocated',
} as const;

/** Counts behind the coupon gauges, read at scrape time. */
export interface CouponCounts {
  needingReview: number;
  unallocated: number;
}

/** The coupon gauges: flagged and unallocated coupons, counted at scrape time. */
@Injectable()
export class CouponMetrics {
  constructor(private readonly metrics: MetricsRegistry) {}

  /** Registers where the coupon gauges are read from at scrape time. */
  countCouponsWith(source: () => Promise<CouponCounts>): void {
    this.metrics.scrapedGauges('coupon gauges', source, [
      {
        name: COUPON_METRIC.needingReview,
        help: 'Coupons flagged needs_review (CONTRACT §6), counted at scrape time',
        value: (c) => c.needingReview,
      },
      {
        name: COUPON_METRIC.unallocated,
        help: 'Coupons settled by callbacks but not registered yet (no account), counted at scrape time',
        value: (c) => c.unallocated,
      },
    ]);
  }
}
