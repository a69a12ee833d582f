/** What the sessions of a side wait on while it is loaded (lock waits sampled from pg_stat_activity), and the WAL written. */
import pg from 'pg';
import { sleep } from './processes.js';
import { withClient } from './setup.js';

/** Application name of the bench's own monitoring sessions (left out of the wait figures). */
export const MONITOR_APP = 'bench-monitor';

/** The server's current WAL insert position as a byte offset (the LSN less 0/0; exact below 2^53). */
export async function walPosition(dbUrl: string): Promise<number> {
  return withClient(dbUrl, async (c) =>
    Number(
      (await c.query<{ n: string }>("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text AS n")).rows[0]
        .n,
    ),
  );
}

/** Name of the database of a connection URL. */
export function dbNameOf(url: string): string {
  return decodeURIComponent(new URL(url).pathname.slice(1));
}

/**
 * Active-session samples of one database: every row of `pg_stat_activity` with `state = 'active'`
 * seen by a {@link WaitSampler}, counted by `wait_event_type:wait_event` (`CPU` when none).
 */
export interface WaitStats {
  samples: number;
  /** Samples with `wait_event_type = 'Lock'` (row, tuple, transaction id, relation … locks). */
  lock: number;
  events: Record<string, number>;
  /** Polls of pg_stat_activity made (each gives 0..n samples). */
  polls: number;
}

export function emptyWaits(): WaitStats {
  return { samples: 0, lock: 0, events: {}, polls: 0 };
}

export function addWaits(into: WaitStats, w: WaitStats): WaitStats {
  into.samples += w.samples;
  into.lock += w.lock;
  into.polls += w.polls;
  for (const [k, n] of Object.entries(w.events)) into.events[k] = (into.events[k] ?? 0) + n;
  return into;
}

export const pct = (n: number, of: number) => (of ? `${((100 * n) / of).toFixed(0)}%` : 'n/a');

/** Lock waits as a share of active-session samples, e.g. `87%` (`n/a` without samples). */
export function lockShare(w: WaitStats): string {
  return pct(w.lock, w.samples);
}

/** `N samples, lock waits L%; top waits Lock:tuple 80%, …` (shares of all active samples). */
export function describeWaits(w: WaitStats): string {
  if (!w.samples) return w.polls ? `${w.polls} polls, no active session seen` : 'not sampled';
  const top = Object.entries(w.events)
    .filter(([k]) => k !== 'CPU')
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, 3)
    .map(([k, n]) => `${k} ${pct(n, w.samples)}`);
  return (
    `${w.samples} active-session samples in ${w.polls} polls, lock waits ${lockShare(w)}; ` +
    `no wait event ${pct(w.events.CPU ?? 0, w.samples)}` +
    (top.length ? `; top waits ${top.join(', ')}` : '')
  );
}

/**
 * Samples `pg_stat_activity` of one database every `intervalMs` ms on its own connection
 * while a run lasts (the bench's own sessions left out), for the share of lock waits: a hot row
 * shows as sessions queued on `Lock:tuple` / `Lock:transactionid`.
 */
export class WaitSampler {
  private stopped = false;
  private loop: Promise<void> = Promise.resolve();
  private readonly stats = emptyWaits();

  /** @param intervalMs ms between polls; 0 samples nothing. */
  constructor(
    private readonly dbUrl: string,
    private readonly intervalMs: number,
  ) {}

  start(): this {
    if (this.intervalMs > 0) this.loop = this.run();
    return this;
  }

  async stop(): Promise<WaitStats> {
    this.stopped = true;
    await this.loop;
    return this.stats;
  }

  private async run(): Promise<void> {
    const client = new pg.Client({ connectionString: this.dbUrl, application_name: MONITOR_APP });
    try {
      await client.connect();
      while (!this.stopped) {
        const t = performance.now();
        const { rows } = await client.query<{ type: string | null; event: string | null }>(
          `SELECT wait_event_type AS type, wait_event AS event FROM pg_stat_activity
           WHERE datname = $1 AND state = 'active' AND pid <> pg_backend_pid()
             AND application_name NOT IN ('bench-setup', $2)`,
          [dbNameOf(this.dbUrl), MONITOR_APP],
        );
        this.stats.polls++;
        for (const r of rows) {
          this.stats.samples++;
          if (r.type === 'Lock') this.stats.lock++;
          const key = r.type ? `${r.type}:${r.event}` : 'CPU';
          this.stats.events[key] = (this.stats.events[key] ?? 0) + 1;
        }
        await sleep(Math.max(0, this.intervalMs - (performance.now() - t)));
      }
    } catch (err) {
      console.warn(`  wait sampler of ${dbNameOf(this.dbUrl)} stopped: ${(err as Error).message}`);
    } finally {
      await client.end().catch(() => undefined);
    }
  }
}
