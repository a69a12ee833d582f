/** The inbox phase of `npm run bench`: the receiver in inbox mode, its answers and the apply backlog. */
import { loadavg } from 'node:os';
import pg from 'pg';
import { sleep } from './processes.js';
import { runLoad, RunStats, Slice, summarize, WARMUP_DELIVERIES } from './run-load.js';
import {
  DRAIN_TIMEOUT_MS,
  DURATION,
  INBOX_CONCURRENCY,
  INBOX_ENV,
  PORT_BASE,
  ProfileSpec,
  SAMPLE_MS,
} from './run-options.js';
import { ms } from './run-report.js';
import { children, Side } from './run-sides.js';
import { describeWaits, lockShare, MONITOR_APP } from './run-waits.js';

/** Figures of the inbox-mode run (docs/benchmark.md, "Inbox mode"). */
export interface InboxStats {
  /** Extra environment given with `--inbox-env`. */
  env: Record<string, string>;
  /** Seconds the load lasted (database clock). */
  seconds: number;
  intake: RunStats;
  /** Inbox rows the run added (its new batches; a redelivery adds none). */
  rows: number;
  /** Rows turned `done` per second while the load lasted, and from its start to the last one. */
  applyWhileAccepting: number;
  applyOverall: number;
  /** Most rows pending at once (from the rows' received/finished times), and at the 200 ms polls. */
  maxBacklog: number;
  maxBacklogPolled: number;
  /** The oldest pending row's age at its worst, seconds. */
  maxAgeSeconds: number;
  /** Seconds from the end of the load to the last row done, undefined when not drained in time. */
  drainSeconds: number | undefined;
  pendingLeft: number;
  quarantined: number;
  /** The inline receiver at the same concurrency, same profile. */
  inline?: RunStats;
}

/** A queue's pending rows and the age of the oldest, seconds. */
export interface Backlog {
  pending: number;
  age: number;
}

/** Polls a queue's backlog (the inbox, the wallet outbox) every `intervalMs`; keeps its worst values. */
export class BacklogWatch {
  maxPending = 0;
  maxAge = 0;
  private stopped = false;
  private loop: Promise<void> = Promise.resolve();

  constructor(
    private readonly read: () => Promise<Backlog>,
    private readonly intervalMs: number,
  ) {}

  /** The backlog now. */
  async poll(): Promise<Backlog> {
    const b = await this.read();
    this.maxPending = Math.max(this.maxPending, b.pending);
    this.maxAge = Math.max(this.maxAge, b.age);
    return b;
  }

  /** Polls in the background from now on, the worst values starting afresh. */
  start(): void {
    this.maxPending = 0;
    this.maxAge = 0;
    this.stopped = false;
    this.loop = (async () => {
      while (!this.stopped) {
        await this.poll();
        await sleep(this.intervalMs);
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }

  /** Polls until no row is pending or `timeoutMs` passed. @returns whether the queue drained. */
  async drain(timeoutMs: number): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      if ((await this.poll()).pending === 0) return true;
      if (Date.now() > until) return false;
      await sleep(this.intervalMs);
    }
  }
}

/** The inbox's backlog, from `callback_inbox`. */
export async function inboxBacklog(client: pg.Client): Promise<Backlog> {
  const { rows } = await client.query<Backlog>(
    `SELECT count(*)::int AS pending,
            coalesce(extract(epoch FROM clock_timestamp() - min(received_at)), 0)::float8 AS age
     FROM callback_inbox WHERE status = 'pending'`,
  );
  return rows[0];
}

/**
 * A load of `side` with its queue watched: the database clock at its start and end (on `client`),
 * `watch` polling while it lasts (its worst values then are returned), then the wait for the queue
 * to drain (at most `--drain-timeout`; those polls count in `watch`'s worst values too).
 */
export async function watchedLoad(
  side: Side,
  connections: number,
  seconds: number,
  client: pg.Client,
  watch: BacklogWatch,
): Promise<{
  slice: Slice;
  start: string;
  end: string;
  drained: boolean;
  maxPending: number;
  maxAge: number;
}> {
  let start = '';
  let end = '';
  const slice = await runLoad(side, connections, seconds, {
    sampleMs: SAMPLE_MS,
    // The drain below waits for the queue, rather than for an idle database.
    waitIdle: false,
    onStart: async () => {
      start = await dbNow(client);
      watch.start();
    },
    onFinish: async () => {
      end = await dbNow(client);
      await watch.stop();
    },
  });
  const { maxPending, maxAge } = watch;
  const drained = await watch.drain(DRAIN_TIMEOUT_MS);
  return { slice, start, end, drained, maxPending, maxAge };
}

/** The database's clock now (text), for intervals measured against rows' timestamps. */
export async function dbNow(client: pg.Client): Promise<string> {
  return (await client.query<{ t: string }>('SELECT clock_timestamp()::text AS t')).rows[0].t;
}

/**
 * The inbox-mode run: the receiver with `CALLBACK_MODE=inbox` (plus `--inbox-env`) on `dbUrl` (a
 * copy of the inline receiver's database right after registration), the same delivery sequence
 * (warm-up, then concurrency {@link INBOX_CONCURRENCY} for DURATION s), then waits for the inbox to
 * drain (at most `--drain-timeout`). Apply figures come from `callback_inbox.finished_at`.
 */
export async function runInbox(
  dbUrl: string,
  prefix: string,
  profile: ProfileSpec,
  logKey: string,
  inline: RunStats | undefined,
): Promise<InboxStats> {
  const env = INBOX_ENV;
  const side = new Side('inbox', PORT_BASE + 3, dbUrl, prefix, profile, env);
  children.push(side);
  await side.start(`${logKey}-inbox`);
  const client = new pg.Client({ connectionString: dbUrl, application_name: MONITOR_APP });
  await client.connect();
  try {
    const watch = new BacklogWatch(() => inboxBacklog(client), 200);
    const w = await runLoad(side, 8, 0, { amount: WARMUP_DELIVERIES, waitIdle: false });
    const tWarm = performance.now();
    const warmDrained = await watch.drain(DRAIN_TIMEOUT_MS);
    console.log(
      `warm-up inbox: ${WARMUP_DELIVERIES} deliveries at concurrency 8, ${(w.ok / w.seconds).toFixed(1)} ` +
        `batches/s accepted, ${warmDrained ? 'drained' : 'NOT drained'} ${((performance.now() - tWarm) / 1000).toFixed(1)} s later`,
    );
    await client.query('VACUUM (ANALYZE)');
    await client.query('CHECKPOINT').catch(() => undefined);
    const first = (
      await client.query<{ id: string }>('SELECT coalesce(max(id), 0)::text AS id FROM callback_inbox')
    ).rows[0].id;
    const load = loadavg()[0];
    const {
      slice: r,
      start,
      end,
      drained,
    } = await watchedLoad(side, INBOX_CONCURRENCY, DURATION, client, watch);
    const intake = summarize('inbox', INBOX_CONCURRENCY, [r]);
    console.log(
      `  inbox c=${INBOX_CONCURRENCY}: ${intake.batchesPerSecond.toFixed(1)} batches/s accepted, ${r.errors} errors, ` +
        `lock waits ${lockShare(r.waits)}, load average ${load.toFixed(1)} before; ` +
        (drained ? 'drained' : `NOT drained within ${DRAIN_TIMEOUT_MS / 1000} s`),
    );
    const { rows } = await client.query<{
      rows: number;
      done_during: number;
      done: number;
      pending: number;
      quarantined: number;
      seconds: number;
      last_after_start: number | null;
      last_after_end: number | null;
      max_wait: number | null;
    }>(
      `SELECT count(*)::int AS rows,
              count(*) FILTER (WHERE status = 'done' AND finished_at <= $3::timestamptz)::int AS done_during,
              count(*) FILTER (WHERE status = 'done')::int AS done,
              count(*) FILTER (WHERE status = 'pending')::int AS pending,
              count(*) FILTER (WHERE status = 'quarantined')::int AS quarantined,
              extract(epoch FROM $3::timestamptz - $2::timestamptz)::float8 AS seconds,
              extract(epoch FROM max(finished_at) - $2::timestamptz)::float8 AS last_after_start,
              extract(epoch FROM max(finished_at) - $3::timestamptz)::float8 AS last_after_end,
              max(extract(epoch FROM coalesce(finished_at, clock_timestamp()) - received_at))::float8 AS max_wait
       FROM callback_inbox WHERE id > $1`,
      [first, start, end],
    );
    const f = rows[0];
    // The backlog at its largest, from the rows themselves: +1 at each arrival, -1 at each finish.
    const backlog = (
      await client.query<{ n: number | null }>(
        `SELECT max(n)::int AS n FROM (
           SELECT sum(d) OVER (ORDER BY t, d DESC ROWS UNBOUNDED PRECEDING) AS n FROM (
             SELECT received_at AS t, 1 AS d FROM callback_inbox WHERE id > $1
             UNION ALL
             SELECT finished_at, -1 FROM callback_inbox WHERE id > $1 AND finished_at IS NOT NULL) e) x`,
        [first],
      )
    ).rows[0].n;
    return {
      env,
      seconds: f.seconds,
      intake,
      rows: f.rows,
      applyWhileAccepting: f.done_during / f.seconds,
      applyOverall: f.last_after_start ? f.done / f.last_after_start : 0,
      maxBacklog: Math.max(backlog ?? 0, watch.maxPending),
      maxBacklogPolled: watch.maxPending,
      maxAgeSeconds: Math.max(f.max_wait ?? 0, watch.maxAge),
      drainSeconds: f.pending === 0 ? Math.max(0, f.last_after_end ?? 0) : undefined,
      pendingLeft: f.pending,
      quarantined: f.quarantined,
      inline,
    };
  } finally {
    await client.end().catch(() => undefined);
    await side.stop();
    children.splice(children.indexOf(side), 1);
  }
}

/** `inbox apply/inline: R (…)`: the apply rate while accepting against the inline receiver's new batches/s. */
export function inboxRatioLine(s: InboxStats): string {
  if (!s.inline) return `inbox apply/inline: n/a (no inline run at concurrency ${INBOX_CONCURRENCY})`;
  return (
    `inbox apply/inline: ${(s.applyWhileAccepting / s.inline.newBatchesPerSecond).toFixed(2)} ` +
    `(inbox applied ${s.applyWhileAccepting.toFixed(1)} batches/s while accepting, the inline receiver ` +
    `${s.inline.newBatchesPerSecond.toFixed(1)} new batches/s at c=${INBOX_CONCURRENCY}, ` +
    `${s.inline.batchesPerSecond.toFixed(1)} with redeliveries)`
  );
}

export function printInbox(s: InboxStats): void {
  const settings = Object.keys(s.env).length
    ? Object.entries(s.env)
        .map(([k, v]) => `${k}=${v}`)
        .join(', ')
    : 'default inbox settings';
  const i = s.intake;
  console.log(
    `inbox mode (CALLBACK_MODE=inbox, ${settings}), same load at c=${INBOX_CONCURRENCY} for ` +
      `${s.seconds.toFixed(1)} s, then drained:`,
  );
  console.log(
    `  intake: ${i.batchesPerSecond.toFixed(1)} batches/s answered 200 (${s.rows} new batches, ` +
      `${(s.rows / s.seconds).toFixed(1)}/s), ${i.errors} errors, p50 ${ms(i.p50)} ms, p99 ${ms(i.p99)} ms`,
  );
  console.log(
    `  apply (inbox rows turned done, callback_inbox.finished_at): ${s.applyWhileAccepting.toFixed(1)} ` +
      `batches/s while accepting, ${s.applyOverall.toFixed(1)} batches/s overall`,
  );
  console.log(
    `  largest backlog ${s.maxBacklog} pending rows (${s.maxBacklogPolled} at the 200 ms polls); ` +
      `oldest pending row's age at its worst ${s.maxAgeSeconds.toFixed(1)} s`,
  );
  console.log(
    s.drainSeconds !== undefined
      ? `  drained ${s.drainSeconds.toFixed(1)} s after the load stopped; ${s.quarantined} quarantined`
      : `  NOT drained: ${s.pendingLeft} rows pending ${DRAIN_TIMEOUT_MS / 1000} s after the load stopped; ` +
          `${s.quarantined} quarantined`,
  );
  console.log(
    `  CPU during the load per delivery answered, node + PG: ${i.serverCpuMs.toFixed(1)} + ${i.dbCpuMs.toFixed(1)} ms ` +
      `(intake and the workers' applies; ` +
      (s.inline
        ? `the inline receiver at c=${INBOX_CONCURRENCY}: ${s.inline.serverCpuMs.toFixed(1)} + ${s.inline.dbCpuMs.toFixed(1)} ms)`
        : 'no inline run to compare)'),
  );
  console.log(`  wait events during the load: ${describeWaits(i.waits)}`);
  console.log(`  ${inboxRatioLine(s)}`);
}
