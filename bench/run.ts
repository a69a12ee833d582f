/**
 * Throughput benchmark: the receiver as `npm start` starts it (`node … dist/src/main.js`) against the raw
 * baseline (bench/baseline-server.ts), each on a fresh database of one PostgreSQL server, loaded by
 * autocannon with signed 100-coupon batches (bench/load.ts) of two profiles, today's mix then the
 * money-heavy one, sampling each side's sessions for lock waits; then the receiver in inbox mode
 * under the money-heavy load; with `--wallet`, the money-heavy load once more with the wallet
 * outbox on both sides (the receiver delivering to the stand-in wallet). `npm run bench -- --help`
 * lists the options; docs/benchmark.md explains the figures. The last line is always (today's mix, when it ran)
 *   throughput ratio receiver/baseline: R (receiver X batches/s, baseline Y batches/s, receiver p99 Z ms)
 */
import { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import pg from 'pg';
import type { WalletStats } from '../sim/wallet.js';
import { DEFAULT_WALLET_OPERATION_TYPES } from '../src/wallet/wallet.config.js';
import { EmbeddedPostgresServer } from '../src/database/embedded-postgres.js';
import { Delivery, LoadGenerator, LoadProfile, PoolSpec, poolCoupons, poolPlayers } from './load.js';
import {
  backendCpu,
  backendCpuUsed,
  cpuMsOf,
  memoryOf,
  percentile,
  sleep,
  startChild as startLoggedChild,
  startScriptNodeFlags,
  stopChild,
} from './processes.js';
import {
  balanceTotals,
  BalanceTotals,
  CURRENCY,
  cloneDatabase,
  createDatabase,
  createMigratedDatabase,
  databaseUrl,
  dropDatabases,
  preload,
  reachable,
  registerOnReceiver,
  seedBaseline,
  seededTotals,
  lastBatchId,
  TableCounts,
  tableCounts,
  withClient,
} from './setup.js';

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    large: { type: 'boolean', default: false },
    'database-url': { type: 'string' },
    duration: { type: 'string' },
    concurrency: { type: 'string' },
    'port-base': { type: 'string', default: '4100' },
    'pool-coupons': { type: 'string' },
    players: { type: 'string', default: '200' },
    profiles: { type: 'string', default: 'mixed,money' },
    'money-coupons': { type: 'string' },
    'money-players': { type: 'string', default: '1000' },
    'no-inbox': { type: 'boolean', default: false },
    'inbox-env': { type: 'string' },
    'drain-timeout': { type: 'string', default: '120' },
    wallet: { type: 'boolean', default: false },
    'wallet-env': { type: 'string' },
    'sample-ms': { type: 'string', default: '25' },
    'baseline-pool-size': { type: 'string', default: '16' },
    'keep-databases': { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    slices: { type: 'string' },
    embedded: { type: 'boolean', default: false },
    'db-prefix': { type: 'string', default: 'bench' },
    'receiver-build': { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

/** The options, as `--help` prints them. */
const HELP = `npm run bench [-- options]: the receiver against a raw node:http + pg baseline (bench/RESULTS.md)
  --quick                 10 s per run (default 30 s), one slice
  --large                 then again on databases preloaded with 1 M coupons / 5 M bets
  --duration S            seconds per side and concurrency
  --concurrency 1,8,32    concurrencies to run (the ratio lines use 8 when present)
  --slices N              each run split into N interleaved slices (3; 1 with --quick)
  --profiles mixed,money  load profiles, in this order: mixed (today's mix, about 8 financial
                          operations per batch) and money (money-heavy, about 35 per batch)
  --pool-coupons N        mixed: registered coupons (6400; 4000 with --quick); --players N (200)
  --money-coupons N       money: registered coupons (10000; 5000 with --quick); --money-players N (1000)
  --no-inbox              skip the inbox-mode run after the money profile's inline runs
  --inbox-env K=V,...     extra environment of the inbox-mode receiver (default inbox settings),
                          e.g. INBOX_CONCURRENCY=8,INBOX_POLL_INTERVAL_MS=50
  --drain-timeout S       seconds to wait for the inbox (or the wallet outbox) to drain after a load (120)
  --wallet                then the wallet run (opt-in: its drains take minutes): the money profile
                          again at c=8 (or at --concurrency when given) against a receiver with the
                          http connector to the stand-in wallet (sim/wallet.ts, port base + 6) and a
                          baseline inserting the same wallet_outbox rows (never delivering them);
                          prints the ratio, drain rates, backlog and age, and checks the stand-in
                          applied every outbox row once (exit 1 if not)
  --wallet-env K=V,...    extra environment of the wallet run's receiver, e.g. WALLET_CONCURRENCY=4
  --sample-ms N           pg_stat_activity sampling interval for the wait figures (25; 0: off)
  --database-url URL      a PostgreSQL where databases can be created (default the local service,
                          else an embedded server); --embedded forces the embedded one
  --db-prefix P           databases P_template, P_receiver, P_baseline, P_inbox, P_wallet_receiver,
                          P_wallet_baseline (bench)
  --port-base N           receiver N+1, baseline N+2, inbox receiver N+3, wallet receiver N+4,
                          wallet baseline N+5, stand-in wallet N+6, embedded PostgreSQL N+90 (4100)
  --baseline-pool-size N  the baseline's connections (16)
  --receiver-build DIR    run the receiver built in DIR (a built checkout, e.g. a worktree of an
                          earlier commit: its dist/src/main.js with its start script's node flags)
                          on a database it migrates itself, to measure before and after against
                          the same baseline; not with --large or --wallet
  --keep-databases        keep the databases; --profile  CPU profiles under .data/bench/profile
                          (runs sharing a PostgreSQL need distinct --db-prefix and --port-base)`;

if (args.help) {
  console.log(HELP);
  process.exit(0);
}

const QUICK = args.quick as boolean;
const DURATION = Number(args.duration ?? (QUICK ? 10 : 30));
/** Deliveries of the warm-up of each side (concurrency 8), not measured. */
const WARMUP_DELIVERIES = 80;
/** Each side's DURATION at one concurrency is split in this many interleaved slices. */
const SLICES = Number(args.slices ?? (QUICK ? 1 : 3));
const CONCURRENCY = ((args.concurrency as string | undefined) ?? '1,8,32').split(',').map(Number);
const PORT_BASE = Number(args['port-base']);
const RATIO_CONCURRENCY = CONCURRENCY.includes(8) ? 8 : CONCURRENCY[0];
const SECRET = 'bench-webhook-secret';
const OPS_KEY = 'bench-ops-key';
const CALLBACK_PATH = '/sportapi/callback';
const ROOT = process.cwd();
/** The checkout whose receiver runs: this one, or `--receiver-build`'s. */
const RECEIVER_BUILD = args['receiver-build'] ? resolve(args['receiver-build']) : undefined;
const RECEIVER_ROOT = RECEIVER_BUILD ?? ROOT;
const RECEIVER_ENTRY = RECEIVER_BUILD
  ? resolve(RECEIVER_BUILD, 'dist/src/main.js')
  : fileURLToPath(new URL('../src/main.js', import.meta.url));
/** Node's flags in package.json's `start` script (`exec node <flags> dist/src/main.js`), as `npm start` runs it. */
const RECEIVER_NODE_FLAGS = startScriptNodeFlags(
  (JSON.parse(readFileSync(resolve(RECEIVER_ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } })
    .scripts.start,
);
const BASELINE_ENTRY = fileURLToPath(new URL('./baseline-server.js', import.meta.url));
const SIM_CLI = fileURLToPath(new URL('../sim/cli.js', import.meta.url));
const LOG_DIR = resolve(ROOT, '.data', 'bench');
/** Interval of the pg_stat_activity sampler, ms (0: no wait figures). */
const SAMPLE_MS = Number(args['sample-ms']);
/** Concurrency of the inbox-mode run (compared with the inline receiver's at the same one). */
const INBOX_CONCURRENCY = 8;
const DRAIN_TIMEOUT_MS = Number(args['drain-timeout']) * 1000;
/** Application name of the bench's own monitoring sessions (left out of the wait figures). */
const MONITOR_APP = 'bench-monitor';
/** Concurrencies of the wallet run: --concurrency when given, else 8 alone. */
const WALLET_CONCURRENCY = args.concurrency ? CONCURRENCY : [8];
/** Shared secret of the wallet run's receiver and stand-in wallet. */
const WALLET_SECRET = 'bench-wallet-secret-0123456789';
/** Interval of the wallet run's `GET /wallet/status` polls, ms. */
const WALLET_POLL_MS = 500;

/** A load profile as run: its pool, titles and whether the inbox-mode run follows it. */
interface ProfileSpec {
  key: LoadProfile;
  title: string;
  /** Prefix of its ratio line (today's mix keeps the historical line). */
  ratioLabel: string;
  // 40 blocks of 100 coupons or more: the 32 batches in flight at concurrency 32 never share one.
  pool: PoolSpec;
  inbox: boolean;
  /** Whether the wallet run (`--wallet`) follows its inline runs. */
  wallet: boolean;
}

const PROFILES: Record<LoadProfile, ProfileSpec> = {
  mixed: {
    key: 'mixed',
    title: "today's mix",
    ratioLabel: 'throughput ratio',
    pool: {
      coupons: Number(args['pool-coupons'] ?? (QUICK ? 4000 : 6400)),
      players: Number(args.players),
      seed: 20261130,
    },
    inbox: false,
    wallet: false,
  },
  money: {
    key: 'money',
    title: 'money-heavy',
    ratioLabel: 'money-heavy throughput ratio',
    // Registering goes through the partner API at about 100 requests/s on a 2-core machine: --quick
    // halves the pool (still 50 blocks; 5 coupons per player).
    pool: {
      coupons: Number(args['money-coupons'] ?? (QUICK ? 5000 : 10000)),
      players: Number(args['money-players']),
      seed: 20261130,
    },
    inbox: !args['no-inbox'],
    wallet: args.wallet as boolean,
  },
};

/** Stops before any work on a wrong option value. */
function usage(message: string): never {
  console.error(`${message} (npm run bench -- --help)`);
  process.exit(2);
}

const SELECTED: ProfileSpec[] = (args.profiles as string).split(',').map((name) => {
  const key = name.trim();
  if (!Object.hasOwn(PROFILES, key)) usage(`--profiles: unknown profile '${key}' (mixed, money)`);
  return PROFILES[key as LoadProfile];
});

if (RECEIVER_BUILD && (args.large || args.wallet)) usage('--receiver-build: not with --large or --wallet');
if (args.wallet && !SELECTED.includes(PROFILES.money))
  usage('--wallet: the wallet run follows the money profile (--profiles money or mixed,money)');

/** An `--X-env K=V,...` option: extra environment of a receiver. */
function envOption(name: 'inbox-env' | 'wallet-env'): Record<string, string> {
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

/** `--inbox-env`: extra environment of the inbox-mode receiver. */
const INBOX_ENV = envOption('inbox-env');
/** `--wallet-env`: extra environment of the wallet run's receiver. */
const WALLET_ENV = envOption('wallet-env');
/** Operation types written to the outbox in the wallet run, on both sides. */
const WALLET_TYPES = WALLET_ENV.WALLET_OPERATION_TYPES ?? DEFAULT_WALLET_OPERATION_TYPES;

type SideName = 'receiver' | 'baseline' | 'inbox';

/** Deliveries made ahead of a run (the run takes them in order; any shortfall is made on the fly). */
class Feed {
  private queue: (Delivery | undefined)[] = [];
  private head = 0;
  madeDuringRun = 0;

  constructor(private readonly generator: LoadGenerator) {}

  fill(count: number): void {
    if (this.head > 0) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    while (this.queue.length < count) this.queue.push(this.generator.next());
  }

  take(): Delivery {
    if (this.head < this.queue.length) {
      const d = this.queue[this.head] as Delivery;
      this.queue[this.head++] = undefined;
      return d;
    }
    this.madeDuringRun++;
    return this.generator.next();
  }
}

/** A child process of this one that the bench stops at the end (or on a signal). */
interface Stoppable {
  stop(): Promise<void>;
}

/**
 * Starts `node <nodeArgs>` (with the `--profile` flags), its output to `.data/bench/<logName>.log`
 * (appended to with `append`), and waits until `probe` answers anything (at most 90 s).
 */
function startChild(
  name: string,
  nodeArgs: string[],
  env: NodeJS.ProcessEnv,
  logName: string,
  append: boolean,
  probe: string,
  cwd = ROOT,
): Promise<ChildProcess> {
  return startLoggedChild(name, nodeArgs, env, probe, {
    cwd,
    logPath: resolve(LOG_DIR, `${logName}.log`),
    append,
    probeHeaders: { authorization: `Bearer ${OPS_KEY}` },
    cpuProfileDir: args.profile ? resolve(LOG_DIR, 'profile') : undefined,
  });
}

/** A server under test: a child process of this one. */
class Side implements Stoppable {
  child: ChildProcess | undefined;
  feed: Feed;
  bestRate = 0;

  /**
   * @param name `inbox` is the receiver started with `CALLBACK_MODE=inbox` and `extraEnv`.
   * @param label its name in the per-run lines (the wallet run's sides say so).
   */
  constructor(
    readonly name: SideName,
    readonly port: number,
    readonly dbUrl: string,
    batchPrefix: string,
    profile: ProfileSpec,
    private readonly extraEnv: Record<string, string> = {},
    readonly label: string = name,
  ) {
    this.feed = new Feed(
      new LoadGenerator({ pool: profile.pool, secret: SECRET, batchPrefix, profile: profile.key }),
    );
  }

  get pid(): number {
    return this.child?.pid as number;
  }

  /** Starts the server, its output to `.data/bench/<logName>.log` (appended to with `append`). */
  async start(logName: string, append = false): Promise<void> {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: this.dbUrl,
      SPORTAPI_WEBHOOK_SECRETS: SECRET,
      OPS_API_KEYS: OPS_KEY,
      PORT: String(this.port),
      HOST: '127.0.0.1',
      ...(this.name === 'inbox' ? { CALLBACK_MODE: 'inbox' } : {}),
      ...this.extraEnv,
    };
    delete env.TEST_DATABASE_URL;
    const nodeArgs = this.name === 'baseline' ? [BASELINE_ENTRY] : [...RECEIVER_NODE_FLAGS, RECEIVER_ENTRY];
    const probe = this.name === 'baseline' ? '/health' : '/accounts/bench-probe';
    this.child = await startChild(
      this.label,
      nodeArgs,
      env,
      logName,
      append,
      `http://127.0.0.1:${this.port}${probe}`,
      this.name === 'baseline' ? ROOT : RECEIVER_ROOT,
    );
  }

  stop(): Promise<void> {
    return stopChild(this.child);
  }
}

/** The stand-in wallet (sim/wallet.ts, `npm run sportapi -- wallet`) as a child process of this one. */
class StandInWallet implements Stoppable {
  private child: ChildProcess | undefined;

  constructor(readonly port: number) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(logName: string): Promise<void> {
    const argv = ['wallet', '--port', String(this.port), '--host', '127.0.0.1', '--secret', WALLET_SECRET];
    this.child = await startChild(
      'stand-in wallet',
      [SIM_CLI, ...argv],
      process.env,
      logName,
      false,
      `${this.url}/stats`,
    );
  }

  /** Its counters (`GET /stats`). */
  async stats(): Promise<WalletStats> {
    return (await (await fetch(`${this.url}/stats`)).json()) as WalletStats;
  }

  /** The transaction id of every transaction it applied (`GET /transactions`). */
  async transactionIds(): Promise<string[]> {
    const body = (await (await fetch(`${this.url}/transactions`)).json()) as {
      transactions: { transactionId: string }[];
    };
    return body.transactions.map((t) => t.transactionId);
  }

  stop(): Promise<void> {
    return stopChild(this.child);
  }
}

/** The server's current WAL insert position as a byte offset (the LSN less 0/0; exact below 2^53). */
async function walPosition(dbUrl: string): Promise<number> {
  return withClient(dbUrl, async (c) =>
    Number(
      (await c.query<{ n: string }>("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::text AS n")).rows[0]
        .n,
    ),
  );
}

/** Name of the database of a connection URL. */
function dbNameOf(url: string): string {
  return decodeURIComponent(new URL(url).pathname.slice(1));
}

/**
 * Active-session samples of one database: every row of `pg_stat_activity` with `state = 'active'`
 * seen by a {@link WaitSampler}, counted by `wait_event_type:wait_event` (`CPU` when none).
 */
interface WaitStats {
  samples: number;
  /** Samples with `wait_event_type = 'Lock'` (row, tuple, transaction id, relation … locks). */
  lock: number;
  events: Record<string, number>;
  /** Polls of pg_stat_activity made (each gives 0..n samples). */
  polls: number;
}

function emptyWaits(): WaitStats {
  return { samples: 0, lock: 0, events: {}, polls: 0 };
}

function addWaits(into: WaitStats, w: WaitStats): WaitStats {
  into.samples += w.samples;
  into.lock += w.lock;
  into.polls += w.polls;
  for (const [k, n] of Object.entries(w.events)) into.events[k] = (into.events[k] ?? 0) + n;
  return into;
}

const pct = (n: number, of: number) => (of ? `${((100 * n) / of).toFixed(0)}%` : 'n/a');

/** Lock waits as a share of active-session samples, e.g. `87%` (`n/a` without samples). */
function lockShare(w: WaitStats): string {
  return pct(w.lock, w.samples);
}

/** `N samples, lock waits L%; top waits Lock:tuple 80%, …` (shares of all active samples). */
function describeWaits(w: WaitStats): string {
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
 * Samples `pg_stat_activity` of one database every {@link SAMPLE_MS} ms on its own connection
 * while a run lasts (the bench's own sessions left out), for the share of lock waits: a hot row
 * shows as sessions queued on `Lock:tuple` / `Lock:transactionid`.
 */
class WaitSampler {
  private stopped = false;
  private loop: Promise<void> = Promise.resolve();
  private readonly stats = emptyWaits();

  constructor(private readonly dbUrl: string) {}

  start(): this {
    if (SAMPLE_MS > 0) this.loop = this.run();
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
        await sleep(Math.max(0, SAMPLE_MS - (performance.now() - t)));
      }
    } catch (err) {
      console.warn(`  wait sampler of ${dbNameOf(this.dbUrl)} stopped: ${(err as Error).message}`);
    } finally {
      await client.end().catch(() => undefined);
    }
  }
}

/** What one autocannon run of one side measured. */
interface Slice {
  seconds: number;
  ok: number;
  duplicates: number;
  errors: number;
  /** Every response time, ms. */
  latencies: number[];
  peakRssMb: number;
  hwmMb: number;
  /** CPU ms of the server process and of its PostgreSQL backends during the run. */
  serverCpuMs: number;
  dbCpuMs: number;
  /** WAL the server wrote during the run, bytes (the whole server's: the other side is idle). */
  walBytes: number;
  answered: number;
  madeDuringRun: number;
  waits: WaitStats;
}

/** Figures of one side at one concurrency (one or more interleaved slices). */
interface RunStats {
  side: SideName;
  connections: number;
  seconds: number;
  ok: number;
  duplicates: number;
  errors: number;
  batchesPerSecond: number;
  /** 200 answers that were not duplicates, per second (new batches applied). */
  newBatchesPerSecond: number;
  couponsPerSecond: number;
  p50: number;
  p95: number;
  p99: number;
  peakRssMb: number;
  hwmMb: number;
  /** CPU ms per answered delivery of the server process and of its PostgreSQL backends. */
  serverCpuMs: number;
  dbCpuMs: number;
  /** WAL kB per answered delivery. */
  walKb: number;
  madeDuringRun: number;
  waits: WaitStats;
}

function summarize(side: SideName, connections: number, slices: Slice[]): RunStats {
  const sum = (f: (s: Slice) => number) => slices.reduce((a, s) => a + f(s), 0);
  const latencies = slices.flatMap((s) => s.latencies).sort((a, b) => a - b);
  const seconds = sum((s) => s.seconds);
  const ok = sum((s) => s.ok);
  const duplicates = sum((s) => s.duplicates);
  const answered = Math.max(
    1,
    sum((s) => s.answered),
  );
  return {
    side,
    connections,
    seconds,
    ok,
    duplicates,
    errors: sum((s) => s.errors),
    batchesPerSecond: ok / seconds,
    newBatchesPerSecond: (ok - duplicates) / seconds,
    couponsPerSecond: (ok / seconds) * 100,
    p50: percentile(latencies, 50),
    p95: percentile(latencies, 95),
    p99: percentile(latencies, 99),
    peakRssMb: Math.max(...slices.map((s) => s.peakRssMb)),
    hwmMb: Math.max(...slices.map((s) => s.hwmMb)),
    serverCpuMs: sum((s) => s.serverCpuMs) / answered,
    dbCpuMs: sum((s) => s.dbCpuMs) / answered,
    walKb: sum((s) => s.walBytes) / 1024 / answered,
    madeDuringRun: sum((s) => s.madeDuringRun),
    waits: slices.reduce((w, s) => addWaits(w, s.waits), emptyWaits()),
  };
}

/** How {@link runLoad} runs: `amount` deliveries instead of `seconds`; sampling; idle wait. */
interface LoadOptions {
  amount?: number;
  /** Sample the side's database sessions for lock waits (measured runs). */
  sampleWaits?: boolean;
  /** Wait for the side's database to go idle after the load (not in inbox mode). */
  waitIdle?: boolean;
  /** Called right before the load starts and right after it ends. */
  onStart?: () => Promise<void>;
  onFinish?: () => Promise<void>;
}

/** One autocannon run against a side: `seconds` long, or `amount` deliveries. */
async function runLoad(
  side: Side,
  connections: number,
  seconds: number,
  opts: LoadOptions = {},
): Promise<Slice> {
  const { amount, sampleWaits = false, waitIdle: idle = true } = opts;
  const expected = amount ?? Math.ceil(Math.max(side.bestRate, 50) * seconds * 2) + connections + 50;
  side.feed.fill(expected);
  side.feed.madeDuringRun = 0;
  const latencies: number[] = [];
  let ok = 0;
  let duplicates = 0;
  let non200 = 0;
  const request = (): autocannon.Request => ({
    method: 'POST',
    path: CALLBACK_PATH,
    setupRequest: (req) => {
      const d = side.feed.take();
      return {
        ...req,
        body: d.body,
        headers: { 'content-type': 'application/json', 'x-signature': d.signature },
      };
    },
    onResponse: (status, body) => {
      if (status === 200 && body.includes('"duplicate":true')) duplicates++;
    },
  });
  let peakRss = 0;
  const sample = () => {
    const m = memoryOf(side.pid);
    if (m) peakRss = Math.max(peakRss, m.rss);
  };
  sample();
  const sampler = setInterval(sample, 100);
  const cpuBefore = cpuMsOf(side.pid) ?? NaN;
  const dbBefore = await backendCpu(side.dbUrl);
  const walBefore = await walPosition(side.dbUrl);
  const waitSampler = sampleWaits ? new WaitSampler(side.dbUrl).start() : undefined;
  await opts.onStart?.();
  let finish: (result: autocannon.Result) => void = () => undefined;
  let failed: (err: unknown) => void = () => undefined;
  const finished = new Promise<autocannon.Result>((res, rej) => {
    finish = res;
    failed = rej;
  });
  const instance = autocannon(
    {
      url: `http://127.0.0.1:${side.port}`,
      connections,
      ...(amount ? { amount } : { duration: seconds }),
      timeout: 10,
      // Every client gets its own request object, built from the shared feed (one batch each time).
      requests: [{ method: 'POST', path: CALLBACK_PATH, body: Buffer.alloc(0) }],
      setupClient: (client) => client.setRequests([request()]),
    },
    (err: unknown, result: autocannon.Result) => (err ? failed(err) : finish(result)),
  );
  instance.on('response', (_client, statusCode, _bytes, responseTime) => {
    latencies.push(responseTime);
    if (statusCode === 200) ok++;
    else non200++;
  });
  const result = await finished.finally(() => clearInterval(sampler));
  await opts.onFinish?.();
  const waits = (await waitSampler?.stop()) ?? emptyWaits();
  sample();
  const hwm = memoryOf(side.pid)?.hwm ?? NaN;
  if (idle) await waitIdle(side);
  const serverCpu = (cpuMsOf(side.pid) ?? NaN) - cpuBefore;
  const dbCpu = backendCpuUsed(dbBefore, await backendCpu(side.dbUrl));
  const walBytes = (await walPosition(side.dbUrl)) - walBefore;
  const elapsed = result.duration || seconds;
  side.bestRate = Math.max(side.bestRate, (ok / elapsed) * (amount ? 1.5 : 1));
  return {
    seconds: elapsed,
    ok,
    duplicates,
    errors: non200 + result.errors,
    latencies,
    peakRssMb: peakRss,
    hwmMb: hwm,
    serverCpuMs: serverCpu,
    dbCpuMs: dbCpu,
    walBytes,
    answered: ok + non200,
    madeDuringRun: side.feed.madeDuringRun,
    waits,
  };
}

/** The warm-up of each side: {@link WARMUP_DELIVERIES} deliveries at concurrency 8, not measured. */
async function warmUp(sides: Side[]): Promise<void> {
  for (const side of sides) {
    const w = await runLoad(side, 8, 0, { amount: WARMUP_DELIVERIES });
    console.log(
      `warm-up ${side.label}: ${WARMUP_DELIVERIES} deliveries at concurrency 8, ` +
        `${(w.ok / w.seconds).toFixed(1)} batches/s`,
    );
  }
}

/**
 * The measured runs of `sides` at concurrency `c`: VACUUM (ANALYZE) and a CHECKPOINT, then
 * {@link SLICES} interleaved slices of DURATION / SLICES s each, a line per slice. `slice` runs one
 * (default: a load sampled for lock waits). @returns a row per side.
 */
async function measureConcurrency(
  admin: string,
  sides: Side[],
  c: number,
  slice: (side: Side, seconds: number) => Promise<Slice> = (side, seconds) =>
    runLoad(side, c, seconds, { sampleWaits: true }),
): Promise<RunStats[]> {
  // What autovacuum would have done by now (it may be off on a shared server), then a
  // checkpoint, so both sides start each concurrency from the same kind of state.
  for (const side of sides) await withClient(side.dbUrl, (client) => client.query('VACUUM (ANALYZE)'));
  await withClient(admin, (client) => client.query('CHECKPOINT')).catch(() => undefined);
  // Interleaved slices (receiver, baseline, receiver, …): noise from other work on the machine
  // falls on both sides alike.
  const slices = new Map<Side, Slice[]>(sides.map((s) => [s, []]));
  for (let i = 0; i < SLICES; i++) {
    for (const side of sides) {
      const load = loadavg()[0];
      const r = await slice(side, DURATION / SLICES);
      (slices.get(side) as Slice[]).push(r);
      console.log(
        `  ${side.label} c=${c}${SLICES > 1 ? ` slice ${i + 1}/${SLICES}` : ''}: ` +
          `${(r.ok / r.seconds).toFixed(1)} batches/s, ${r.errors} errors, lock waits ${lockShare(r.waits)}, ` +
          `load average ${load.toFixed(1)} before` +
          (r.madeDuringRun ? ` (${r.madeDuringRun} batches signed during the run)` : ''),
      );
    }
  }
  return sides.map((side) => summarize(side.name, c, slices.get(side) as Slice[]));
}

/** Waits until the side's database has no transaction left from the run (at most 10 s). */
async function waitIdle(side: Side): Promise<void> {
  const dbName = new URL(side.dbUrl).pathname.slice(1);
  await withClient(side.dbUrl, async (c) => {
    for (let i = 0; i < 100; i++) {
      const { rows } = await c.query<{ n: string }>(
        `SELECT count(*) AS n FROM pg_stat_activity
         WHERE datname = $1 AND pid <> pg_backend_pid() AND state NOT IN ('idle')`,
        [dbName],
      );
      if (Number(rows[0].n) === 0) return;
      await sleep(100);
    }
  });
}

const children: Stoppable[] = [];
let embedded: EmbeddedPostgresServer | undefined;

async function cleanup(): Promise<void> {
  await Promise.all(children.map((s) => s.stop().catch(() => undefined)));
  await embedded?.stop().catch(() => undefined);
}

/** The PostgreSQL server to use: --database-url, the local service, or an embedded one. */
async function serverUrl(): Promise<string> {
  if (args['database-url']) {
    const url = args['database-url'] as string;
    if (!(await reachable(url))) throw new Error(`--database-url ${url} cannot be reached`);
    console.log(`PostgreSQL: ${new URL(url).host} (--database-url)`);
    return url;
  }
  const local = 'postgres://postgres@127.0.0.1:5432/postgres';
  if (!args.embedded && (await reachable(local))) {
    console.log('PostgreSQL: the local service at 127.0.0.1:5432 (--embedded to use an embedded one)');
    return local;
  }
  console.log(
    `${args.embedded ? '--embedded' : 'no PostgreSQL at 127.0.0.1:5432'}: ` +
      `starting an embedded one on port ${PORT_BASE + 90} (as npm start does)`,
  );
  embedded = new EmbeddedPostgresServer(
    {
      dataDir: '.data/bench-postgres',
      checkoutDir: ROOT,
      clustersDir: process.env.EMBEDDED_PG_CLUSTERS_DIR || undefined,
      port: PORT_BASE + 90,
      database: 'postgres',
    },
    { log: (m) => console.log(m), warn: (m) => console.warn(m) },
  );
  return embedded.start();
}

const mb = (n: number) => `${n.toFixed(0)} MB`;
const ms = (n: number) => n.toFixed(1);

function printTable(rows: RunStats[]): void {
  const head = [
    'side',
    'conc',
    'batches/s',
    'coupons/s',
    'p50 ms',
    'p95 ms',
    'p99 ms',
    'errors',
    'dup',
    'peak RSS',
    'CPU ms/batch node+PG',
    'WAL kB/batch',
    'lock waits',
  ];
  const lines = rows.map((r) => [
    r.side,
    String(r.connections),
    r.batchesPerSecond.toFixed(1),
    r.couponsPerSecond.toFixed(0),
    ms(r.p50),
    ms(r.p95),
    ms(r.p99),
    String(r.errors),
    `${r.ok ? Math.round((100 * r.duplicates) / r.ok) : 0}%`,
    mb(r.peakRssMb),
    Number.isFinite(r.serverCpuMs) ? `${r.serverCpuMs.toFixed(1)} + ${r.dbCpuMs.toFixed(1)}` : 'n/a',
    r.walKb.toFixed(1),
    lockShare(r.waits),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const fmt = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  console.log(fmt(head));
  for (const l of lines) console.log(fmt(l));
}

function perBatch(c: TableCounts): string {
  const b = Math.max(1, c.batches);
  return (
    `${c.batches} batches, ${c.snapshots} snapshots, ${c.operations} operations ` +
    `(${(c.operations / b).toFixed(1)} per batch), ${c.entries} ledger entries, ` +
    (c.outboxRows ? `${c.outboxRows} wallet outbox rows, ` : '') +
    `players net ${c.playersNet}, house net ${c.houseNet}`
  );
}

/** The balance check of a side: players + house entries = 0, and the receiver's house rows = entries. */
function describeBalances(side: SideName, t: BalanceTotals): string {
  const zero = /^-?0(\.0+)?$/.test(t.net);
  const houseRows =
    side === 'baseline'
      ? `house from its entries ${t.houseEntries} (house rows not maintained)`
      : `house accounts (${t.houseAccounts}) ${t.houseBalance}, their entries ${t.houseEntries}` +
        (t.houseBalance === t.houseEntries ? '' : ' (DIFFER)');
  return `players ${t.players}, ${houseRows}, players + house entries ${t.net}${zero ? '' : ' (NOT ZERO)'}`;
}

/** A set of databases the profiles run on: empty, or preloaded with 1 M coupons / 5 M bets. */
interface Dataset {
  /** `empty` or `large` (log file names). */
  key: string;
  name: string;
  large: boolean;
}

/** What a phase (one profile on one dataset) measured. */
interface PhaseResult {
  profile: ProfileSpec;
  dataset: Dataset;
  rows: RunStats[];
  inbox?: InboxStats;
  wallet?: WalletRunStats;
}

/**
 * One profile on one dataset: fresh receiver and baseline databases cloned from `template`, the
 * pool registered, then every concurrency in interleaved slices; for a profile with `inbox`, the
 * registered receiver database is cloned first and the inbox-mode run follows on it; likewise,
 * with `wallet`, both databases for the wallet run.
 */
async function runPhase(
  admin: string,
  template: string,
  profile: ProfileSpec,
  dataset: Dataset,
  phaseIndex: number,
): Promise<PhaseResult> {
  const t0 = performance.now();
  const dbPrefix = args['db-prefix'] as string;
  const dbs = {
    receiver: `${dbPrefix}_receiver`,
    baseline: `${dbPrefix}_baseline`,
    inbox: `${dbPrefix}_inbox`,
    walletReceiver: `${dbPrefix}_wallet_receiver`,
    walletBaseline: `${dbPrefix}_wallet_baseline`,
  };
  const withInbox = profile.inbox && !dataset.large;
  const withWallet = profile.wallet && !dataset.large;
  await dropDatabases(admin, Object.values(dbs));
  // Another build's receiver migrates its own, empty database at start-up.
  if (RECEIVER_BUILD) await createDatabase(admin, dbs.receiver);
  else await cloneDatabase(admin, template, dbs.receiver, dataset.large);
  await cloneDatabase(admin, template, dbs.baseline, dataset.large);

  const logKey = `${profile.key}-${dataset.key}`;
  const prefix = `b${phaseIndex}`;
  // (batch ids are `<prefix>-<7 digits>`)
  const receiver = new Side('receiver', PORT_BASE + 1, databaseUrl(admin, dbs.receiver), prefix, profile);
  const baseline = new Side('baseline', PORT_BASE + 2, databaseUrl(admin, dbs.baseline), prefix, profile);
  children.push(receiver, baseline);
  const coupons = poolCoupons(profile.pool);
  const players = poolPlayers(profile.pool);
  await seedBaseline(baseline.dbUrl, players, coupons);
  if (withWallet) await cloneDatabase(admin, dbs.baseline, dbs.walletBaseline, false);
  process.env.BASELINE_POOL_SIZE = args['baseline-pool-size'] as string;
  await Promise.all([receiver.start(`${logKey}-receiver`), baseline.start(`${logKey}-baseline`)]);
  const tReg = performance.now();
  await registerOnReceiver(`http://127.0.0.1:${receiver.port}`, OPS_KEY, players, coupons);
  const regSeconds = (performance.now() - tReg) / 1000;
  const [rt, bt] = await Promise.all([seededTotals(receiver.dbUrl), seededTotals(baseline.dbUrl)]);
  if (rt.coupons !== bt.coupons || rt.balance !== bt.balance) {
    throw new Error(`seeding differs: receiver ${JSON.stringify(rt)}, baseline ${JSON.stringify(bt)}`);
  }
  console.log(
    `${profile.title}, ${dataset.name}: registered ${coupons.length} coupons of ${players.length} players ` +
      `through the receiver's partner API in ${regSeconds.toFixed(1)} s (baseline: bulk SQL); ` +
      `player balances ${rt.balance} on both sides`,
  );
  if (withInbox || withWallet) {
    // The inbox and wallet runs get the same registered coupons: copies of the receiver's database as it is now.
    await receiver.stop();
    if (withInbox) await cloneDatabase(admin, dbs.receiver, dbs.inbox, false);
    if (withWallet) await cloneDatabase(admin, dbs.receiver, dbs.walletReceiver, false);
    await receiver.start(`${logKey}-receiver`, true);
  }
  const sides = [receiver, baseline];
  await warmUp(sides);
  const rows: RunStats[] = [];
  for (const c of CONCURRENCY) rows.push(...(await measureConcurrency(admin, sides, c)));
  // Both sides got the same sequence; up to the last batch both reached they wrote the same rows.
  const last = await Promise.all([lastBatchId(receiver.dbUrl, prefix), lastBatchId(baseline.dbUrl, prefix)]);
  const common = [last[0] ?? '', last[1] ?? ''].sort()[0];
  const [rc, bc, rb, bb] = await Promise.all([
    tableCounts(receiver.dbUrl, prefix, common),
    tableCounts(baseline.dbUrl, prefix, common),
    balanceTotals(receiver.dbUrl),
    balanceTotals(baseline.dbUrl),
  ]);
  await receiver.stop();
  await baseline.stop();
  children.splice(0);

  let inbox: InboxStats | undefined;
  if (withInbox) {
    const inline = rows.find((r) => r.side === 'receiver' && r.connections === INBOX_CONCURRENCY);
    inbox = await runInbox(databaseUrl(admin, dbs.inbox), prefix, profile, logKey, inline);
  }
  const wallet = withWallet
    ? await runWallet(
        admin,
        databaseUrl(admin, dbs.walletReceiver),
        databaseUrl(admin, dbs.walletBaseline),
        prefix,
        profile,
        logKey,
      )
    : undefined;
  if (!args['keep-databases']) await dropDatabases(admin, Object.values(dbs));

  console.log('');
  console.log(
    `${profile.title}, ${dataset.name}: ${DURATION} s per run, ${profile.pool.coupons} registered coupons ` +
      `(${profile.pool.players} players), 100-coupon batches, 1-8 events per coupon, ` +
      `${((performance.now() - t0) / 1000).toFixed(0)} s for the phase`,
  );
  printTable(rows);
  console.log(
    `wait events (pg_stat_activity of each side's database every ${SAMPLE_MS} ms, state active; ` +
      'shares of active-session samples):',
  );
  for (const r of rows) console.log(`  ${r.side} c=${r.connections}: ${describeWaits(r.waits)}`);
  console.log(`same work, rows of the batches both sides committed (up to ${common}):`);
  console.log(`  receiver: ${perBatch(rc)}`);
  console.log(`  baseline: ${perBatch(bc)}`);
  if (rc.operations !== bc.operations || rc.entries !== bc.entries || rc.playersNet !== bc.playersNet) {
    console.log(
      '  (operations or amounts differ: at high concurrency the two sides may apply two batches of one coupon in ' +
        'different orders, and from there on post different money; bench/RESULTS.md, "Same-work check")',
    );
  }
  const total = Object.values(rc.transitions).reduce((a, b) => a + b, 0) || 1;
  console.log(
    'transitions of those snapshots (receiver): ' +
      Object.entries(rc.transitions)
        .map(([t, n]) => `${t} ${((100 * n) / total).toFixed(0)}%`)
        .join(', '),
  );
  console.log(`balances (${CURRENCY}) after the phase:`);
  console.log(`  receiver: ${describeBalances('receiver', rb)}`);
  console.log(`  baseline: ${describeBalances('baseline', bb)}`);
  const peak = Math.max(...rows.filter((r) => r.side === 'receiver').map((r) => r.hwmMb));
  console.log(`receiver peak RSS (VmHWM over the phase): ${mb(peak)}`);
  if (inbox) printInbox(inbox);
  if (wallet) printWallet(wallet);
  console.log('');
  return { profile, dataset, rows, inbox, wallet };
}

/** Figures of the inbox-mode run (docs/benchmark.md, "Inbox mode"). */
interface InboxStats {
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
interface Backlog {
  pending: number;
  age: number;
}

/** Polls a queue's backlog (the inbox, the wallet outbox) every `intervalMs`; keeps its worst values. */
class BacklogWatch {
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
async function inboxBacklog(client: pg.Client): Promise<Backlog> {
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
async function watchedLoad(
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
    sampleWaits: true,
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
async function dbNow(client: pg.Client): Promise<string> {
  return (await client.query<{ t: string }>('SELECT clock_timestamp()::text AS t')).rows[0].t;
}

/**
 * The inbox-mode run: the receiver with `CALLBACK_MODE=inbox` (plus `--inbox-env`) on `dbUrl` (a
 * copy of the inline receiver's database right after registration), the same delivery sequence
 * (warm-up, then concurrency {@link INBOX_CONCURRENCY} for DURATION s), then waits for the inbox to
 * drain (at most `--drain-timeout`). Apply figures come from `callback_inbox.finished_at`.
 */
async function runInbox(
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
function inboxRatioLine(s: InboxStats): string {
  if (!s.inline) return `inbox apply/inline: n/a (no inline run at concurrency ${INBOX_CONCURRENCY})`;
  return (
    `inbox apply/inline: ${(s.applyWhileAccepting / s.inline.newBatchesPerSecond).toFixed(2)} ` +
    `(inbox applied ${s.applyWhileAccepting.toFixed(1)} batches/s while accepting, the inline receiver ` +
    `${s.inline.newBatchesPerSecond.toFixed(1)} new batches/s at c=${INBOX_CONCURRENCY}, ` +
    `${s.inline.batchesPerSecond.toFixed(1)} with redeliveries)`
  );
}

function printInbox(s: InboxStats): void {
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

/** The outbox figures of the wallet run's receiver at one concurrency, its slices summed. */
interface WalletLoadFigures {
  connections: number;
  /** Seconds the load lasted (database clock). */
  seconds: number;
  /** Outbox rows written while the load lasted. */
  written: number;
  /** Rows delivered to the stand-in wallet while the load lasted, and after it until none was pending. */
  deliveredDuring: number;
  deliveredAfter: number;
  /** Seconds from the end of each load to its last delivery: summed, and the longest. */
  drainSeconds: number;
  longestDrain: number;
  /** Most pending rows and the oldest pending row's age (s) at the `GET /wallet/status` polls during the load. */
  maxBacklog: number;
  maxAgeSeconds: number;
  /** Whether every slice's backlog drained within `--drain-timeout`. */
  drained: boolean;
}

/** The wallet outbox of one side at the end of the wallet run. */
interface OutboxTotals {
  rows: number;
  delivered: number;
  pending: number;
  parked: number;
  skipped: number;
  /** Financial operations of the pushed types: each must have its row. */
  operations: number;
  /** Delivery attempts recorded (the receiver's; more than `delivered` means retries). */
  attempts: number;
}

/** Figures of the wallet run (docs/benchmark.md, "Wallet run"). */
interface WalletRunStats {
  rows: RunStats[];
  loads: WalletLoadFigures[];
  receiver: OutboxTotals;
  baseline: OutboxTotals;
  /** The rows both sides wrote for the batches both committed (up to `common`). */
  common: string;
  receiverCounts: TableCounts;
  baselineCounts: TableCounts;
  wallet: WalletStats;
  /** Outbox operation keys the stand-in never applied, and transaction ids it applied that no row has. */
  missing: number;
  unexpected: number;
  /** What is wrong with exactly-once delivery; empty when every row was delivered once. */
  problems: string[];
}

async function outboxTotals(client: pg.Client): Promise<OutboxTotals> {
  const { rows } = await client.query<OutboxTotals>(
    `SELECT count(*)::int AS rows,
            count(*) FILTER (WHERE status = 'delivered')::int AS delivered,
            count(*) FILTER (WHERE status = 'pending')::int AS pending,
            count(*) FILTER (WHERE status = 'parked')::int AS parked,
            count(*) FILTER (WHERE status = 'skipped')::int AS skipped,
            (SELECT count(*)::int FROM financial_operations WHERE type = ANY($1::text[])) AS operations,
            (SELECT count(*)::int FROM wallet_delivery_attempts) AS attempts
     FROM wallet_outbox`,
    [WALLET_TYPES.split(',')],
  );
  return rows[0];
}

/** The receiver's outbox backlog as `GET /wallet/status` reports it (ops key, read scope). */
async function walletBacklog(side: Side): Promise<Backlog> {
  const res = await fetch(`http://127.0.0.1:${side.port}/wallet/status`, {
    headers: { authorization: `Bearer ${OPS_KEY}` },
    signal: AbortSignal.timeout(10_000),
  });
  const body = (await res.json()) as { pending: number; oldestPendingAgeSeconds: number; paused: boolean };
  if (!res.ok || body.paused) throw new Error(`GET /wallet/status: ${res.status} ${JSON.stringify(body)}`);
  return { pending: body.pending, age: body.oldestPendingAgeSeconds };
}

/**
 * The wallet run: the stand-in wallet (port base + 6), the receiver with the http connector to it
 * (port base + 4, `--wallet-env` added) on a copy of the registered receiver database, the baseline
 * inserting the same outbox rows without delivering them (port base + 5) on a copy of its seeded
 * one; the same delivery sequence (warm-up, then {@link WALLET_CONCURRENCY} in interleaved slices).
 * After each receiver slice the bench waits for its outbox to drain (at most `--drain-timeout`)
 * before the baseline's slice, so that the baseline never shares the machine with the receiver's
 * deliveries. Ends by checking that the stand-in applied every outbox row once.
 */
async function runWallet(
  admin: string,
  receiverDb: string,
  baselineDb: string,
  prefix: string,
  profile: ProfileSpec,
  logKey: string,
): Promise<WalletRunStats> {
  const stand = new StandInWallet(PORT_BASE + 6);
  children.push(stand);
  await stand.start(`${logKey}-stand-in-wallet`);
  const walletEnv = { WALLET_URL: stand.url, WALLET_SECRET, ...WALLET_ENV };
  const receiver = new Side(
    'receiver',
    PORT_BASE + 4,
    receiverDb,
    prefix,
    profile,
    walletEnv,
    'wallet receiver',
  );
  const baseline = new Side(
    'baseline',
    PORT_BASE + 5,
    baselineDb,
    prefix,
    profile,
    { BASELINE_WALLET_OUTBOX_TYPES: WALLET_TYPES },
    'wallet baseline',
  );
  children.push(receiver, baseline);
  const client = new pg.Client({ connectionString: receiverDb, application_name: MONITOR_APP });
  try {
    await Promise.all([
      receiver.start(`${logKey}-wallet-receiver`),
      baseline.start(`${logKey}-wallet-baseline`),
    ]);
    await client.connect();
    const watch = new BacklogWatch(() => walletBacklog(receiver), WALLET_POLL_MS);
    const sides = [receiver, baseline];
    await warmUp(sides);
    const tWarm = performance.now();
    const warmDrained = await watch.drain(DRAIN_TIMEOUT_MS);
    console.log(
      `warm-up outbox ${warmDrained ? 'drained' : 'NOT drained'} ${((performance.now() - tWarm) / 1000).toFixed(1)} s ` +
        'after the warm-up',
    );
    const rows: RunStats[] = [];
    const loads: WalletLoadFigures[] = [];
    for (const c of WALLET_CONCURRENCY) {
      const f: WalletLoadFigures = {
        connections: c,
        seconds: 0,
        written: 0,
        deliveredDuring: 0,
        deliveredAfter: 0,
        drainSeconds: 0,
        longestDrain: 0,
        maxBacklog: 0,
        maxAgeSeconds: 0,
        drained: true,
      };
      const slice = async (side: Side, seconds: number): Promise<Slice> => {
        if (side !== receiver) return runLoad(side, c, seconds, { sampleWaits: true });
        const {
          slice: r,
          start,
          end,
          drained,
          maxPending,
          maxAge,
        } = await watchedLoad(side, c, seconds, client, watch);
        f.maxBacklog = Math.max(f.maxBacklog, maxPending);
        f.maxAgeSeconds = Math.max(f.maxAgeSeconds, maxAge);
        f.drained &&= drained;
        const { rows: q } = await client.query<{
          seconds: number;
          written: number;
          during: number;
          after: number;
          drain: number;
        }>(
          `SELECT extract(epoch FROM $2::timestamptz - $1::timestamptz)::float8 AS seconds,
                  count(*) FILTER (WHERE created_at BETWEEN $1 AND $2)::int AS written,
                  count(*) FILTER (WHERE delivered_at BETWEEN $1 AND $2)::int AS during,
                  count(*) FILTER (WHERE delivered_at > $2)::int AS after,
                  coalesce(extract(epoch FROM max(delivered_at) - $2::timestamptz), 0)::float8 AS drain
           FROM wallet_outbox`,
          [start, end],
        );
        const drain = Math.max(0, q[0].drain);
        f.seconds += q[0].seconds;
        f.written += q[0].written;
        f.deliveredDuring += q[0].during;
        f.deliveredAfter += q[0].after;
        f.drainSeconds += drain;
        f.longestDrain = Math.max(f.longestDrain, drain);
        console.log(
          `    outbox: ${q[0].written} rows written, ${q[0].during} delivered during the load, ` +
            `backlog up to ${maxPending}, ${q[0].after} delivered in the ${drain.toFixed(1)} s after it` +
            (drained ? '' : ` (NOT drained within ${DRAIN_TIMEOUT_MS / 1000} s)`),
        );
        return r;
      };
      rows.push(...(await measureConcurrency(admin, sides, c, slice)));
      loads.push(f);
    }
    await watch.drain(DRAIN_TIMEOUT_MS);
    // Both sides got the same sequence; up to the last batch both reached they wrote the same rows.
    const last = await Promise.all([
      lastBatchId(receiver.dbUrl, prefix),
      lastBatchId(baseline.dbUrl, prefix),
    ]);
    const common = [last[0] ?? '', last[1] ?? ''].sort()[0];
    const [receiverCounts, baselineCounts, receiverTotals, baselineTotals, wallet, ids, keys] =
      await Promise.all([
        tableCounts(receiver.dbUrl, prefix, common),
        tableCounts(baseline.dbUrl, prefix, common),
        outboxTotals(client),
        withClient(baseline.dbUrl, outboxTotals),
        stand.stats(),
        stand.transactionIds(),
        client.query<{ key: string }>('SELECT operation_key AS key FROM wallet_outbox'),
      ]);
    const applied = new Set(ids);
    const keySet = new Set(keys.rows.map((r) => r.key));
    const missing = [...keySet].filter((k) => !applied.has(k)).length;
    const unexpected = ids.filter((id) => !keySet.has(id)).length;
    const t = receiverTotals;
    const problems = [
      t.pending ? `${t.pending} rows still pending` : '',
      t.parked ? `${t.parked} rows parked` : '',
      t.skipped ? `${t.skipped} rows skipped` : '',
      t.delivered !== t.rows ? `${t.delivered} of ${t.rows} rows delivered` : '',
      wallet.applied !== t.rows
        ? `the stand-in applied ${wallet.applied} transactions for ${t.rows} rows`
        : '',
      missing ? `${missing} rows' operation keys never applied` : '',
      unexpected ? `${unexpected} applied transaction ids of no outbox row` : '',
      ids.length !== applied.size ? `${ids.length - applied.size} transaction ids applied twice` : '',
      wallet.conflicts || wallet.refused || wallet.invalid || wallet.unauthorized
        ? `the stand-in answered ${wallet.conflicts} conflicts, ${wallet.refused} refusals, ${wallet.invalid} invalid, ${wallet.unauthorized} unauthorized`
        : '',
      t.rows !== t.operations
        ? `receiver: ${t.rows} rows for ${t.operations} operations of ${WALLET_TYPES}`
        : '',
      baselineTotals.rows !== baselineTotals.operations
        ? `baseline: ${baselineTotals.rows} rows for ${baselineTotals.operations} operations of ${WALLET_TYPES}`
        : '',
    ].filter(Boolean);
    return {
      rows,
      loads,
      receiver: receiverTotals,
      baseline: baselineTotals,
      common,
      receiverCounts,
      baselineCounts,
      wallet,
      missing,
      unexpected,
      problems,
    };
  } finally {
    await client.end().catch(() => undefined);
    for (const child of [receiver, baseline, stand]) {
      await child.stop();
      children.splice(children.indexOf(child), 1);
    }
  }
}

const perSecond = (n: number, seconds: number) => (seconds > 0 ? (n / seconds).toFixed(0) : 'n/a');

/** `wallet throughput ratio receiver/baseline: R (…)` at {@link RATIO_CONCURRENCY} (or the first one run). */
function walletRatioLine(w: WalletRunStats): string {
  const c = WALLET_CONCURRENCY.includes(RATIO_CONCURRENCY) ? RATIO_CONCURRENCY : WALLET_CONCURRENCY[0];
  const r = w.rows.find((x) => x.side === 'receiver' && x.connections === c) as RunStats;
  const b = w.rows.find((x) => x.side === 'baseline' && x.connections === c) as RunStats;
  const f = w.loads.find((x) => x.connections === c) as WalletLoadFigures;
  return (
    `wallet throughput ratio receiver/baseline: ${(r.batchesPerSecond / b.batchesPerSecond).toFixed(2)} ` +
    `(c=${c}, receiver ${r.batchesPerSecond.toFixed(1)} batches/s, baseline ${b.batchesPerSecond.toFixed(1)} ` +
    `batches/s, receiver p99 ${ms(r.p99)} ms; drain ${perSecond(f.deliveredDuring, f.seconds)} operations/s ` +
    `during the load, ${perSecond(f.deliveredAfter, f.drainSeconds)}/s after it; largest backlog ${f.maxBacklog}, ` +
    `oldest ${f.maxAgeSeconds.toFixed(1)} s; ${w.problems.length ? 'delivery check FAILED' : 'each row delivered once'})`
  );
}

function printWallet(w: WalletRunStats): void {
  const settings = Object.entries(WALLET_ENV)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
  console.log(
    `wallet run (WALLET_CONNECTOR=http to the stand-in wallet, ${settings || 'default wallet settings'}; ` +
      `outbox types ${WALLET_TYPES}; the baseline inserts the same outbox rows and delivers none):`,
  );
  printTable(w.rows);
  for (const r of w.rows)
    console.log(`  ${r.side} c=${r.connections} wait events: ${describeWaits(r.waits)}`);
  for (const f of w.loads) {
    console.log(
      `  outbox c=${f.connections}: ${f.written} rows written during ${f.seconds.toFixed(1)} s of load ` +
        `(${perSecond(f.written, f.seconds)}/s); delivered to the stand-in wallet ${f.deliveredDuring} during the ` +
        `load (${perSecond(f.deliveredDuring, f.seconds)} operations/s), ${f.deliveredAfter} after it in ` +
        `${f.drainSeconds.toFixed(1)} s (${perSecond(f.deliveredAfter, f.drainSeconds)} operations/s)`,
    );
    console.log(
      `    largest backlog ${f.maxBacklog} pending rows, oldest pending row's age at its worst ` +
        `${f.maxAgeSeconds.toFixed(1)} s (GET /wallet/status every ${WALLET_POLL_MS} ms during the load); ` +
        (f.drained
          ? `drained ${f.longestDrain.toFixed(1)} s after the load stopped` +
            (SLICES > 1 ? ` (the longest of ${SLICES} slices)` : '')
          : `NOT drained within ${DRAIN_TIMEOUT_MS / 1000} s`),
    );
  }
  const r = w.receiver;
  const b = w.baseline;
  console.log(
    `  outbox rows written: receiver ${r.rows} (its operations of those types: ${r.operations}), ` +
      `baseline ${b.rows} (${b.operations}); of the batches both committed (up to ${w.common}): ` +
      `receiver ${w.receiverCounts.outboxRows}, baseline ${w.baselineCounts.outboxRows}`,
  );
  console.log(
    `  receiver outbox at the end: ${r.delivered} delivered, ${r.pending} pending, ${r.parked} parked, ` +
      `${r.skipped} skipped; ${r.attempts} delivery attempts`,
  );
  const s = w.wallet;
  console.log(
    `  stand-in wallet applied ${s.applied} transactions (${s.repeats} repeats, ${s.conflicts} conflicts, ` +
      `${s.refused} refused, ${s.invalid} invalid, ${s.unauthorized} unauthorized); ` +
      (w.problems.length
        ? `DELIVERY CHECK FAILED: ${w.problems.join('; ')}`
        : `= the ${r.rows} outbox rows, each operation key applied once, none parked`),
  );
  console.log(`  ${walletRatioLine(w)}`);
}

async function main(): Promise<void> {
  const t0 = performance.now();
  const admin = await serverUrl();
  const dbPrefix = args['db-prefix'] as string;
  const template = `${dbPrefix}_template`;
  const datasets: Dataset[] = [{ key: 'empty', name: 'empty database', large: false }];
  if (args.large)
    datasets.push({ key: 'large', name: 'after preloading 1 M coupons / 5 M bets', large: true });
  const results: PhaseResult[] = [];
  for (const dataset of datasets) {
    await dropDatabases(admin, [template]);
    await createMigratedDatabase(admin, template);
    if (dataset.large) {
      console.log('preloading 1 M coupons / 5 M bets (with their snapshots and ledger) into the template …');
      const seconds = await preload(databaseUrl(admin, template));
      console.log(`preloaded in ${seconds.toFixed(0)} s`);
    }
    for (const profile of SELECTED)
      results.push(await runPhase(admin, template, profile, dataset, results.length));
    await dropDatabases(admin, [template]);
  }
  await cleanup();

  const rowsOf = (profile: ProfileSpec, large: boolean) =>
    results.find((r) => r.profile === profile && r.dataset.large === large)?.rows ?? [];
  const find = (rows: RunStats[], side: SideName, c: number) =>
    rows.find((r) => r.side === side && r.connections === c);
  if (args.large) {
    for (const profile of SELECTED) {
      const p99 = (large: boolean, c: number) => find(rowsOf(profile, large), 'receiver', c)?.p99 ?? NaN;
      console.log(
        `${profile.key === 'mixed' ? '' : `${profile.title} `}receiver p99 growth after preloading: ` +
          CONCURRENCY.map((c) => `c=${c} ${(p99(true, c) / p99(false, c)).toFixed(2)}×`).join(', '),
      );
    }
  }
  console.log(`total ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  for (const r of results) if (r.inbox) console.log(inboxRatioLine(r.inbox));
  for (const r of results) if (r.wallet) console.log(walletRatioLine(r.wallet));
  const walletProblems = results.flatMap((r) => r.wallet?.problems ?? []);
  if (walletProblems.length) {
    // Loud, and the exit status says so; the ratio lines still follow.
    console.error(`wallet delivery check FAILED: ${walletProblems.join('; ')}`);
    process.exitCode = 1;
  }
  // Today's mix last: its line is the one CI and the docs read.
  for (const profile of [...SELECTED].sort((a, b) => Number(a.key === 'mixed') - Number(b.key === 'mixed'))) {
    const rows = rowsOf(profile, false);
    const r = find(rows, 'receiver', RATIO_CONCURRENCY) as RunStats;
    const b = find(rows, 'baseline', RATIO_CONCURRENCY) as RunStats;
    const extra =
      profile.key === 'mixed'
        ? ''
        : CONCURRENCY.filter((c) => c !== RATIO_CONCURRENCY && c > 1)
            .map((c) => {
              const rc = find(rows, 'receiver', c) as RunStats;
              const bc = find(rows, 'baseline', c) as RunStats;
              return `; c=${c} ${(rc.batchesPerSecond / bc.batchesPerSecond).toFixed(2)}`;
            })
            .join('') + `; lock waits receiver ${lockShare(r.waits)}, baseline ${lockShare(b.waits)}`;
    console.log(
      `${profile.ratioLabel} receiver/baseline: ${(r.batchesPerSecond / b.batchesPerSecond).toFixed(2)} ` +
        `(receiver ${r.batchesPerSecond.toFixed(1)} batches/s, baseline ${b.batchesPerSecond.toFixed(1)} batches/s, ` +
        `receiver p99 ${ms(r.p99)} ms${extra})`,
    );
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`${signal}: stopping the servers`);
    void cleanup().finally(() => process.exit(130));
  });
}

main().catch(async (err: unknown) => {
  console.error(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  await cleanup();
  process.exit(1);
});
