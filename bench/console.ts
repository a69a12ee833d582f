/**
 * The operator console's read benchmark (issue 30, docs/benchmark.md#operator-console): on a
 * database preloaded like `npm run bench -- --large` (1 M coupons / 5 M bets, their snapshots and
 * ledger) plus what the console reads (2 M delivery attempts of the last day, quarantined bodies,
 * a wallet outbox, flagged and unallocated coupons, operator actions: `preloadConsole`), starts
 * the receiver as `npm start` runs it and measures p50 / p95 / max of each list (first pages and
 * pages further on), of the search (each kind of id) and of the overview, sequentially. Prints a
 * table and whether every p95 is within 300 ms.
 *   npm run bench:console -- [--coupons 1000000] [--attempts 2000000] [--requests 100]
 *     [--database-url URL] [--keep-database] [--reuse]
 */
import { spawn, ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import {
  createMigratedDatabase,
  databaseUrl,
  dropDatabases,
  preload,
  preloadConsole,
  reachable,
  withClient,
} from './setup.js';

const { values: args } = parseArgs({
  options: {
    coupons: { type: 'string', default: '1000000' },
    bets: { type: 'string', default: '5' },
    attempts: { type: 'string', default: '2000000' },
    requests: { type: 'string', default: '100' },
    'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/postgres' },
    database: { type: 'string', default: 'console_bench' },
    port: { type: 'string', default: '4190' },
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
  --database-url URL   a PostgreSQL server's admin URL (the local service)
  --database NAME      the database to create (console_bench); --reuse takes it as preloaded
  --keep-database      leave it for another run (--reuse)
  --port N             the receiver's port (4190)`);
  process.exit(0);
}

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const LOG_DIR = resolve(ROOT, '.data', 'bench');
const OPS_KEY = 'bench-console-ops-key-0d1e9a77';
const PORT = Number(args.port);
const BASE = `http://127.0.0.1:${PORT}`;
const REQUESTS = Number(args.requests);
const GOAL_MS = 300;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
  mkdirSync(LOG_DIR, { recursive: true });
  const logPath = resolve(LOG_DIR, 'console-receiver.log');
  const log = openSync(logPath, 'w');
  const scripts = (
    JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }
  ).scripts;
  const flags = (/\bnode((?:\s+--\S+)*)\s+dist\/src\/main\.js\b/.exec(scripts.start)?.[1] ?? '')
    .split(/\s+/)
    .filter(Boolean);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: dbUrl,
    SPORTAPI_WEBHOOK_SECRETS: 'bench-console-webhook-secret',
    OPS_API_KEYS: `bench:read+operate:${OPS_KEY}`,
    PORT: String(PORT),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
  };
  delete env.TEST_DATABASE_URL;
  const child = spawn(process.execPath, [...flags, resolve(ROOT, 'dist/src/main.js')], {
    cwd: ROOT,
    env,
    stdio: ['ignore', log, log],
  });
  closeSync(log);
  let exited: number | null | undefined;
  child.once('exit', (code) => (exited = code));
  const until = Date.now() + 120_000;
  for (;;) {
    if (exited !== undefined) throw new Error(`the receiver exited with ${exited} (log ${logPath})`);
    try {
      await get('/health/live');
      return child;
    } catch {
      if (Date.now() > until) throw new Error(`the receiver did not answer within 120 s (log ${logPath})`);
      await sleep(250);
    }
  }
}

async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const done = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await done;
  clearTimeout(timer);
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
}

const pick = <T>(list: T[], i: number): T => list[i % list.length];
const enc = encodeURIComponent;

/** A probe paging through a list: each request follows the previous page's cursor, from the start every 20 pages. */
function paging(name: string, first: string): Probe {
  let cursor: string | null = null;
  let page = 0;
  return {
    name,
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
  } finally {
    await stopChild(child);
    if (!args['keep-database'] && !args.reuse) await dropDatabases(admin, [name]);
  }
}

main().catch((err: unknown) => {
  console.error(`bench:console failed: ${(err as Error).message}`);
  process.exit(1);
});
