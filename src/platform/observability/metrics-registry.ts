import { Injectable, Logger } from '@nestjs/common';
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';

/** Milliseconds a scrape waits for a gauge's query before leaving it unchanged. */
const GAUGE_QUERY_TIMEOUT_MS = 1000;

/**
 * The receiver's Prometheus registry (prom-client), one per application (apps in one process, as
 * in the tests, keep their own), with the process defaults. Each feature owns its metrics and
 * registers them here (`registers: [metrics.registry]`, or {@link scrapedGauges} for figures it
 * counts in the database): docs/operating.md#metrics lists them. Imports no feature module.
 */
@Injectable()
export class MetricsRegistry {
  readonly registry = new Registry();
  private readonly logger = new Logger('Metrics');

  constructor() {
    collectDefaultMetrics({ register: this.registry });
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
  async readWithin<T>(label: string, source: () => Promise<T>): Promise<T | undefined> {
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
