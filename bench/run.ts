/**
 * Throughput benchmark: the receiver as users start it (`node dist/src/main.js`) against the raw
 * baseline (bench/baseline-server.ts), each on a fresh database of one PostgreSQL server, loaded by
 * autocannon with signed 100-coupon batches (bench/load.ts). `npm run bench -- --help` lists the
 * options; docs/benchmark.md explains the figures. The last line is always
 *   throughput ratio receiver/baseline: R (receiver X batches/s, baseline Y batches/s, receiver p99 Z ms)
 */
import { ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { EmbeddedPostgresServer } from '../src/database/embedded-postgres.js';
import { Delivery, LoadGenerator, PoolSpec, poolCoupons, poolPlayers } from './load.js';
import {
  cloneDatabase,
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
    concurrency: { type: 'string', default: '1,8,32' },
    'port-base': { type: 'string', default: '4100' },
    'pool-coupons': { type: 'string' },
    players: { type: 'string', default: '200' },
    'baseline-pool-size': { type: 'string', default: '16' },
    'keep-databases': { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    slices: { type: 'string' },
    embedded: { type: 'boolean', default: false },
    'db-prefix': { type: 'string', default: 'bench' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

/** The options, as `--help` prints them. */
const HELP = `npm run bench [-- options]: the receiver against a raw node:http + pg baseline (bench/RESULTS.md)
  --quick                 10 s per run (default 30 s), one slice
  --large                 then again on databases preloaded with 1 M coupons / 5 M bets
  --duration S            seconds per side and concurrency
  --concurrency 1,8,32    concurrencies to run (the ratio line uses 8 when present)
  --slices N              each run split into N interleaved slices (3; 1 with --quick)
  --database-url URL      a PostgreSQL where databases can be created (default the local service,
                          else an embedded server); --embedded forces the embedded one
  --db-prefix P           databases P_template, P_receiver, P_baseline (bench)
  --port-base N           receiver N+1, baseline N+2, embedded PostgreSQL N+90 (4100)
  --pool-coupons N        registered coupons (6400; 4000 with --quick); --players N (200)
  --baseline-pool-size N  the baseline's connections (16)
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
const CONCURRENCY = (args.concurrency as string).split(',').map(Number);
const PORT_BASE = Number(args['port-base']);
const RATIO_CONCURRENCY = CONCURRENCY.includes(8) ? 8 : CONCURRENCY[0];
const SECRET = 'bench-webhook-secret';
const OPS_KEY = 'bench-ops-key';
const CALLBACK_PATH = '/sportapi/callback';
const ROOT = process.cwd();
const RECEIVER_ENTRY = fileURLToPath(new URL('../src/main.js', import.meta.url));
const BASELINE_ENTRY = fileURLToPath(new URL('./baseline-server.js', import.meta.url));
const LOG_DIR = resolve(ROOT, '.data', 'bench');
// 40 blocks of 100 coupons or more: the 32 batches in flight at concurrency 32 never share one.
const POOL: PoolSpec = {
  coupons: Number(args['pool-coupons'] ?? (QUICK ? 4000 : 6400)),
  players: Number(args.players),
  seed: 20261130,
};

type SideName = 'receiver' | 'baseline';

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

/** A server under test: a child process of this one. */
class Side {
  child: ChildProcess | undefined;
  feed: Feed;
  bestRate = 0;

  constructor(
    readonly name: SideName,
    readonly port: number,
    readonly dbUrl: string,
    batchPrefix: string,
  ) {
    this.feed = new Feed(new LoadGenerator({ pool: POOL, secret: SECRET, batchPrefix }));
  }

  get pid(): number {
    return this.child?.pid as number;
  }

  async start(logName: string): Promise<void> {
    mkdirSync(LOG_DIR, { recursive: true });
    const logPath = resolve(LOG_DIR, `${logName}.log`);
    const log = openSync(logPath, 'w');
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: this.dbUrl,
      SPORTAPI_WEBHOOK_SECRETS: SECRET,
      OPS_API_KEYS: OPS_KEY,
      PORT: String(this.port),
      HOST: '127.0.0.1',
    };
    delete env.TEST_DATABASE_URL;
    const entry = this.name === 'receiver' ? RECEIVER_ENTRY : BASELINE_ENTRY;
    const flags = args.profile ? ['--cpu-prof', `--cpu-prof-dir=${resolve(LOG_DIR, 'profile')}`] : [];
    this.child = spawn(process.execPath, [...flags, entry], { cwd: ROOT, env, stdio: ['ignore', log, log] });
    closeSync(log);
    let exited: number | null | undefined;
    this.child.once('exit', (code) => (exited = code));
    const probe = this.name === 'receiver' ? '/accounts/bench-probe' : '/health';
    const until = Date.now() + 90_000;
    for (;;) {
      if (exited !== undefined) {
        const tail = readFileSync(logPath, 'utf8').split('\n').slice(-15).join('\n');
        throw new Error(`${this.name} exited with ${exited} during start-up (log ${logPath}):\n${tail}`);
      }
      try {
        const res = await fetch(`http://127.0.0.1:${this.port}${probe}`, {
          headers: { authorization: `Bearer ${OPS_KEY}` },
          signal: AbortSignal.timeout(1000),
        });
        await res.arrayBuffer();
        return;
      } catch {
        if (Date.now() > until)
          throw new Error(`${this.name} did not answer on port ${this.port} within 90 s`);
        await sleep(200);
      }
    }
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const done = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await done;
    clearTimeout(timer);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Resident set size now and its high-water mark, in MB, from /proc (Linux). */
function memoryOf(pid: number): { rss: number; hwm: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
    return { rss: kb('VmRSS') / 1024, hwm: kb('VmHWM') / 1024 };
  } catch {
    return undefined;
  }
}

/** CPU time (user + system) of a process so far, in ms, from /proc (Linux; 100 ticks per second). */
function cpuMsOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

/**
 * CPU time of the PostgreSQL backends serving a database, by pid (the server must run on this
 * machine and /proc be readable; otherwise empty).
 */
async function backendCpu(dbUrl: string): Promise<Map<number, number>> {
  const dbName = new URL(dbUrl).pathname.slice(1);
  const pids = await withClient(dbUrl, async (c) =>
    (
      await c.query<{ pid: number }>(
        'SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
        [dbName],
      )
    ).rows.map((r) => r.pid),
  );
  const cpu = new Map<number, number>();
  for (const pid of pids) {
    const ms = cpuMsOf(pid);
    if (ms !== undefined) cpu.set(pid, ms);
  }
  return cpu;
}

/** CPU ms the backends used between two {@link backendCpu} samples (new backends count whole). */
function backendCpuUsed(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, ms] of after) total += ms - (before.get(pid) ?? 0);
  return total;
}

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
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
  answered: number;
  madeDuringRun: number;
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
  couponsPerSecond: number;
  p50: number;
  p95: number;
  p99: number;
  peakRssMb: number;
  hwmMb: number;
  /** CPU ms per answered delivery of the server process and of its PostgreSQL backends. */
  serverCpuMs: number;
  dbCpuMs: number;
  madeDuringRun: number;
}

function summarize(side: SideName, connections: number, slices: Slice[]): RunStats {
  const sum = (f: (s: Slice) => number) => slices.reduce((a, s) => a + f(s), 0);
  const latencies = slices.flatMap((s) => s.latencies).sort((a, b) => a - b);
  const seconds = sum((s) => s.seconds);
  const ok = sum((s) => s.ok);
  const answered = Math.max(
    1,
    sum((s) => s.answered),
  );
  return {
    side,
    connections,
    seconds,
    ok,
    duplicates: sum((s) => s.duplicates),
    errors: sum((s) => s.errors),
    batchesPerSecond: ok / seconds,
    couponsPerSecond: (ok / seconds) * 100,
    p50: percentile(latencies, 50),
    p95: percentile(latencies, 95),
    p99: percentile(latencies, 99),
    peakRssMb: Math.max(...slices.map((s) => s.peakRssMb)),
    hwmMb: Math.max(...slices.map((s) => s.hwmMb)),
    serverCpuMs: sum((s) => s.serverCpuMs) / answered,
    dbCpuMs: sum((s) => s.dbCpuMs) / answered,
    madeDuringRun: sum((s) => s.madeDuringRun),
  };
}

/** One autocannon run against a side: `seconds` long, or `amount` deliveries. */
async function runLoad(side: Side, connections: number, seconds: number, amount?: number): Promise<Slice> {
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
  const result = await finished;
  clearInterval(sampler);
  sample();
  const hwm = memoryOf(side.pid)?.hwm ?? NaN;
  await waitIdle(side);
  const serverCpu = (cpuMsOf(side.pid) ?? NaN) - cpuBefore;
  const dbCpu = backendCpuUsed(dbBefore, await backendCpu(side.dbUrl));
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
    answered: ok + non200,
    madeDuringRun: side.feed.madeDuringRun,
  };
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

const children: Side[] = [];
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
    { dataDir: resolve(ROOT, '.data', 'bench-postgres'), port: PORT_BASE + 90, database: 'postgres' },
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
    `(${(c.operations / b).toFixed(1)} per batch), ${c.entries} ledger entries`
  );
}

interface Phase {
  /** `empty` or `large` (log file names). */
  key: string;
  name: string;
  large: boolean;
}

async function runPhase(admin: string, phase: Phase, phaseIndex: number): Promise<RunStats[]> {
  const t0 = performance.now();
  const dbPrefix = args['db-prefix'] as string;
  const template = `${dbPrefix}_template`;
  const dbs = { receiver: `${dbPrefix}_receiver`, baseline: `${dbPrefix}_baseline` };
  await dropDatabases(admin, [dbs.receiver, dbs.baseline, template]);
  await createMigratedDatabase(admin, template);
  if (phase.large) {
    console.log('preloading 1 M coupons / 5 M bets (with their snapshots and ledger) into the template …');
    const seconds = await preload(databaseUrl(admin, template));
    console.log(`preloaded in ${seconds.toFixed(0)} s`);
  }
  await cloneDatabase(admin, template, dbs.receiver, phase.large);
  await cloneDatabase(admin, template, dbs.baseline, phase.large);
  await dropDatabases(admin, [template]);

  const prefix = `b${phaseIndex}`;
  // (batch ids are `<prefix>-<7 digits>`)
  const receiver = new Side('receiver', PORT_BASE + 1, databaseUrl(admin, dbs.receiver), prefix);
  const baseline = new Side('baseline', PORT_BASE + 2, databaseUrl(admin, dbs.baseline), prefix);
  children.push(receiver, baseline);
  const coupons = poolCoupons(POOL);
  const players = poolPlayers(POOL);
  await seedBaseline(baseline.dbUrl, players, coupons);
  process.env.BASELINE_POOL_SIZE = args['baseline-pool-size'] as string;
  await Promise.all([receiver.start(`${phase.key}-receiver`), baseline.start(`${phase.key}-baseline`)]);
  const tReg = performance.now();
  await registerOnReceiver(`http://127.0.0.1:${receiver.port}`, OPS_KEY, players, coupons);
  const regSeconds = (performance.now() - tReg) / 1000;
  const [rt, bt] = await Promise.all([seededTotals(receiver.dbUrl), seededTotals(baseline.dbUrl)]);
  if (rt.coupons !== bt.coupons || rt.balance !== bt.balance) {
    throw new Error(`seeding differs: receiver ${JSON.stringify(rt)}, baseline ${JSON.stringify(bt)}`);
  }
  console.log(
    `registered ${coupons.length} coupons of ${players.length} players through the receiver's partner API ` +
      `in ${regSeconds.toFixed(1)} s (baseline: bulk SQL); player balances ${rt.balance} on both sides`,
  );
  for (const side of [receiver, baseline]) {
    const w = await runLoad(side, 8, 0, WARMUP_DELIVERIES);
    console.log(
      `warm-up ${side.name}: ${WARMUP_DELIVERIES} deliveries at concurrency 8, ` +
        `${(w.ok / w.seconds).toFixed(1)} batches/s`,
    );
  }
  const rows: RunStats[] = [];
  const sides = [receiver, baseline];
  for (const c of CONCURRENCY) {
    // What autovacuum would have done by now (it may be off on a shared server), then a
    // checkpoint, so both sides start each concurrency from the same kind of state.
    for (const side of sides) await withClient(side.dbUrl, (client) => client.query('VACUUM (ANALYZE)'));
    await withClient(admin, (client) => client.query('CHECKPOINT')).catch(() => undefined);
    // Interleaved slices (receiver, baseline, receiver, …): noise from other work on the machine
    // falls on both sides alike.
    const slices = new Map<SideName, Slice[]>(sides.map((s) => [s.name, []]));
    for (let i = 0; i < SLICES; i++) {
      for (const side of sides) {
        const load = loadavg()[0];
        const r = await runLoad(side, c, DURATION / SLICES);
        (slices.get(side.name) as Slice[]).push(r);
        console.log(
          `  ${side.name} c=${c}${SLICES > 1 ? ` slice ${i + 1}/${SLICES}` : ''}: ` +
            `${(r.ok / r.seconds).toFixed(1)} batches/s, ${r.errors} errors, ` +
            `load average ${load.toFixed(1)} before` +
            (r.madeDuringRun ? ` (${r.madeDuringRun} batches signed during the run)` : ''),
        );
      }
    }
    for (const side of sides) rows.push(summarize(side.name, c, slices.get(side.name) as Slice[]));
  }
  // Both sides got the same sequence; up to the last batch both reached they wrote the same rows.
  const last = await Promise.all([lastBatchId(receiver.dbUrl, prefix), lastBatchId(baseline.dbUrl, prefix)]);
  const common = [last[0] ?? '', last[1] ?? ''].sort()[0];
  const [rc, bc] = await Promise.all([
    tableCounts(receiver.dbUrl, prefix, common),
    tableCounts(baseline.dbUrl, prefix, common),
  ]);
  await receiver.stop();
  await baseline.stop();
  children.splice(0);
  if (!args['keep-databases']) await dropDatabases(admin, [dbs.receiver, dbs.baseline]);

  console.log('');
  console.log(
    `${phase.name}: ${DURATION} s per run, ${POOL.coupons} registered coupons (${POOL.players} players), ` +
      `100-coupon batches, 1-8 events per coupon, ${((performance.now() - t0) / 1000).toFixed(0)} s for the phase`,
  );
  printTable(rows);
  console.log(`same work, rows of the batches both sides committed (up to ${common}):`);
  console.log(`  receiver: ${perBatch(rc)}`);
  console.log(`  baseline: ${perBatch(bc)}`);
  if (rc.operations !== bc.operations || rc.entries !== bc.entries) {
    console.log(
      '  (operations differ: at high concurrency the two sides may apply two batches of one coupon in ' +
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
  const peak = Math.max(...rows.filter((r) => r.side === 'receiver').map((r) => r.hwmMb));
  console.log(`receiver peak RSS (VmHWM over the phase): ${mb(peak)}`);
  console.log('');
  return rows;
}

async function main(): Promise<void> {
  const t0 = performance.now();
  const admin = await serverUrl();
  const phases: Phase[] = [{ key: 'empty', name: 'empty database', large: false }];
  if (args.large) phases.push({ key: 'large', name: 'after preloading 1 M coupons / 5 M bets', large: true });
  const results: RunStats[][] = [];
  for (const [i, phase] of phases.entries()) results.push(await runPhase(admin, phase, i));
  await cleanup();

  if (results.length > 1) {
    const p99 = (rows: RunStats[], c: number) =>
      rows.find((r) => r.side === 'receiver' && r.connections === c)?.p99 ?? NaN;
    console.log(
      'receiver p99 growth after preloading: ' +
        CONCURRENCY.map((c) => `c=${c} ${(p99(results[1], c) / p99(results[0], c)).toFixed(2)}×`).join(', '),
    );
  }
  console.log(`total ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  const pick = (side: SideName) =>
    results[0].find((r) => r.side === side && r.connections === RATIO_CONCURRENCY) as RunStats;
  const r = pick('receiver');
  const b = pick('baseline');
  console.log(
    `throughput ratio receiver/baseline: ${(r.batchesPerSecond / b.batchesPerSecond).toFixed(2)} ` +
      `(receiver ${r.batchesPerSecond.toFixed(1)} batches/s, baseline ${b.batchesPerSecond.toFixed(1)} batches/s, ` +
      `receiver p99 ${ms(r.p99)} ms)`,
  );
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
