import { Counter, Gauge } from 'prom-client';
import { MetricsRegistry } from '../../platform/observability/metrics-registry.js';
import type { OutboxCounts } from './outbox.repository.js';
import type { AttemptOutcome } from './outbox.types.js';

/** The metric names of an outbox family (one per kind of destination). */
export interface OutboxMetricNames {
  deliveries: string;
  pending: string;
  oldestPendingAge: string;
  pastDue: string;
  oldestPastDue: string;
  parked: string;
  oldestParkedAge: string;
  paused: string;
}

/** Metric names of the wallet outbox, as `ops/alerts.yml` uses them. */
export const WALLET_METRIC = {
  deliveries: 'settlement_wallet_deliveries_total',
  pending: 'settlement_wallet_outbox_pending',
  oldestPendingAge: 'settlement_wallet_outbox_oldest_pending_age_seconds',
  pastDue: 'settlement_wallet_outbox_past_due',
  oldestPastDue: 'settlement_wallet_outbox_oldest_past_due_seconds',
  parked: 'settlement_wallet_outbox_parked',
  oldestParkedAge: 'settlement_wallet_outbox_oldest_parked_age_seconds',
  paused: 'settlement_wallet_outbox_paused',
} as const;

/** Metric names of the settlement events' outbox (label `publisher`), as `ops/alerts.yml` uses them. */
export const EVENT_METRIC = {
  deliveries: 'settlement_event_deliveries_total',
  pending: 'settlement_event_outbox_pending',
  oldestPendingAge: 'settlement_event_outbox_oldest_pending_age_seconds',
  pastDue: 'settlement_event_outbox_past_due',
  oldestPastDue: 'settlement_event_outbox_oldest_past_due_seconds',
  parked: 'settlement_event_outbox_parked',
  oldestParkedAge: 'settlement_event_outbox_oldest_parked_age_seconds',
  paused: 'settlement_event_outbox_paused',
} as const;

const OUTCOMES: AttemptOutcome[] = ['delivered', 'retry', 'refused', 'conflict', 'unauthorized'];

/**
 * The metrics of one outbox family in the receiver's registry: delivery attempts by outcome, and
 * the backlog gauges (pending rows, the oldest one's age, rows past due and by how long, parked
 * rows and the oldest one's age, paused) counted at scrape
 * time from each destination's source. With a `label` (the events' `publisher`) every series is
 * per destination; without (the wallet) there is one destination.
 */
export class OutboxMetrics {
  private readonly deliveries: Counter<string>;
  private readonly sources = new Map<string, () => Promise<OutboxCounts>>();

  constructor(
    private readonly metrics: MetricsRegistry,
    names: OutboxMetricNames,
    private readonly label: string | null,
    /** `the wallet`, `the message broker`: in the help texts. */
    target: string,
  ) {
    const labelNames = label ? [label] : [];
    const registers = [metrics.registry];
    this.deliveries = new Counter({
      name: names.deliveries,
      help: `Delivery attempts of outbox rows to ${target}, by outcome`,
      labelNames: [...labelNames, 'outcome'],
      registers,
    });
    if (!label) for (const outcome of OUTCOMES) this.deliveries.inc({ outcome }, 0);
    const gauge = (name: string, help: string, value: (c: OutboxCounts) => number) => {
      const read = () => this.readAll();
      const labelOf = (destination: string) => (label ? { [label]: destination } : {});
      new Gauge({
        name,
        help,
        labelNames,
        registers,
        async collect() {
          for (const [destination, figures] of await read())
            if (figures !== undefined) this.set(labelOf(destination), value(figures));
        },
      });
    };
    gauge(names.pending, 'Outbox rows not delivered yet', (c) => c.pending);
    gauge(
      names.oldestPendingAge,
      'Seconds since the oldest pending outbox row was written (0 when none)',
      (c) => c.oldestPendingAgeSeconds,
    );
    gauge(
      names.pastDue,
      'Pending outbox rows due now (next_attempt_at passed, not leased): work no worker has claimed yet',
      (c) => c.pastDue,
    );
    gauge(
      names.oldestPastDue,
      'Seconds since the most overdue pending outbox row became due (0 when none is due)',
      (c) => c.oldestPastDueSeconds,
    );
    gauge(names.parked, 'Outbox rows parked for an operator', (c) => c.parked);
    gauge(
      names.oldestParkedAge,
      'Seconds since the oldest parked outbox row was parked (0 when none)',
      (c) => c.oldestParkedAgeSeconds,
    );
    gauge(
      names.paused,
      `1 while delivery to ${target} is paused (by an operator, or after an unauthorized answer)`,
      (c) => (c.paused ? 1 : 0),
    );
  }

  /** Counts one recorded attempt of `destination`. */
  attempted(destination: string, outcome: AttemptOutcome): void {
    this.deliveries.inc(this.label ? { [this.label]: destination, outcome } : { outcome });
  }

  /** Registers where `destination`'s gauges are read from at scrape time (zeroes its counters). */
  countWith(destination: string, source: () => Promise<OutboxCounts>): void {
    this.sources.set(destination, source);
    if (this.label)
      for (const outcome of OUTCOMES) this.deliveries.inc({ [this.label]: destination, outcome }, 0);
  }

  /** Each destination's figures (undefined: not refreshed this scrape), one read per scrape. */
  private pending: Promise<[string, OutboxCounts | undefined][]> | undefined;
  private readAll(): Promise<[string, OutboxCounts | undefined][]> {
    this.pending ??= Promise.all(
      [...this.sources].map(async ([destination, source]): Promise<[string, OutboxCounts | undefined]> => [
        destination,
        await this.metrics.readWithin(`${destination} outbox gauges`, source),
      ]),
    ).finally(() => setImmediate(() => (this.pending = undefined)));
    return this.pending;
  }
}
