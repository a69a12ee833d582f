/**
 * `npm run bench:open`: the receiver loaded the sender's way (docs/benchmark.md, "Open loop"):
 * signed money-heavy batches (bench/load.ts) sent at a fixed rate whatever the answers take
 * (bench/open-loop-sender.ts), per mode (inline; inbox; inline with the wallet on, the http
 * connector to the stand-in wallet; broker on: the settlement events published to the machine's
 * RabbitMQ and NATS JetStream, docs/events.md), with the background
 * lag read from the rows' own timestamps. Commands: one run (`--mode M --rate R`), the capacity
 * run (`--capacity`, writes a chart), the burst (`--burst`) and the steady run (`--steady`) of
 * issue 31's figures. `npm run bench:open -- --help` lists the options.
 */
import { ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { OPS_KEY, SECRET, WALLET_SECRET } from './credentials.js';
import { capacityChart, ChartSeries } from './chart.js';
import { Delivery, LoadGenerator, PoolSpec, poolCoupons, poolPlayers } from './load.js';
import { closedLoop, LoadResult, openLoop, receiverPool } from './open-loop-sender.js';
import {
  backendCpu,
  backendCpuUsed,
  cpuMsOf,
  runBench,
  sleep,
  startChild,
  startScriptNodeFlags,
  stopChild,
} from './processes.js';
import {
  cloneDatabase,
  createMigratedDatabase,
  databaseUrl,
  dropDatabases,
  reachable,
  registerOnReceiver,
} from './setup.js';

const { values: args } = parseArgs({
  options: {
    mode: { type: 'string', default: 'inline' },
    rate: { type: 'string' },
    duration: { type: 'string' },
    capacity: { type: 'boolean', default: false },
    burst: { type: 'boolean', default: false },
    steady: { type: 'boolean', default: false },
    'batch-call': { type: 'boolean', default: false },
    modes: { type: 'string', default: 'inline,inbox,wallet,wallet-batch,broker' },
    fractions: { type: 'string', default: '0.3,0.5,0.6,0.7,0.8,0.9,1.0' },
    'capacity-rate': { type: 'string' },
    'capacity-seconds': { type: 'string', default: '30' },
    'drain-timeout': { type: 'string' },
    'wallet-env': { type: 'string' },
    'inbox-env': { type: 'string' },
    'broker-env': { type: 'string' },
    publishers: { type: 'string', default: 'rabbitmq,nats' },
    env: { type: 'string' },
    chart: { type: 'string', default: 'bench/capacity.svg' },
    'money-coupons': { type: 'string', default: '10000' },
    'money-players': { type: 'string', default: '1000' },
    'database-url': { type: 'string' },
    'db-prefix': { type: 'string', default: 'benchopen' },
    'port-base': { type: 'string', default: '4400' },
    'keep-databases': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

const HELP = `npm run bench:open [-- options]: the receiver under an open-loop sender (docs/benchmark.md)
  --mode M --rate R       one run: mode inline, inbox, wallet, wallet-batch (the batch call,
                          WALLET_BATCH_SIZE=64, WALLET_CLAIM_SIZE=64) or broker, R batches/s for --duration s
  --capacity              inline's closed-loop capacity at c=8, then per mode (--modes) the
                          offered rate stepped through --fractions of it: the highest rate with
                          callback p99 <= 1 s and background lag p99 <= 5 s; writes --chart
  --burst                 wallet on at 0.8x the capacity for --duration (60) s: callback p99 and
                          the seconds until every push is delivered after the burst (--batch-call:
                          the wallet-batch mode)
  --steady                0.5x the capacity for --duration (60) s: inline with the wallet off,
                          with it on (--batch-call: the wallet-batch mode), and inbox mode
  --duration S            seconds of each load (20 for one run, 60 otherwise)
  --modes a,b             modes of --capacity (inline,inbox,wallet,wallet-batch,broker; broker: the
                          settlement events on --publishers, lag until every event is confirmed)
  --publishers a,b        EVENT_PUBLISHERS of the broker mode (rabbitmq,nats; local brokers)
  --fractions f,g         rates of --capacity as fractions of the capacity (0.3,0.5,0.6,0.7,0.8,0.9,1.0)
  --capacity-rate R       take R batches/s as inline's closed-loop capacity instead of measuring it
  --capacity-seconds S    length of that closed-loop measurement (30)
  --drain-timeout S       seconds to wait for the background to drain after a load (120; 300 with --burst)
  --env K=V,...           extra environment of every receiver; --wallet-env, --inbox-env, --broker-env
                          of one mode's
  --chart FILE            the capacity chart (bench/capacity.svg)
  --money-coupons N       registered coupons (10000); --money-players N (1000)
  --database-url URL      a PostgreSQL where databases can be created (default the local service)
  --db-prefix P           databases P_template, P_registered, P_<mode> (benchopen)
  --port-base N           receiver N+1, stand-in wallet N+6 (4400)
  --keep-databases        keep the databases`;

if (args.help) {
  console.log(HELP);
  process.exit(0);
}

function usage(message: string): never {
  console.error(`${message} (npm run bench:open -- --help)`);
  process.exit(2);
}

/** An `--X-env K=V,...` option. */
function envOption(name: 'env' | 'wallet-env' | 'inbox-env' | 'broker-env'): Record<string, string> {
  return Object.fromEntries(
    ((args[name] as string | undefined) ?? '')
      .split(',')
      .filter(Boolean)
      .map((item) => {
        const eq = item.indexOf('=');
        if (eq < 1) usage(`--${name}: expected NAME=VALUE, got '${item}'`);
        return [item.slice(0, eq).trim(), item.slice(eq + 1).trim()];
      }),
  );
}

const COMMAND = args.capacity ? 'capacity' : args.burst ? 'burst' : args.steady ? 'steady' : 'run';
const DURATION = Number(args.duration ?? (COMMAND === 'run' ? 20 : 60));
const DRAIN_TIMEOUT_MS = Number(args['drain-timeout'] ?? (COMMAND === 'burst' ? 300 : 120)) * 1000;
const PORT_BASE = Number(args['port-base']);
const PREFIX = args['db-prefix'] as string;
const CALLBACK_PATH = '/sportapi/callback';
const ROOT = process.cwd();
const LOG_DIR = resolve(ROOT, '.data', 'bench');
const RECEIVER_ENTRY = fileURLToPath(new URL('../src/main.js', import.meta.url));
const SIM_CLI = fileURLToPath(new URL('../sim/cli.js', import.meta.url));
const NODE_FLAGS = startScriptNodeFlags(
  (JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts
    .start,
);
const POOL: PoolSpec = {
  coupons: Number(args['money-coupons']),
  players: Number(args['money-players']),
  seed: 20261130,
};
/** The capacity criteria of issue 31. */
const LIMITS = { p99: 1, lag: 5 };
const WARMUP = 160;
/** The quiet spell between the warm-up and the load. */
const QUIET_MS = 12_000;

/** A background queue whose lag is measured: the wallet outbox, the inbox, the events' outbox. */
type Queue = 'wallet' | 'inbox' | 'broker';

/** A mode of the receiver: how it is started and which queue is its background work. */
interface Mode {
  key: string;
  title: string;
  color: string;
  env: () => Record<string, string>;
  /** The queue whose lag is measured; none for plain inline mode. */
  queue?: Queue;
  wallet?: boolean;
  /** Not measurable yet (shown as a slot in the table and the chart). */
  placeholder?: string;
}

const MODES: Record<string, Mode> = {
  inline: { key: 'inline', title: 'inline, no wallet', color: '#1f77b4', env: () => ({}) },
  inbox: {
    key: 'inbox',
    title: 'inbox',
    color: '#2ca02c',
    queue: 'inbox',
    env: () => ({ CALLBACK_MODE: 'inbox', ...envOption('inbox-env') }),
  },
  wallet: {
    key: 'wallet',
    title: 'inline, wallet on (http, stand-in wallet)',
    color: '#d62728',
    queue: 'wallet',
    wallet: true,
    env: () => ({
      WALLET_URL: `http://127.0.0.1:${PORT_BASE + 6}`,
      WALLET_SECRET,
      ...envOption('wallet-env'),
    }),
  },
  'wallet-batch': {
    key: 'wallet-batch',
    title: 'inline, wallet on, batch call of 64',
    color: '#ff7f0e',
    queue: 'wallet',
    wallet: true,
    env: () => ({
      WALLET_URL: `http://127.0.0.1:${PORT_BASE + 6}`,
      WALLET_SECRET,
      WALLET_BATCH_SIZE: '64',
      WALLET_CLAIM_SIZE: '64',
      ...envOption('wallet-env'),
    }),
  },
  broker: {
    key: 'broker',
    title: 'inline, settlement events on (RabbitMQ and NATS JetStream)',
    color: '#9467bd',
    queue: 'broker',
    env: () => ({
      EVENT_PUBLISHERS: args.publishers as string,
      RABBITMQ_EXCHANGE: `bench-settlement-${process.pid}`,
      NATS_STREAM: `BENCH_SETTLEMENT_${process.pid}`,
      NATS_SUBJECT_PREFIX: `bench_settlement_${process.pid}`,
      ...envOption('broker-env'),
    }),
  },
};

/** The wallet mode of --burst and --steady: single calls, or with --batch-call the batch call. */
const WALLET_MODE = (): Mode => (args['batch-call'] ? MODES['wallet-batch'] : MODES.wallet);

const children: { stop(): Promise<void> }[] = [];

/** The receiver of one mode on its own copy of the registered database, and its load's deliveries. */
class Receiver {
  child: ChildProcess | undefined;
  readonly generator: LoadGenerator;

  constructor(
    readonly mode: Mode,
    readonly dbUrl: string,
  ) {
    this.generator = new LoadGenerator({
      pool: POOL,
      secret: SECRET,
      batchPrefix: `o-${mode.key}`,
      profile: 'money',
    });
  }

  get url(): string {
    return `http://127.0.0.1:${PORT_BASE + 1}`;
  }

  async start(): Promise<void> {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: this.dbUrl,
      SPORTAPI_WEBHOOK_SECRETS: SECRET,
      OPS_API_KEYS: OPS_KEY,
      PORT: String(PORT_BASE + 1),
      HOST: '127.0.0.1',
      ...envOption('env'),
      ...this.mode.env(),
    };
    delete env.TEST_DATABASE_URL;
    this.child = await startChild(
      `receiver (${this.mode.key})`,
      [...NODE_FLAGS, RECEIVER_ENTRY],
      env,
      `${this.url}/accounts/bench-probe`,
      {
        cwd: ROOT,
        logPath: resolve(LOG_DIR, `open-${this.mode.key}.log`),
        probeHeaders: { authorization: `Bearer ${OPS_KEY}` },
      },
    );
  }

  stop(): Promise<void> {
    return stopChild(this.child);
  }

  /** The next `n` deliveries of the sequence, signed ahead (so that signing takes no time of the load). */
  deliveries(n: number): Delivery[] {
    return Array.from({ length: n }, () => this.generator.next());
  }
}

/** The stand-in wallet (sim/wallet.ts) as a child process. */
async function startStandIn(): Promise<ChildProcess> {
  const port = PORT_BASE + 6;
  const argv = ['wallet', '--port', String(port), '--host', '127.0.0.1', '--secret', WALLET_SECRET];
  return startChild('stand-in wallet', [SIM_CLI, ...argv], process.env, `http://127.0.0.1:${port}/stats`, {
    cwd: ROOT,
    logPath: resolve(LOG_DIR, 'open-stand-in-wallet.log'),
  });
}

async function dbNow(client: pg.Client): Promise<string> {
  return (await client.query<{ t: string }>('SELECT clock_timestamp()::text AS t')).rows[0].t;
}

/** Pending rows of the mode's queue. */
async function pending(client: pg.Client, queue: Queue): Promise<number> {
  const table = { wallet: 'wallet_outbox', inbox: 'callback_inbox', broker: 'event_outbox' }[queue];
  return (
    await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE status = 'pending'`)
  ).rows[0].n;
}

/** Waits until the queue has no pending row (at most `timeoutMs`). @returns whether it drained. */
async function drain(client: pg.Client, queue: Queue | undefined, timeoutMs: number): Promise<boolean> {
  if (!queue) return true;
  const until = Date.now() + timeoutMs;
  while ((await pending(client, queue)) > 0) {
    if (Date.now() > until) return false;
    await sleep(250);
  }
  return true;
}

/** The background lag of the rows written between `start` and `end` (database clock), seconds. */
interface Lag {
  rows: number;
  done: number;
  p50: number;
  p99: number;
  max: number;
  /** From the end of the load to the last row done. */
  drainSeconds: number;
}

async function lagOf(client: pg.Client, queue: Queue, start: string, end: string): Promise<Lag> {
  const [table, born, done, doneStatus] = {
    wallet: ['wallet_outbox', 'created_at', 'delivered_at', 'delivered'],
    inbox: ['callback_inbox', 'received_at', 'finished_at', 'done'],
    broker: ['event_outbox', 'created_at', 'delivered_at', 'delivered'],
  }[queue];
  // A row not done yet counts with its age now: a lower bound of its lag.
  const { rows } = await client.query<Lag>(
    `WITH w AS (
       SELECT extract(epoch FROM coalesce(${done}, clock_timestamp()) - ${born})::float8 AS lag, status, ${done} AS done_at
         FROM ${table} WHERE ${born} BETWEEN $1::timestamptz AND $2::timestamptz)
     SELECT count(*)::int AS rows, count(*) FILTER (WHERE status = '${doneStatus}')::int AS done,
            coalesce(percentile_disc(0.5) WITHIN GROUP (ORDER BY lag), 0)::float8 AS p50,
            coalesce(percentile_disc(0.99) WITHIN GROUP (ORDER BY lag), 0)::float8 AS p99,
            coalesce(max(lag), 0)::float8 AS max,
            greatest(0, coalesce(extract(epoch FROM max(done_at) - $2::timestamptz), 0))::float8 AS "drainSeconds"
       FROM w`,
    [start, end],
  );
  return rows[0];
}

/** One measured load of a mode: the answers, the lag, the CPU. */
interface Step {
  mode: string;
  offered: number;
  load: LoadResult;
  lag?: Lag;
  drained: boolean;
  /** CPU ms per answered delivery, receiver process and its PostgreSQL backends, load and drain. */
  nodeCpuMs: number;
  pgCpuMs: number;
  /** Pushes delivered (wallet mode): rows of the load delivered by the end of the drain. */
  pushes?: number;
  loadAverage: number;
  pass: boolean;
}

/** An open-loop load of `rate` for `seconds` on a running receiver, its drain and its figures. */
async function step(r: Receiver, client: pg.Client, rate: number, seconds: number): Promise<Step> {
  const deliveries = r.deliveries(Math.round(rate * seconds));
  const pool = receiverPool(r.url);
  const loadAverage = loadavg()[0];
  const pid = r.child?.pid as number;
  const cpu0 = cpuMsOf(pid) ?? NaN;
  const db0 = await backendCpu(r.dbUrl);
  const start = await dbNow(client);
  const load = await openLoop(pool, CALLBACK_PATH, deliveries, rate, seconds);
  const end = await dbNow(client);
  await pool.close();
  const drained = await drain(client, r.mode.queue, DRAIN_TIMEOUT_MS);
  const nodeCpu = (cpuMsOf(pid) ?? NaN) - cpu0;
  const pgCpu = backendCpuUsed(db0, await backendCpu(r.dbUrl));
  const lag = r.mode.queue ? await lagOf(client, r.mode.queue, start, end) : undefined;
  const answered = Math.max(1, load.sent);
  const ok = (load.answers['200'] ?? 0) === load.sent;
  const pass = ok && load.p99 <= LIMITS.p99 * 1000 && (lag === undefined || lag.p99 <= LIMITS.lag);
  return {
    mode: r.mode.key,
    offered: rate,
    load,
    lag,
    drained,
    nodeCpuMs: nodeCpu / answered,
    pgCpuMs: pgCpu / answered,
    pushes: r.mode.queue === 'wallet' ? lag?.done : undefined,
    loadAverage,
    pass,
  };
}

const s1 = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(0)} ms`);

function describe(s: Step): string {
  const answers = Object.entries(s.load.answers)
    .sort()
    .map(([k, n]) => `${n} × ${k}`)
    .join(', ');
  const lag = s.lag
    ? `; ${s.mode === 'inbox' ? 'apply wait' : 'wallet lag'} p50 ${s.lag.p50.toFixed(2)} s, p99 ${s.lag.p99.toFixed(2)} s, ` +
      `max ${s.lag.max.toFixed(2)} s (${s.lag.done}/${s.lag.rows} rows done, last ${s.lag.drainSeconds.toFixed(1)} s after the load` +
      `${s.drained ? '' : `, NOT drained within ${DRAIN_TIMEOUT_MS / 1000} s`})`
    : '';
  const cpu = Number.isFinite(s.nodeCpuMs)
    ? `; CPU ${s.nodeCpuMs.toFixed(1)} + ${s.pgCpuMs.toFixed(1)} ms per batch`
    : '';
  const perPush = s.pushes
    ? ` (${(((s.nodeCpuMs + s.pgCpuMs) * s.load.sent) / s.pushes).toFixed(2)} ms per push delivered)`
    : '';
  return (
    `${s.mode} at ${s.offered.toFixed(1)}/s for ${s.load.seconds} s: ${answers}; p50 ${s1(s.load.p50)}, p99 ${s1(s.load.p99)}, ` +
    `max ${s1(s.load.max)}${lag}${cpu}${perPush}; load average ${s.loadAverage.toFixed(1)} before` +
    (s.load.lateSends ? `; ${s.load.lateSends} sends left over 10 ms late (the bench was busy)` : '') +
    `; slowest answer per second of the schedule: ${s.load.worstBySecond.map((ms) => (ms / 1000).toFixed(1)).join(' ')} s` +
    ` → ${s.pass ? 'within' : 'OUTSIDE'} p99 <= ${LIMITS.p99} s and lag p99 <= ${LIMITS.lag} s`
  );
}

let admin = '';
const registered = `${PREFIX}_registered`;

/** The template, then the registered pool (players' deposits, coupons) on `P_registered`. */
async function prepare(): Promise<void> {
  admin = (args['database-url'] as string | undefined) ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  if (!(await reachable(admin))) throw new Error(`no PostgreSQL at ${admin} (--database-url)`);
  const template = `${PREFIX}_template`;
  await dropDatabases(admin, [template, registered]);
  await createMigratedDatabase(admin, template);
  await cloneDatabase(admin, template, registered, false);
  const r = new Receiver(MODES.inline, databaseUrl(admin, registered));
  children.push(r);
  await r.start();
  const t = performance.now();
  await registerOnReceiver(r.url, OPS_KEY, poolPlayers(POOL), poolCoupons(POOL));
  console.log(
    `registered ${POOL.coupons} coupons of ${POOL.players} players in ${((performance.now() - t) / 1000).toFixed(0)} s ` +
      '(money-heavy load: 100-coupon batches, about 21 pushed operations each)',
  );
  await r.stop();
  children.splice(children.indexOf(r), 1);
  await dropDatabases(admin, [template]);
}

/** Runs `work` with the receiver of `mode` started on a fresh copy of the registered database, warmed up. */
async function withMode<T>(mode: Mode, work: (r: Receiver, client: pg.Client) => Promise<T>): Promise<T> {
  const name = `${PREFIX}_${mode.key}`;
  await dropDatabases(admin, [name]);
  await cloneDatabase(admin, registered, name, false);
  let standIn: ChildProcess | undefined;
  if (mode.wallet) standIn = await startStandIn();
  const r = new Receiver(mode, databaseUrl(admin, name));
  children.push(r);
  const client = new pg.Client({ connectionString: r.dbUrl, application_name: 'bench-monitor' });
  try {
    await r.start();
    await client.connect();
    const pool = receiverPool(r.url);
    let i = 0;
    const warm = r.deliveries(WARMUP);
    // As many at once as the receiver's pool holds (DB_POOL_SIZE, 16): every connection opened
    // and its statements prepared, as in a receiver that has been running.
    await closedLoop(pool, CALLBACK_PATH, () => warm[i++ % WARMUP], 16, 0.001 + WARMUP / 200);
    await pool.close();
    await drain(client, mode.queue, DRAIN_TIMEOUT_MS);
    await client.query('VACUUM (ANALYZE)');
    // A quiet spell before the load, longer than an idle connection lives in node-postgres' pool by
    // default (10 s): the burst meets the pool a quiet minute leaves.
    await sleep(QUIET_MS);
    return await work(r, client);
  } finally {
    await client.end().catch(() => undefined);
    await r.stop();
    children.splice(children.indexOf(r), 1);
    await stopChild(standIn);
    if (!args['keep-databases']) await dropDatabases(admin, [name]);
  }
}

/** Inline mode's closed-loop capacity at concurrency 8 (or `--capacity-rate`), batches/s answered 200. */
async function capacity(): Promise<number> {
  if (args['capacity-rate']) {
    const given = Number(args['capacity-rate']);
    console.log(`inline closed-loop capacity: ${given} batches/s (--capacity-rate, not measured)`);
    return given;
  }
  const seconds = Number(args['capacity-seconds']);
  return withMode(MODES.inline, async (r) => {
    const pool = receiverPool(r.url);
    const res = await closedLoop(pool, CALLBACK_PATH, () => r.generator.next(), 8, seconds);
    await pool.close();
    console.log(
      `inline closed-loop capacity at c=8: ${res.okPerSecond.toFixed(1)} batches/s over ${res.seconds.toFixed(0)} s ` +
        `(p50 ${s1(res.p50)}, p99 ${s1(res.p99)}; load average ${loadavg()[0].toFixed(1)})`,
    );
    return res.okPerSecond;
  });
}

/** `--capacity`: each mode's rates as fractions of the capacity; the highest within the limits; the chart. */
async function capacityRun(cap: number): Promise<unknown> {
  const fractions = (args.fractions as string).split(',').map(Number);
  const keys = (args.modes as string).split(',').map((k) => k.trim());
  for (const k of keys) if (!MODES[k]) usage(`--modes: unknown mode '${k}'`);
  const results: Record<string, Step[]> = {};
  for (const key of keys) {
    const mode = MODES[key];
    results[key] = [];
    if (mode.placeholder) {
      console.log(`${mode.title}: ${mode.placeholder}`);
      continue;
    }
    await withMode(mode, async (r, client) => {
      let failures = 0;
      for (const f of fractions) {
        const s = await step(r, client, cap * f, DURATION);
        results[key].push(s);
        console.log(`  ${describe(s)}`);
        // Two rates in a row outside the limits: higher ones only take longer to fail.
        failures = s.pass ? 0 : failures + 1;
        if (failures >= 2) break;
      }
    });
  }
  console.log('');
  console.log(
    `capacity (highest offered rate with callback p99 <= ${LIMITS.p99} s and lag p99 <= ${LIMITS.lag} s, ${DURATION} s each):`,
  );
  const capacities: Record<string, number | null> = {};
  for (const key of keys) {
    const mode = MODES[key];
    if (mode.placeholder) {
      console.log(`  ${mode.title}: n/a (${mode.placeholder})`);
      continue;
    }
    const best = results[key].filter((s) => s.pass).sort((a, b) => b.offered - a.offered)[0];
    capacities[key] = best ? best.offered : null;
    console.log(
      `  ${mode.title}: ${best ? `${best.offered.toFixed(1)} batches/s = ${(best.offered / cap).toFixed(2)}× inline's closed-loop capacity` : 'none of the rates tried'}`,
    );
  }
  const series: ChartSeries[] = keys.map((key) => ({
    label: MODES[key].title,
    color: MODES[key].color,
    note: MODES[key].placeholder ? 'not measured yet' : undefined,
    points: results[key].map((s) => ({
      rate: s.offered,
      p99: s.load.p99 / 1000,
      lag: s.lag ? s.lag.p99 : null,
    })),
  }));
  const chartPath = resolve(ROOT, args.chart as string);
  writeFileSync(
    chartPath,
    capacityChart(
      'Open loop, money-heavy: callback p99 and background lag p99 against the offered rate',
      `inline closed-loop capacity ${cap.toFixed(1)} batches/s at c=8; ${DURATION} s per rate; ${new Date().toISOString().slice(0, 16)}Z`,
      series,
      LIMITS,
    ),
  );
  console.log(`chart: ${chartPath}`);
  return { capacity: cap, capacities, results };
}

/** `--burst`: the wallet on at 0.8× the capacity; p99 and the time until every push is delivered. */
async function burstRun(cap: number): Promise<unknown> {
  return withMode(WALLET_MODE(), async (r, client) => {
    const s = await step(r, client, cap * 0.8, DURATION);
    console.log(`  ${describe(s)}`);
    console.log(
      `burst: callback p99 ${s1(s.load.p99)} (target <= 1 s); every push delivered ` +
        (s.drained && s.lag
          ? `${s.lag.drainSeconds.toFixed(1)} s after the burst ended (target <= 60 s)`
          : `NOT within ${DRAIN_TIMEOUT_MS / 1000} s`),
    );
    return { capacity: cap, burst: s };
  });
}

/** `--steady`: 0.5× the capacity with the wallet off, on, and in inbox mode. */
async function steadyRun(cap: number): Promise<unknown> {
  const steps: Record<string, Step> = {};
  for (const key of ['inline', 'wallet', 'inbox']) {
    steps[key] = await withMode(key === 'wallet' ? WALLET_MODE() : MODES[key], async (r, client) => {
      const s = await step(r, client, cap * 0.5, DURATION);
      console.log(`  ${describe(s)}`);
      return s;
    });
  }
  const { inline, wallet, inbox } = steps;
  console.log(
    `steady: wallet on p99 ${s1(wallet.load.p99)} = ${(wallet.load.p99 / inline.load.p99).toFixed(2)}× wallet off ` +
      `(${s1(inline.load.p99)}; target <= 1.5×), wallet lag p99 ${wallet.lag?.p99.toFixed(2)} s (target <= 5 s); ` +
      `inbox p99 ${s1(inbox.load.p99)} (target <= 300 ms), apply wait p99 ${inbox.lag?.p99.toFixed(2)} s (target <= 2 s)`,
  );
  if (wallet.pushes)
    console.log(
      `  the wallet's cost: ${(((wallet.nodeCpuMs - inline.nodeCpuMs) * wallet.load.sent) / wallet.pushes).toFixed(2)} + ` +
        `${(((wallet.pgCpuMs - inline.pgCpuMs) * wallet.load.sent) / wallet.pushes).toFixed(2)} ms of CPU (node + PostgreSQL) ` +
        `per push delivered, over wallet off at the same rate (${wallet.pushes} pushes)`,
    );
  return { capacity: cap, steps };
}

async function main(): Promise<void> {
  const t0 = performance.now();
  mkdirSync(LOG_DIR, { recursive: true });
  await prepare();
  let out: unknown;
  if (COMMAND === 'run') {
    const mode = MODES[args.mode as string];
    if (!mode || mode.placeholder) usage(`--mode: inline, inbox, wallet, wallet-batch or broker`);
    if (!args.rate) usage('--rate R is needed for one run (or --capacity, --burst, --steady)');
    out = await withMode(mode, async (r, client) => {
      const s = await step(r, client, Number(args.rate), DURATION);
      console.log(describe(s));
      return s;
    });
  } else {
    const cap = await capacity();
    out =
      COMMAND === 'capacity'
        ? await capacityRun(cap)
        : COMMAND === 'burst'
          ? await burstRun(cap)
          : await steadyRun(cap);
  }
  if (!args['keep-databases']) await dropDatabases(admin, [registered]);
  const file = resolve(LOG_DIR, `open-${COMMAND}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(
    file,
    JSON.stringify(out, (k, v: unknown) => (k === 'latencies' ? undefined : v), 2),
  );
  console.log(`figures: ${file}; total ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}

async function cleanup(): Promise<void> {
  await Promise.all(children.map((c) => c.stop().catch(() => undefined)));
}

runBench(main, cleanup);
