/**
 * The operator console's benchmark (issue 30; docs/benchmark.md, "The operator console"): on a
 * database preloaded like `npm run bench -- --large` (1 M coupons / 5 M bets, their snapshots and
 * ledger) plus what the console reads (2 M delivery attempts of the last day, quarantined
 * bodies, a wallet outbox, flagged and unallocated coupons, operator actions: `preloadConsole`),
 * starts the receiver as `npm start` runs it and
 * - measures p50 / p95 / max of each list (first pages and pages further on), of the search (each
 *   kind of id) and of the overview, sequentially, and says whether every p95 is within 300 ms;
 * - then, on the same database and receiver, measures callback throughput (closed loop at
 *   `--concurrency`, signed 100-coupon batches of today's mix from bench/load.ts over a pool
 *   registered through the partner API, autocannon as in `npm run bench`) in `--slices` pairs of
 *   `--slice-seconds` s rounds, alternately alone and while one operator pages through the
 *   console's lists (one request after another, following each list's cursor, `--think-ms`
 *   between pages); prints batches/s per round, the medians with their range, the difference
 *   against the ±5 % goal and the p95 of the operator's requests during the load.
 *   npm run bench:console -- [--coupons 1000000] [--attempts 2000000] [--requests 100]
 *     [--concurrency 8] [--slices 3] [--slice-seconds 20] [--think-ms 0] [--pool-coupons 4000]
 *     [--players 200] [--database-url URL] [--keep-database] [--reuse]
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Feed, LoadGenerator, PoolSpec, poolCoupons, poolPlayers } from './load.js';
import { percentile, sleep, startChild, startScriptNodeFlags, stopChild } from './processes.js';
import { LoadSide, measureConcurrency, runLoad, Slice, warmUp } from './run-load.js';
import {
  createMigratedDatabase,
  databaseUrl,
  dropDatabases,
  preload,
  preloadConsole,
  reachable,
  registerOnReceiver,
  withClient,
} from './setup.js';

const { values: args } = parseArgs({
  options: {
    coupons: { type: 'string', default: '1000000' },
    bets: { type: 'string', default: '5' },
    attempts: { type: 'string', default: '2000000' },
    requests: { type: 'string', default: '100' },
    concurrency: { type: 'string', default: '8' },
    slices: { type: 'string', default: '3' },
    'slice-seconds': { type: 'string', default: '20' },
    'think-ms': { type: 'string', default: '0' },
    'pool-coupons': { type: 'string', default: '4000' },
    players: { type: 'string', default: '200' },
    'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/postgres' },
    database: { type: 'string', default: 'console_bench' },
    port: { type: 'string', default: '4290' },
    'keep-database': { type: 'boolean', default: false },
    reuse: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});

if (args.help) {
  console.log(`npm run bench:console -- [options]
  --coupons N          coupons of the preload (1000000, as bench --large; 5 bets each: --bets)
  --attempts N         delivery attempts over the last day (2000000)
  --requests N         measured requests per endpoint, after 5 unmeasured ones (100)
  then callback throughput, alone and while an operator pages through the lists:
  --concurrency N      deliveries in flight (8)
  --slices N           rounds of each kind, alternating (3; 0: the reads only)
  --slice-seconds S    seconds per round (20)
  --think-ms MS        the operator's pause between two pages (0: the next page at once)
  --pool-coupons N     coupons registered through the partner API for the load (4000);
                       --players N  their players (200)
  --database-url URL   a PostgreSQL server's admin URL (the local service)
  --database NAME      the database to create (console_bench); --reuse takes it as preloaded
  --keep-database      leave it for another run (--reuse)
  --port N             the receiver's port (4290; not 4190: fetch refuses that port, ManageSieve's)`);
  process.exit(0);
}

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const LOG_DIR = resolve(ROOT, '.data', 'bench');
const OPS_KEY = 'bench-console-ops-key-0d1e9a77';
const SECRET = 'bench-console-webhook-secret';
const PORT = Number(args.port);
const BASE = `http://127.0.0.1:${PORT}`;
const REQUESTS = Number(args.requests);
const GOAL_MS = 300;
/** Callback throughput while an operator pages may differ by this much, % (issue 30). */
const THROUGHPUT_GOAL_PCT = 5;
const CONCURRENCY = Number(args.concurrency);
const SLICES = Number(args.slices);
const SLICE_SECONDS = Number(args['slice-seconds']);
const THINK_MS = Number(args['think-ms']);
/** pg_stat_activity sampling for the lock-wait share of each round, ms (`npm run bench`'s default). */
const SAMPLE_MS = 25;
/** Pages the operator reads of one list before opening the next one. */
const PAGES_PER_LIST = 10;

async function get(path: string): Promise<{ status: number; body: Record<string, unknown>; ms: number }> {
  const started = performance.now();
  const res = await fetch(`${BASE}${path}`, { headers: { authorization: `Bearer ${OPS_KEY}` } });
  const text = await res.text();
  const ms = performance.now() - started;
  if (res.status !== 200) throw new Error(`GET ${path}: HTTP ${res.status} ${text.slice(0, 300)}`);
  return { status: res.status, body: JSON.parse(text) as Record<string, unknown>, ms };
}

/** Starts `node dist/src/main.js` as `npm start` does, its output to `.data/bench/console-receiver.log`. */
async function startReceiver(dbUrl: string): Promise<ChildProcess> {
  const scripts = (
    JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }
  ).scripts;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: dbUrl,
    SPORTAPI_WEBHOOK_SECRETS: SECRET,
    OPS_API_KEYS: `bench:read+register+money+operate:${OPS_KEY}`,
    PORT: String(PORT),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
  };
  delete env.TEST_DATABASE_URL;
  return startChild(
    'the receiver',
    [...startScriptNodeFlags(scripts.start), resolve(ROOT, 'dist/src/main.js')],
    env,
    `${BASE}/health/live`,
    { cwd: ROOT, logPath: resolve(LOG_DIR, 'console-receiver.log') },
  );
}

/** Ids of the database to search for and page through: some of each kind. */
interface Samples {
  coupons: string[];
  batches: string[];
  bets: string[];
  accounts: string[];
  operations: string[];
  requestIds: string[];
  outboxIds: string[];
}

async function samples(dbUrl: string): Promise<Samples> {
  return withClient(dbUrl, async (c) => {
    const column = async (sql: string) => (await c.query<{ v: string }>(sql)).rows.map((r) => r.v);
    return {
      coupons: await column(`SELECT coupon_code AS v FROM coupons TABLESAMPLE SYSTEM (1) LIMIT 50`),
      batches: await column(`SELECT batch_id AS v FROM callback_batches TABLESAMPLE SYSTEM (5) LIMIT 50`),
      bets: await column(`SELECT uuid AS v FROM bets TABLESAMPLE SYSTEM (0.1) LIMIT 50`),
      accounts: await column(`SELECT id AS v FROM accounts WHERE kind = 'player' ORDER BY random() LIMIT 50`),
      operations: await column(
        `SELECT operation_key AS v FROM financial_operations TABLESAMPLE SYSTEM (1) LIMIT 50`,
      ),
      requestIds: await column(
        `SELECT request_id AS v FROM delivery_attempts TABLESAMPLE SYSTEM (0.1) LIMIT 50`,
      ),
      outboxIds: await column(`SELECT id::text AS v FROM wallet_outbox TABLESAMPLE SYSTEM (1) LIMIT 50`),
    };
  });
}

/** One measured endpoint: the path of its i-th request, and what it learns from the answer (a cursor). */
interface Probe {
  name: string;
  path: (i: number) => string;
  seen?: (body: Record<string, unknown>) => void;
  /** A list paged through with its cursor ({@link paging}): what the operator of {@link Pager} reads. */
  list?: boolean;
}

const pick = <T>(list: T[], i: number): T => list[i % list.length];
const enc = encodeURIComponent;

/** A probe paging through a list: each request follows the previous page's cursor, from the start every 20 pages. */
function paging(name: string, first: string): Probe {
  let cursor: string | null = null;
  let page = 0;
  return {
    name,
    list: true,
    path() {
      const sep = first.includes('?') ? '&' : '?';
      return cursor && page++ % 20 !== 0 ? `${first}${sep}cursor=${enc(cursor)}` : first;
    },
    seen(body) {
      cursor = (body.nextCursor as string | null | undefined) ?? null;
    },
  };
}

async function measure(probe: Probe): Promise<{ name: string; p50: number; p95: number; max: number }> {
  const times: number[] = [];
  for (let i = 0; i < REQUESTS + 5; i++) {
    const { ms, body } = await get(probe.path(i));
    probe.seen?.(body);
    if (i >= 5) times.push(ms);
  }
  times.sort((a, b) => a - b);
  return {
    name: probe.name,
    p50: percentile(times, 50),
    p95: percentile(times, 95),
    max: times[times.length - 1],
  };
}

/** What the operator's requests of one round took. */
interface PagerRound {
  /** Every answered request's time, ms. */
  times: number[];
  /** Requests answered with anything but 200, or not at all. */
  errors: number;
}

/**
 * One operator paging through the console's lists, as fast as one browser tab can: one request at
 * a time, {@link PAGES_PER_LIST} pages of a list following its cursor, then the next list, with
 * `thinkMs` between two pages. Runs from {@link start} to {@link stop}.
 */
class Pager {
  private stopped = true;
  private loop: Promise<void> = Promise.resolve();
  private round: PagerRound = { times: [], errors: 0 };
  private request = 0;

  constructor(
    private readonly lists: Probe[],
    private readonly thinkMs: number,
  ) {}

  start(): void {
    this.stopped = false;
    this.round = { times: [], errors: 0 };
    this.loop = this.run();
  }

  /** Stops after the request under way. @returns the round's requests. */
  async stop(): Promise<PagerRound> {
    this.stopped = true;
    await this.loop;
    return this.round;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const i = this.request++;
      const probe = this.lists[Math.floor(i / PAGES_PER_LIST) % this.lists.length];
      try {
        const { ms, body } = await get(probe.path(i));
        probe.seen?.(body);
        this.round.times.push(ms);
      } catch {
        this.round.errors++;
      }
      if (this.thinkMs > 0 && !this.stopped) await sleep(this.thinkMs);
    }
  }
}

function median(values: number[]): number {
  const v = [...values].sort((a, b) => a - b);
  const mid = Math.floor(v.length / 2);
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

const rate = (s: Slice) => s.ok / s.seconds;
const range = (values: number[]) => `${Math.min(...values).toFixed(1)}–${Math.max(...values).toFixed(1)}`;

/**
 * Callback throughput on the running receiver, alone and while a {@link Pager} reads `lists`:
 * registers the pool through the partner API, warms up, then {@link SLICES} interleaved rounds of
 * each ({@link measureConcurrency}, which first runs VACUUM (ANALYZE) and a CHECKPOINT), and prints
 * the per-round figures, the medians and the difference against the ±5 % goal.
 */
async function throughput(admin: string, dbUrl: string, pid: number, lists: Probe[]): Promise<void> {
  const pool: PoolSpec = {
    coupons: Number(args['pool-coupons']),
    players: Number(args.players),
    seed: 20261130,
  };
  const coupons = poolCoupons(pool);
  const players = poolPlayers(pool);
  const t0 = performance.now();
  await registerOnReceiver(BASE, OPS_KEY, players, coupons);
  console.log(
    `registered ${coupons.length} coupons of ${players.length} players through the partner API in ` +
      `${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
  // A batch id prefix of its own: a kept database (--reuse) holds the batches of earlier runs.
  const batchPrefix = `con${Date.now().toString(36)}`;
  const feed = new Feed(new LoadGenerator({ pool, secret: SECRET, batchPrefix, profile: 'mixed' }));
  const alone: LoadSide = {
    name: 'receiver',
    label: 'callbacks alone',
    port: PORT,
    pid,
    dbUrl,
    feed,
    bestRate: 0,
  };
  const paged: LoadSide = { ...alone, label: 'callbacks + operator paging' };
  await warmUp([alone]);
  const pager = new Pager(lists, THINK_MS);
  const rounds = new Map<LoadSide, Slice[]>([
    [alone, []],
    [paged, []],
  ]);
  const pagerRounds: PagerRound[] = [];
  const [aloneStats, pagedStats] = await measureConcurrency(
    admin,
    [alone, paged],
    CONCURRENCY,
    { seconds: SLICES * SLICE_SECONDS, slices: SLICES, sampleMs: SAMPLE_MS },
    async (side, seconds) => {
      const r =
        side === paged
          ? await runLoad(side, CONCURRENCY, seconds, {
              sampleMs: SAMPLE_MS,
              onStart: async () => pager.start(),
              onFinish: async () => void pagerRounds.push(await pager.stop()),
            })
          : await runLoad(side, CONCURRENCY, seconds, { sampleMs: SAMPLE_MS });
      rounds.get(side)?.push(r);
      return r;
    },
  );
  const a = (rounds.get(alone) as Slice[]).map(rate);
  const p = (rounds.get(paged) as Slice[]).map(rate);
  console.log('');
  console.log(
    `callback throughput at c=${CONCURRENCY}, ${SLICES} alternating rounds of ${SLICE_SECONDS} s each, ` +
      `${coupons.length} registered coupons, today's mix (batches/s: 200 answers, redeliveries included); ` +
      `operator think time ${THINK_MS} ms:`,
  );
  console.log('  round  alone b/s  paging b/s   change  pager requests  pager p95 ms  pager errors');
  a.forEach((alonePerSecond, i) => {
    const pr = pagerRounds[i];
    const sorted = [...pr.times].sort((x, y) => x - y);
    console.log(
      `  ${String(i + 1).padStart(5)}  ${alonePerSecond.toFixed(1).padStart(9)}  ${p[i].toFixed(1).padStart(10)}  ` +
        `${((p[i] / alonePerSecond - 1) * 100).toFixed(1).padStart(6)} %  ${String(pr.times.length).padStart(14)}  ` +
        `${percentile(sorted, 95).toFixed(1).padStart(12)}  ${String(pr.errors).padStart(12)}`,
    );
  });
  const times = pagerRounds.flatMap((r) => r.times).sort((x, y) => x - y);
  const pagedSeconds = (rounds.get(paged) as Slice[]).reduce((sum, r) => sum + r.seconds, 0);
  const errors = pagerRounds.reduce((sum, r) => sum + r.errors, 0);
  console.log(
    `  callback p50 / p99: alone ${aloneStats.p50.toFixed(1)} / ${aloneStats.p99.toFixed(1)} ms, ` +
      `while paging ${pagedStats.p50.toFixed(1)} / ${pagedStats.p99.toFixed(1)} ms`,
  );
  const p95 = percentile(times, 95);
  console.log(
    `  the operator's requests during the load: ${times.length} (${(times.length / pagedSeconds).toFixed(1)}/s` +
      ` over ${lists.length} lists), p50 ${percentile(times, 50).toFixed(1)} ms, p95 ${p95.toFixed(1)} ms, ` +
      `max ${times[times.length - 1]?.toFixed(1) ?? 'n/a'} ms, ${errors} errors` +
      (p95 > GOAL_MS ? `  (p95 OVER ${GOAL_MS} ms)` : ''),
  );
  const change = (median(p) / median(a) - 1) * 100;
  console.log(
    `callback throughput while an operator pages: ${change >= 0 ? '+' : ''}${change.toFixed(1)} % ` +
      `(median ${median(p).toFixed(1)} batches/s, range ${range(p)}, against ${median(a).toFixed(1)} alone, ` +
      `range ${range(a)}; c=${CONCURRENCY}, ${SLICES} × ${SLICE_SECONDS} s each): ` +
      (Math.abs(change) <= THROUGHPUT_GOAL_PCT
        ? `within ±${THROUGHPUT_GOAL_PCT} %`
        : `OUTSIDE ±${THROUGHPUT_GOAL_PCT} %`),
  );
}

async function main(): Promise<void> {
  const admin = args['database-url'] as string;
  if (!(await reachable(admin))) throw new Error(`no PostgreSQL at ${admin} (--database-url)`);
  const name = args.database as string;
  const dbUrl = databaseUrl(admin, name);
  if (!args.reuse) {
    await dropDatabases(admin, [name]);
    await createMigratedDatabase(admin, name);
    const coupons = Number(args.coupons);
    console.log(`preloading ${coupons} coupons / ${coupons * Number(args.bets)} bets …`);
    console.log(`  ${(await preload(dbUrl, coupons, Number(args.bets))).toFixed(0)} s`);
    console.log(
      `adding ${args.attempts} delivery attempts of the last day, quarantine, outbox, operator actions …`,
    );
    const seconds = await preloadConsole(dbUrl, {
      attempts: Number(args.attempts),
      quarantined: 2000,
      operatorActions: 20_000,
    });
    console.log(`  ${seconds.toFixed(0)} s`);
  }
  let child: ChildProcess | undefined;
  try {
    child = await startReceiver(dbUrl);
    // The first rollup counts the last day; the overview is measured as it runs from then on.
    const until = Date.now() + 600_000;
    for (;;) {
      const overview = (await get('/overview')).body as { deliveries: { rolledUntil: string | null } };
      if (overview.deliveries.rolledUntil) break;
      if (Date.now() > until) throw new Error('the delivery rollup did not finish within 10 minutes');
      await sleep(1000);
    }
    const s = await samples(dbUrl);
    const probes: Probe[] = [
      { name: 'GET /overview', path: () => '/overview' },
      { name: 'GET /coupons', path: () => '/coupons' },
      paging('GET /coupons (paging)', '/coupons'),
      paging('GET /coupons?needsReview=true (paging)', '/coupons?needsReview=true'),
      paging('GET /coupons?unallocated=true (paging)', '/coupons?unallocated=true'),
      { name: 'GET /coupons?status=4', path: () => '/coupons?status=4' },
      { name: 'GET /coupons/{code}/history', path: (i) => `/coupons/${enc(pick(s.coupons, i))}/history` },
      paging('GET /accounts (paging)', '/accounts'),
      { name: 'GET /accounts?q=', path: (i) => `/accounts?q=${enc(pick(s.accounts, i).slice(0, 8))}` },
      {
        name: 'GET /accounts/{id}/statement',
        path: (i) => `/accounts/${enc(pick(s.accounts, i))}/statement`,
      },
      paging('GET /accounts/{id}/statement (paging)', `/accounts/${enc(s.accounts[0])}/statement?limit=20`),
      paging('GET /callbacks/deliveries (paging)', '/callbacks/deliveries'),
      paging('GET /callbacks/quarantine (paging)', '/callbacks/quarantine'),
      paging('GET /wallet/outbox?status=parked (paging)', '/wallet/outbox?status=parked'),
      paging('GET /operator-actions (paging)', '/operator-actions'),
      { name: 'GET /operator-actions?actor=', path: () => '/operator-actions?actor=ops-desk' },
      { name: 'GET /bulk-actions', path: () => '/bulk-actions' },
      { name: 'GET /search (batch id)', path: (i) => `/search?q=${enc(pick(s.batches, i))}` },
      { name: 'GET /search (coupon code)', path: (i) => `/search?q=${enc(pick(s.coupons, i))}` },
      { name: 'GET /search (bet uuid)', path: (i) => `/search?q=${enc(pick(s.bets, i))}` },
      { name: 'GET /search (account id)', path: (i) => `/search?q=${enc(pick(s.accounts, i))}` },
      { name: 'GET /search (operation key)', path: (i) => `/search?q=${enc(pick(s.operations, i))}` },
      { name: 'GET /search (request id)', path: (i) => `/search?q=${enc(pick(s.requestIds, i))}` },
      { name: 'GET /search (outbox id)', path: (i) => `/search?q=${enc(pick(s.outboxIds, i))}` },
      { name: 'GET /search (nothing)', path: (i) => `/search?q=no-such-id-${i}` },
    ];
    const rows = [];
    for (const probe of probes) {
      const r = await measure(probe);
      rows.push(r);
      console.log(
        `${r.name.padEnd(46)} p50 ${r.p50.toFixed(1).padStart(7)} ms  p95 ${r.p95.toFixed(1).padStart(7)} ms  max ${r.max
          .toFixed(1)
          .padStart(7)} ms${r.p95 > GOAL_MS ? '  OVER 300 ms' : ''}`,
      );
    }
    const over = rows.filter((r) => r.p95 > GOAL_MS);
    console.log(
      over.length
        ? `console p95 goal (${GOAL_MS} ms) missed by ${over.length} endpoint(s): ${over.map((r) => r.name).join(', ')}`
        : `console p95 within ${GOAL_MS} ms for all ${rows.length} endpoints (${REQUESTS} requests each)`,
    );
    if (SLICES > 0) {
      console.log('');
      await throughput(
        admin,
        dbUrl,
        child.pid as number,
        probes.filter((p) => p.list),
      );
    }
  } finally {
    await stopChild(child);
    if (!args['keep-database'] && !args.reuse) await dropDatabases(admin, [name]);
  }
}

// Stopped by a signal: exit, and the receiver goes with it (processes.ts kills children at exit).
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));

main().catch((err: unknown) => {
  console.error(`bench:console failed: ${(err as Error).message}`);
  process.exit(1);
});
