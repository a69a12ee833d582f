import { Injectable } from '@nestjs/common';
import { Tx } from '../../platform/database/transaction.js';

/** The outcomes of `delivery_attempts` (its CHECK), the columns of `delivery_minutes`. */
export const DELIVERY_OUTCOMES = [
  'processed',
  'accepted',
  'duplicate',
  'conflict',
  'rejected',
  'unauthorized',
  'failed',
] as const;
export type CountedOutcome = (typeof DELIVERY_OUTCOMES)[number];

/** Minutes of one day: the overview's longest window. */
export const DAY_MINUTES = 1440;

/** A minute's counts, from the rollup (`rolled`) or counted live from `delivery_attempts`. */
export interface MinuteCounts extends Record<CountedOutcome, number> {
  minute: Date;
}

/** The figures of one outbox (the wallet's, a publisher's): what is not delivered, and whether it waits. */
export interface OutboxFigures {
  paused: boolean;
  pending: number;
  parked: number;
  skipped: number;
  /** Seconds since the oldest pending or parked row was written (0 when none). */
  oldestUndeliveredAgeSeconds: number;
}

/** What the overview reads besides the deliveries: one snapshot of every backlog. */
export interface BacklogCounts {
  needsReview: number;
  byReviewReason: Record<string, number> | null;
  unallocated: number;
  quarantineNotReplayed: number;
  oldestNotReplayedAt: Date | null;
  inboxPending: number;
  inboxOldestAgeSeconds: number;
  walletOutbox: OutboxFigures;
  /** One entry per publisher asked for, in that order. */
  events: (OutboxFigures & { publisher: string })[];
}

/**
 * One outbox's {@link OutboxFigures} as a jsonb expression, over its partial indexes (`…_pending_idx`,
 * `…_held_idx` of parked and skipped rows):
 * `rows` picks its rows (alias `o`), `stateRow` its pause state (alias `s`; none: not paused).
 * Delivered rows are not counted: on a large outbox that count would read the whole index.
 */
function outboxFigures(outbox: string, state: string, rows: string, stateRow: string): string {
  const of = (status: string) => `${outbox} o WHERE ${rows} AND o.status = '${status}'`;
  return `jsonb_build_object(
    'paused', coalesce((SELECT s.paused FROM ${state} s WHERE ${stateRow}), false),
    'pending', (SELECT count(*)::int FROM ${of('pending')}),
    'parked', (SELECT count(*)::int FROM ${of('parked')}),
    'skipped', (SELECT count(*)::int FROM ${of('skipped')}),
    'oldestUndeliveredAgeSeconds', coalesce((SELECT extract(epoch FROM now() - min(created_at))::float8 FROM (
        (SELECT o.created_at FROM ${of('pending')} ORDER BY o.id LIMIT 1)
        UNION ALL
        (SELECT o.created_at FROM ${of('parked')} ORDER BY o.id LIMIT 1)) u), 0))`;
}

const SUMS = DELIVERY_OUTCOMES.map((o) => `count(*) FILTER (WHERE outcome = '${o}')::int AS ${o}`).join(', ');
const COLUMNS = DELIVERY_OUTCOMES.join(', ');

/**
 * The SQL of the overview (docs/api.md#overview): `delivery_minutes`, the rollup of delivery
 * attempts per closed minute that the rollup job writes, and the counts of every backlog, each
 * over an index (the partial indexes of flagged and unallocated coupons, of unreplayed quarantine
 * entries, of pending inbox rows; the outboxes' pending and held indexes).
 */
@Injectable()
export class OverviewRepository {
  /**
   * The last day's minutes (from `date_trunc('minute', now()) - 1439 minutes`), in one statement,
   * so one snapshot: closed minutes from the rollup, the later ones counted live over
   * `delivery_attempts_received_idx`. `rolledUntil`: the first minute not rolled up.
   */
  async deliveries(tx: Tx): Promise<{ now: Date; rolledUntil: Date | null; minutes: MinuteCounts[] }> {
    const { rows } = await tx.query<MinuteCounts & { src: string }>(
      `WITH r AS (SELECT max(minute) + interval '1 minute' AS until FROM delivery_minutes),
            w AS (SELECT date_trunc('minute', now(), 'UTC') - interval '${DAY_MINUTES - 1} minutes' AS since)
       SELECT 'clock' AS src, now() AS minute, ${DELIVERY_OUTCOMES.map((o) => `0 AS ${o}`).join(', ')}
       UNION ALL
       SELECT 'until', r.until, ${DELIVERY_OUTCOMES.map(() => '0').join(', ')} FROM r WHERE r.until IS NOT NULL
       UNION ALL
       SELECT 'rolled', m.minute, ${DELIVERY_OUTCOMES.map((o) => `m.${o}`).join(', ')}
         FROM delivery_minutes m, w WHERE m.minute >= w.since
       UNION ALL
       SELECT 'live', date_trunc('minute', d.received_at, 'UTC'), ${SUMS}
         FROM delivery_attempts d
        WHERE d.received_at >= (SELECT greatest(coalesce(r.until, '-infinity'), w.since) FROM r, w)
        GROUP BY 2`,
    );
    const now = rows.find((r) => r.src === 'clock')?.minute as Date;
    const rolledUntil = rows.find((r) => r.src === 'until')?.minute ?? null;
    return { now, rolledUntil, minutes: rows.filter((r) => r.src === 'rolled' || r.src === 'live') };
  }

  /** Every backlog the overview shows, in one statement; `publishers`: the event outboxes to count. */
  async backlogs(tx: Tx, publishers: string[]): Promise<BacklogCounts> {
    const { rows } = await tx.query<BacklogCounts>(
      `SELECT (SELECT count(*)::int FROM coupons WHERE needs_review) AS "needsReview",
              (SELECT jsonb_object_agg(coalesce(reason, 'unknown'), n) FROM (
                 SELECT review_reason AS reason, count(*)::int AS n FROM coupons WHERE needs_review GROUP BY 1) x
              ) AS "byReviewReason",
              (SELECT count(*)::int FROM coupons WHERE account_id IS NULL) AS unallocated,
              (SELECT count(*)::int FROM quarantined_bodies WHERE replayed_at IS NULL) AS "quarantineNotReplayed",
              (SELECT received_at FROM quarantined_bodies WHERE replayed_at IS NULL ORDER BY id LIMIT 1)
                AS "oldestNotReplayedAt",
              (SELECT count(*)::int FROM callback_inbox WHERE status = 'pending') AS "inboxPending",
              coalesce((SELECT extract(epoch FROM now() - received_at)::float8 FROM callback_inbox
                         WHERE status = 'pending' ORDER BY id LIMIT 1), 0) AS "inboxOldestAgeSeconds",
              ${outboxFigures('wallet_outbox', 'wallet_outbox_state', 'TRUE', 's.id = 1')} AS "walletOutbox",
              (SELECT coalesce(jsonb_agg(jsonb_build_object('publisher', p.name) || ${outboxFigures(
                'event_outbox',
                'event_outbox_state',
                'o.publisher = p.name',
                's.publisher = p.name',
              )} ORDER BY p.ord), '[]') FROM unnest($1::text[]) WITH ORDINALITY p(name, ord)) AS events`,
      [publishers],
    );
    return rows[0];
  }

  /**
   * The minutes the rollup job counts now: from 4 minutes before the last one it wrote (recounted:
   * an attempt is written up to a deadline after it was received), or a day ago on the first run,
   * to `lagMinutes` before the current minute.
   */
  async rollupRange(tx: Tx, lagMinutes: number): Promise<{ start: Date; cutoff: Date }> {
    const { rows } = await tx.query<{ start: Date; cutoff: Date }>(
      `SELECT coalesce(max(minute) - interval '4 minutes', date_trunc('minute', now(), 'UTC') - interval '1 day') AS start,
              date_trunc('minute', now(), 'UTC') - make_interval(mins => $1) AS cutoff
         FROM delivery_minutes`,
      [lagMinutes],
    );
    return rows[0];
  }

  /** Counts the minutes in [`from`, `to`) (whole minutes) and writes them, replacing earlier counts. */
  async rollUp(tx: Tx, from: Date, to: Date): Promise<number> {
    const { rowCount } = await tx.query(
      `INSERT INTO delivery_minutes (minute, ${COLUMNS})
       SELECT m.minute, ${DELIVERY_OUTCOMES.map((o) => `coalesce(c.${o}, 0)`).join(', ')}
         FROM generate_series($1::timestamptz, $2::timestamptz - interval '1 minute', interval '1 minute') AS m(minute)
         LEFT JOIN (SELECT date_trunc('minute', received_at, 'UTC') AS minute, ${SUMS}
                      FROM delivery_attempts WHERE received_at >= $1 AND received_at < $2 GROUP BY 1) c
           ON c.minute = m.minute
       ON CONFLICT (minute) DO UPDATE SET ${DELIVERY_OUTCOMES.map((o) => `${o} = EXCLUDED.${o}`).join(', ')}`,
      [from, to],
    );
    return rowCount;
  }

  /** Forgets minutes older than `days` days. */
  async prune(tx: Tx, days: number): Promise<void> {
    await tx.query(`DELETE FROM delivery_minutes WHERE minute < now() - make_interval(days => $1)`, [days]);
  }
}
