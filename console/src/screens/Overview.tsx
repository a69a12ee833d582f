import { useEffect, useRef } from 'react';
import { BarController, BarElement, CategoryScale, Chart, Legend, LinearScale, Tooltip } from 'chart.js';
import { Link } from 'wouter';
import { Facts, RecordScreen, Time } from '../components';
import { duration, utc } from '../format';
import { useGet, useSession } from '../session';
import type { DeliverySeries, OutboxFigures, Overview } from '../types';
import { DeliveryState, publisherDestination } from './Outbox';

Chart.register(BarController, BarElement, CategoryScale, LinearScale, Legend, Tooltip);

/** Colours of the delivery outcomes (docs/api.md, delivery-attempt outcomes). */
const OUTCOME_COLOURS: Record<string, string> = {
  processed: '#2e7d32',
  accepted: '#66bb6a',
  duplicate: '#1976d2',
  conflict: '#ef6c00',
  rejected: '#c62828',
  unauthorized: '#6a1b9a',
  failed: '#424242',
};

/** Bars a chart draws at most: a day's 1440 minutes would be bars under a pixel wide, invisible. */
const MAX_BARS = 144;

/**
 * A series as bars of `step` minutes (1 for the hour; 10 for the day: 144 bars), each bar the
 * sum of its minutes, labelled `HH:MM` (UTC) of its first minute.
 */
export function bars(series: DeliverySeries): {
  step: number;
  labels: string[];
  counts: Record<string, number[]>;
} {
  const step = Math.max(1, Math.ceil(series.minutes / MAX_BARS));
  const start = Date.parse(series.from);
  const n = Math.ceil(series.minutes / step);
  const labels = Array.from({ length: n }, (_, i) =>
    utc(new Date(start + i * step * 60_000).toISOString()).slice(11, 16),
  );
  const counts = Object.fromEntries(
    Object.entries(series.series).map(([outcome, perMinute]) => {
      const sums = new Array<number>(n).fill(0);
      perMinute.forEach((count, minute) => (sums[Math.floor(minute / step)] += count));
      return [outcome, sums];
    }),
  );
  return { step, labels, counts };
}

/** Deliveries per minute (or per `step` minutes, {@link bars}), stacked by outcome (Chart.js on a canvas). */
function DeliveryChart({ title, series }: { title: string; series: DeliverySeries }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const chart = useRef<Chart | null>(null);
  useEffect(() => {
    if (!canvas.current) return;
    const { step, labels, counts } = bars(series);
    const datasets = Object.entries(counts).map(([outcome, data]) => ({
      label: outcome,
      data,
      backgroundColor: OUTCOME_COLOURS[outcome] ?? '#888',
      borderWidth: 0,
      barPercentage: 0.9,
      categoryPercentage: 0.9,
    }));
    const data = { labels, datasets };
    if (chart.current) {
      chart.current.data = data;
      chart.current.update('none');
      return;
    }
    chart.current = new Chart(canvas.current, {
      type: 'bar',
      data,
      options: {
        animation: false,
        maintainAspectRatio: false,
        interaction: { mode: 'index', intersect: false },
        scales: {
          x: {
            stacked: true,
            ticks: { maxTicksLimit: 12, maxRotation: 0 },
            title: { display: true, text: `UTC, one bar per ${step === 1 ? 'minute' : `${step} minutes`}` },
          },
          y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } },
        },
        plugins: { legend: { position: 'bottom' } },
      },
    });
  }, [series]);
  useEffect(
    () => () => {
      chart.current?.destroy();
      chart.current = null;
    },
    [],
  );
  const total = Object.values(series.totals).reduce((a, b) => a + b, 0);
  const { step } = bars(series);
  const per = step === 1 ? 'minute' : `${step} minutes`;
  return (
    <figure className="chart">
      <figcaption>
        {title}: {total} deliveries (
        {Object.entries(series.totals)
          .filter(([, n]) => n > 0)
          .map(([o, n]) => `${o} ${n}`)
          .join(', ') || 'none'}
        )
      </figcaption>
      <div className="chart-box">
        <canvas ref={canvas} role="img" aria-label={`${title}: deliveries per ${per} by outcome`} />
      </div>
    </figure>
  );
}

/** An outbox's card: what is not delivered, and whether delivery runs. */
function OutboxCard(props: { title: string; href: string; figures: OutboxFigures; noConnector?: boolean }) {
  const { title, href, figures } = props;
  return (
    <article className="card" aria-label={title}>
      <h2>
        <Link href={href}>{title}</Link>
      </h2>
      <p className="big">{figures.pending + figures.parked}</p>
      <Facts
        rows={[
          ['delivery', <DeliveryState paused={figures.paused} noConnector={props.noConnector} brief />],
          ['pending', figures.pending],
          ['parked', figures.parked],
          ['skipped', figures.skipped],
          ['oldest undelivered', duration(figures.oldestUndeliveredAgeSeconds)],
        ]}
      />
    </article>
  );
}

/** The first screen: deliveries per minute, and what waits for a person. */
export function OverviewScreen() {
  const overview = useGet<Overview>('/overview', 15_000);
  const { who } = useSession();
  return (
    <RecordScreen title="Overview" refresh={overview.reload} got={overview}>
      {(data) => (
        <>
          <p className="muted">
            As of <Time at={data.generatedAt} />; refreshed every 15 s.
          </p>
          <div className="cards">
            <article className="card">
              <h2>
                <Link href="/coupons?needsReview=true">Coupons needing review</Link>
              </h2>
              <p className="big">{data.coupons.needsReview}</p>
              <ul className="plain">
                {Object.entries(data.coupons.byReviewReason).map(([reason, n]) => (
                  <li key={reason}>
                    <Link href={`/coupons?needsReview=true&reviewReason=${encodeURIComponent(reason)}`}>
                      {reason}
                    </Link>
                    : {n}
                  </li>
                ))}
              </ul>
            </article>
            <article className="card">
              <h2>
                <Link href="/coupons?unallocated=true">Unallocated coupons</Link>
              </h2>
              <p className="big">{data.coupons.unallocated}</p>
              <p className="muted">settled before registration</p>
            </article>
            <article className="card">
              <h2>
                <Link href="/quarantine">Quarantined, not replayed</Link>
              </h2>
              <p className="big">{data.quarantine.notReplayed}</p>
              <p className="muted">
                oldest: <Time at={data.quarantine.oldestNotReplayedAt} />
              </p>
            </article>
            <article className="card">
              <h2>Inbox backlog</h2>
              <p className="big">{data.inbox.pending}</p>
              <p className="muted">oldest: {duration(data.inbox.oldestPendingAgeSeconds)}</p>
            </article>
            <OutboxCard
              title="Wallet outbox"
              href="/wallet"
              figures={data.walletOutbox}
              noConnector={who.receiver.walletConnector === null}
            />
            {data.events.map((e) => (
              <OutboxCard
                key={e.publisher}
                title={`Settlement events: ${e.publisher}`}
                href={publisherDestination(e.publisher).path}
                figures={e}
              />
            ))}
          </div>
          <DeliveryChart title="Last hour" series={data.deliveries.lastHour} />
          <DeliveryChart title="Last day" series={data.deliveries.lastDay} />
        </>
      )}
    </RecordScreen>
  );
}
