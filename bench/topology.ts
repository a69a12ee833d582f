/**
 * `npm run bench:topology`: issue 39's figures (docs/benchmark.md, "Replicas behind a balancer").
 * One replica direct against three behind HAProxy (ops/haproxy.cfg, bench/balancer.ts) at the same
 * open-loop rate, 0.5× the direct replica's closed-loop capacity, money-heavy, the wallet on (the
 * stand-in of sim/wallet.ts): p99 of each, all answers 200, each replica's share of the wallet
 * outbox rows. Then per fault under that load (a replica SIGKILLed inside a settlement
 * transaction, after its COMMIT before the answer, after the wallet answered before the record;
 * a SIGTERM drain): answers by status, the longest answer, duplicate wallet requests, losses and
 * the takeover time. `npm run bench:topology -- --help` lists the options.
 */
import { ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { OPS_KEY, SECRET, WALLET_SECRET } from './credentials.js';
import { TcpProxy, Trigger } from '../sim/tcp-proxy.js';
import { RunningWallet, startWallet } from '../sim/wallet.js';
import { CurrencyTable } from '../src/platform/common/currency.js';
import { LedgerVerifier } from '../src/core/ledger/ledger-verifier.js';
import { pushedOperations, reconcileWallet } from '../src/outbound/wallet/wallet-reconciler.js';
import { Balancer, startBalancer } from './balancer.js';
import { CALLBACK_PATH, LoadGenerator, PoolSpec, poolCoupons, poolPlayers } from './load.js';
import { closedLoop, LoadResult, openLoop, receiverPool } from './open-loop-sender.js';
import { runBench, sleep, startChild, startScriptNodeFlags, stopChild } from './processes.js';
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
    duration: { type: 'string', default: '60' },
    'fault-seconds': { type: 'string', default: '20' },
    'capacity-rate': { type: 'string' },
    'capacity-seconds': { type: 'string', default: '30' },
    replicas: { type: 'string', default: '3' },
    faults: { type: 'string', default: 'settlement,commit,wallet-record,drain' },
    'money-coupons': { type: 'string', default: '4000' },
    'money-players': { type: 'string', default: '400' },
    'database-url': { type: 'string' },
    'db-prefix': { type: 'string', default: 'benchtopo' },
    'port-base': { type: 'string', default: '4500' },
    'pgbouncer-port': { type: 'string', default: '6450' },
    'no-pgbouncer': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

const HELP = `npm run bench:topology [-- options]: replicas behind HAProxy (docs/benchmark.md)
  --duration S          seconds of the direct and the balanced load (60)
  --fault-seconds S     seconds of the load of each fault (20; the fault at a quarter of it)
  --faults a,b          settlement (SIGKILL inside the transaction), commit (after COMMIT, before
                        the answer), wallet-record (after the wallet answered, before the record),
                        drain (SIGTERM) (all four; "" for none)
  --replicas N          replicas behind the balancer (3)
  --capacity-rate R     take R batches/s as the direct replica's capacity (its closed loop still warms it)
  --capacity-seconds S  length of that closed-loop measurement at c=8 (30)
  --money-coupons N     registered coupons (4000); --money-players N (400)
  --database-url URL    a PostgreSQL where databases can be created (default the local service)
  --db-prefix P         databases P_template, P_registered, P_direct, P_balanced (benchtopo)
  --port-base N         replicas N+1.., HAProxy N+10, its stats N+11, stand-in wallet N+12 (4500)
  --pgbouncer-port N    the balanced replicas' PgBouncer, transaction mode (6450)
  --no-pgbouncer        the balanced replicas straight to PostgreSQL`;

if (args.help) {
  console.log(HELP);
  process.exit(0);
}

const DURATION = Number(args.duration);
const FAULT_SECONDS = Number(args['fault-seconds']);
const REPLICAS = Number(args.replicas);
const PORT_BASE = Number(args['port-base']);
const PREFIX = args['db-prefix'] as string;
const WALLET_PORT = PORT_BASE + 12;
const ROOT = process.cwd();
const LOG_DIR = resolve(ROOT, '.data', 'bench');
const RECEIVER_ENTRY = fileURLToPath(new URL('../src/main.js', import.meta.url));
const NODE_FLAGS = startScriptNodeFlags(
  (JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts
    .start,
);
const POOL: PoolSpec = {
  coupons: Number(args['money-coupons']),
  players: Number(args['money-players']),
  seed: 20261207,
};
/** WALLET_TIMEOUT_MS of the replicas: a killed replica's wallet rows wait 2 × it + 10 s (the lease). */
const WALLET_TIMEOUT_MS = 2000;
const WALLET_LEASE_MS = 2 * WALLET_TIMEOUT_MS + 10_000;

/** The settlement transaction's coupon write, sent with its COMMIT (test/reliability/topology.spec.ts). */
const SETTLEMENT_WRITE = ['cp_apply', 'AS m(coupon_code text, position int'];
/** The wallet outbox's record of an attempt. */
const WALLET_RECORD = ['wo_steps', "WHEN 'delivered' THEN 'delivered'"];

const s1 = (ms: number) => (ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(0)} ms`);
const answersOf = (r: LoadResult) =>
  Object.entries(r.answers)
    .sort()
    .map(([k, n]) => `${n} × ${k}`)
    .join(', ');

/** One receiver process with its fault proxy to PostgreSQL and its counting proxy to the wallet. */
class Replica {
  child: ChildProcess | undefined;
  readonly sent: string[] = [];
  private constructor(
    readonly index: number,
    readonly port: number,
    readonly db: TcpProxy,
    readonly wallet: TcpProxy,
  ) {
    wallet.tap = (direction, chunk) => {
      if (direction !== 'toServer') return;
      for (const m of chunk.toString('latin1').matchAll(/"transactionId":"([^"]+)"/g)) this.sent.push(m[1]);
    };
  }

  /** `via`: the address its pooled connections go to (PgBouncer), else the server of `dbUrl`. */
  static async create(index: number, port: number, dbUrl: string, via?: string): Promise<Replica> {
    const target = new URL(via ?? dbUrl);
    return new Replica(
      index,
      port,
      await TcpProxy.start({ host: target.hostname, port: Number(target.port || 5432) }),
      await TcpProxy.start({ host: '127.0.0.1', port: WALLET_PORT }),
    );
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Starts it on `dbUrl`, its pooled connections through its proxy (to PgBouncer when `pooled`). */
  async start(dbUrl: string, pooled = false): Promise<void> {
    const url = new URL(dbUrl);
    url.hostname = '127.0.0.1';
    url.port = String(this.db.port);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: url.toString(),
      ...(pooled ? { DATABASE_POOLED: '1', DATABASE_DIRECT_URL: dbUrl } : {}),
      SPORTAPI_WEBHOOK_SECRETS: SECRET,
      OPS_API_KEYS: OPS_KEY,
      PORT: String(this.port),
      HOST: '127.0.0.1',
      WALLET_URL: `http://127.0.0.1:${this.wallet.port}`,
      WALLET_SECRET,
      WALLET_TIMEOUT_MS: String(WALLET_TIMEOUT_MS),
      TRUSTED_PROXIES: '127.0.0.1',
    };
    delete env.TEST_DATABASE_URL;
    this.child = await startChild(
      `replica ${this.index + 1}`,
      [...NODE_FLAGS, RECEIVER_ENTRY],
      env,
      `${this.url}/accounts/bench-probe`,
      {
        cwd: ROOT,
        logPath: resolve(LOG_DIR, `topology-r${this.index + 1}.log`),
        append: true,
        probeHeaders: { authorization: `Bearer ${OPS_KEY}` },
      },
    );
  }

  async stop(): Promise<void> {
    await stopChild(this.child);
  }

  async close(): Promise<void> {
    await this.stop();
    await this.db.close();
    await this.wallet.close();
  }
}

/** test/support/pgbouncer.mjs, the launcher the tests and .ci/run share (loaded from the checkout). */
type PgBouncerModule = typeof import('../test/support/pgbouncer.mjs');

let admin = '';
const registered = `${PREFIX}_registered`;
let wallet: RunningWallet | undefined;
const cleanups: (() => Promise<void>)[] = [];

/** The template, then the registered pool on `P_registered` (one replica, direct). */
async function prepare(): Promise<void> {
  admin = (args['database-url'] as string | undefined) ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  if (!(await reachable(admin))) throw new Error(`no PostgreSQL at ${admin} (--database-url)`);
  const template = `${PREFIX}_template`;
  await dropDatabases(admin, [template, registered]);
  await createMigratedDatabase(admin, template);
  await cloneDatabase(admin, template, registered, false);
  const url = databaseUrl(admin, registered);
  const r = await Replica.create(0, PORT_BASE + 1, url);
  try {
    await r.start(url);
    const t = performance.now();
    await registerOnReceiver(r.url, OPS_KEY, poolPlayers(POOL), poolCoupons(POOL));
    console.log(
      `registered ${POOL.coupons} coupons of ${POOL.players} players in ${((performance.now() - t) / 1000).toFixed(0)} s`,
    );
  } finally {
    await r.close();
  }
  await dropDatabases(admin, [template]);
}

/** A fresh copy of the registered database, `n` replicas on it (through PgBouncer when `pooled`), a monitor connection. */
async function topology(name: string, n: number, pooled = false) {
  const db = `${PREFIX}_${name}`;
  await dropDatabases(admin, [db]);
  await cloneDatabase(admin, registered, db, false);
  const url = databaseUrl(admin, db);
  // A fresh stand-in wallet: the same pool gives the same operation keys on every copy.
  await wallet?.close();
  wallet = await startWallet({ port: WALLET_PORT, secret: WALLET_SECRET, seed: 39, allowNegative: true });
  const via = pooled ? `postgres://127.0.0.1:${args['pgbouncer-port'] as string}/${db}` : undefined;
  const replicas = await Promise.all(
    Array.from({ length: n }, (_, i) => Replica.create(i, PORT_BASE + 1 + i, url, via)),
  );
  await Promise.all(replicas.map((r) => r.start(url, pooled)));
  const client = new pg.Client({ connectionString: url, application_name: 'bench-monitor' });
  await client.connect();
  const close = async () => {
    await client.end().catch(() => undefined);
    await Promise.all(replicas.map((r) => r.close()));
    await dropDatabases(admin, [db]);
  };
  cleanups.push(close);
  return { url, replicas, client, close };
}

async function pendingRows(client: pg.Client): Promise<number> {
  return (
    await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM wallet_outbox WHERE status = 'pending'`)
  ).rows[0].n;
}

/** Waits until the wallet outbox has no pending row; @returns whether it drained within `ms`. */
async function drain(client: pg.Client, ms = 120_000): Promise<boolean> {
  const until = Date.now() + ms;
  while ((await pendingRows(client)) > 0) {
    if (Date.now() > until) return false;
    await sleep(250);
  }
  return true;
}

/** What must hold after a load: losses (operations not in the wallet, or different), ledger verify. */
async function audit(
  client: pg.Client,
): Promise<{ differences: number; losses: number; violations: number }> {
  const currencies = CurrencyTable.of();
  const rec = reconcileWallet(
    await pushedOperations(client),
    (wallet as RunningWallet).transactions(),
    (a, c) => currencies.format(a.toFixed(), c),
  );
  const report = await new LedgerVerifier(client).verify();
  const twice = await client.query(
    `SELECT batch_id FROM delivery_attempts WHERE outcome = 'processed' GROUP BY batch_id HAVING count(*) > 1`,
  );
  return {
    differences: rec.differences.length + (twice.rowCount ?? 0),
    losses: rec.operations.delivered - rec.walletTransactions + rec.operations.pending,
    violations: report.violations.length,
  };
}

async function load(origin: string, gen: LoadGenerator, rate: number, seconds: number): Promise<LoadResult> {
  const deliveries = Array.from({ length: Math.round(rate * seconds) }, () => gen.next());
  const pool = receiverPool(origin);
  try {
    return await openLoop(pool, CALLBACK_PATH, deliveries, rate, seconds);
  } finally {
    await pool.close();
  }
}

/**
 * Closed-loop load at c=8 for --capacity-seconds on `origin`: the direct replica's capacity, and
 * the warm-up each topology gets before its measured load (JIT, pools and plans as in a running
 * receiver). @returns batches/s answered 200.
 */
async function closedLoad(gen: LoadGenerator, origin: string, what: string): Promise<number> {
  const pool = receiverPool(origin);
  const res = await closedLoop(pool, CALLBACK_PATH, () => gen.next(), 8, Number(args['capacity-seconds']));
  await pool.close();
  console.log(
    `${what} at c=8: ${res.okPerSecond.toFixed(1)} batches/s (p99 ${s1(res.p99)}; load average ${loadavg()[0].toFixed(1)})`,
  );
  return res.okPerSecond;
}

/** The direct replica's closed-loop capacity (or --capacity-rate, after the same warm-up). */
async function capacity(gen: LoadGenerator, origin: string): Promise<number> {
  const measured = await closedLoad(gen, origin, "direct replica's closed-loop capacity");
  return args['capacity-rate'] ? Number(args['capacity-rate']) : measured;
}

interface FaultFigures {
  fault: string;
  answers: Record<string, number>;
  longestMs: number;
  /** Wallet requests answered as repeats during the fault's load and drain. */
  duplicates: number;
  /** Wallet rows leased (in flight) at the kill. */
  inFlight: number;
  losses: number;
  differences: number;
  violations: number;
  /** From the kill until the rows leased then were all delivered (by another replica); or until the balancer took the replica out (drain). */
  takeoverMs: number | null;
}

const TRIGGERS: Record<string, Omit<Trigger, 'onFired'>> = {
  settlement: { marker: SETTLEMENT_WRITE, then: 'hold' },
  commit: { after: SETTLEMENT_WRITE, marker: 'COMMIT', answerMarker: 'COMMIT', then: 'answerLost' },
  'wallet-record': { marker: WALLET_RECORD, then: 'hold' },
};

async function fault(
  name: string,
  t: Awaited<ReturnType<typeof topology>>,
  balancer: Balancer,
  gen: LoadGenerator,
  rate: number,
): Promise<FaultFigures> {
  const victim = t.replicas[0];
  const repeats0 = (wallet as RunningWallet).stats().repeats;
  let killedAt = 0;
  let leased: Promise<string[]> = Promise.resolve([]);
  const onKill = () => {
    killedAt = performance.now();
    leased = t.client
      .query<{ id: string }>(
        `SELECT id::text FROM wallet_outbox WHERE status = 'pending' AND leased_until > now()`,
      )
      .then((r) => r.rows.map((x) => x.id));
  };
  const loading = load(balancer.url, gen, rate, FAULT_SECONDS);
  await sleep((FAULT_SECONDS * 1000) / 4);
  let takeoverMs: number | null = null;
  if (name === 'drain') {
    victim.child?.kill('SIGTERM');
    onKill();
    for (;;) {
      const r1 = (await balancer.servers())?.find((s) => s.name === 'r1');
      if (!r1 || r1.status.startsWith('DOWN')) break;
      await sleep(50);
    }
    takeoverMs = performance.now() - killedAt;
  } else {
    victim.db.arm({
      ...TRIGGERS[name],
      onFired: () => {
        victim.child?.kill('SIGKILL');
        onKill();
      },
    });
  }
  const res = await loading;
  if (victim.child && victim.child.exitCode === null && victim.child.signalCode === null)
    await new Promise((r) => victim.child?.once('exit', r));
  victim.db.release();
  const ids = await leased;
  if (name !== 'drain' && killedAt) {
    const until = Date.now() + WALLET_LEASE_MS + 60_000;
    for (;;) {
      const { rows } = await t.client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM wallet_outbox WHERE id = ANY($1::bigint[]) AND status = 'pending'`,
        [ids],
      );
      if (rows[0].n === 0 || Date.now() > until) break;
      await sleep(100);
    }
    takeoverMs = performance.now() - killedAt;
  }
  await victim.start(t.url, !args['no-pgbouncer']);
  await drain(t.client);
  const a = await audit(t.client);
  return {
    fault: name,
    answers: res.answers,
    longestMs: res.max,
    duplicates: (wallet as RunningWallet).stats().repeats - repeats0,
    inFlight: ids.length,
    ...a,
    takeoverMs: killedAt ? takeoverMs : null,
  };
}

async function main(): Promise<void> {
  const t0 = performance.now();
  mkdirSync(LOG_DIR, { recursive: true });
  await prepare();
  const gen = (prefix: string) =>
    new LoadGenerator({ pool: POOL, secret: SECRET, batchPrefix: prefix, profile: 'money' });

  // 1. One replica, direct: its capacity, then 0.5× it for DURATION.
  const direct = await topology('direct', 1);
  const dGen = gen('t-direct');
  const cap = await capacity(dGen, direct.replicas[0].url);
  const rate = cap * 0.5;
  await drain(direct.client);
  const d = await load(direct.replicas[0].url, dGen, rate, DURATION);
  await drain(direct.client);
  console.log(
    `1 replica direct at ${rate.toFixed(1)}/s for ${DURATION} s: ${answersOf(d)}; p50 ${s1(d.p50)}, p99 ${s1(d.p99)}, max ${s1(d.max)}`,
  );
  await direct.close();
  cleanups.splice(cleanups.indexOf(direct.close), 1);

  // 2. REPLICAS replicas behind HAProxy (through PgBouncer), the same rate.
  const pooled = !args['no-pgbouncer'];
  let stopBouncer = async () => undefined as void;
  if (pooled) {
    const { startPgBouncer } = (await import(resolve(ROOT, 'test/support/pgbouncer.mjs'))) as PgBouncerModule;
    const upstream = new URL(admin);
    upstream.pathname = '/';
    const bouncer = await startPgBouncer({
      port: Number(args['pgbouncer-port']),
      upstream: upstream.toString(),
      poolSize: 20,
    });
    stopBouncer = () => bouncer.stop();
    cleanups.push(stopBouncer);
  }
  const balanced = await topology('balanced', REPLICAS, pooled);
  const balancer = await startBalancer('haproxy', {
    port: PORT_BASE + 10,
    statsPort: PORT_BASE + 11,
    replicaPorts: balanced.replicas.map((r) => r.port),
    dir: resolve(LOG_DIR, 'topology-haproxy'),
  });
  cleanups.push(() => balancer.stop());
  for (;;) {
    if ((await balancer.servers())?.every((s) => s.status === 'UP')) break;
    await sleep(200);
  }
  const bGen = gen('t-balanced');
  // Warmed as the direct replica was by its capacity run: the same closed loop, then drained.
  await closedLoad(bGen, balancer.url, `warm-up of the ${REPLICAS} replicas`);
  await drain(balanced.client);
  const sent0 = balanced.replicas.map((r) => r.sent.length);
  const b = await load(balancer.url, bGen, rate, DURATION);
  await drain(balanced.client);
  const shares = balanced.replicas.map((r, i) => r.sent.length - sent0[i]);
  const total = shares.reduce((x, y) => x + y, 0);
  const bAudit = await audit(balanced.client);
  console.log(
    `${REPLICAS} replicas behind HAProxy${pooled ? ' + PgBouncer' : ''} at ${rate.toFixed(1)}/s for ${DURATION} s: ${answersOf(b)}; p50 ${s1(b.p50)}, p99 ${s1(b.p99)}, max ${s1(b.max)}` +
      ` → p99 ${(b.p99 / d.p99).toFixed(2)}× the direct replica's (target <= 1.5×)`,
  );
  console.log(
    `  wallet requests per replica: ${shares.map((n) => `${n} (${((100 * n) / Math.max(1, total)).toFixed(1)} %)`).join(', ')}` +
      `; audit: ${bAudit.differences} differences, ${bAudit.losses} losses, ${bAudit.violations} ledger violations`,
  );

  // 3. The faults, each under the same rate for FAULT_SECONDS, on replica r1.
  const faults: FaultFigures[] = [];
  for (const name of (args.faults as string)
    .split(',')
    .map((f) => f.trim())
    .filter(Boolean)) {
    if (name !== 'drain' && !TRIGGERS[name]) throw new Error(`--faults: unknown fault '${name}'`);
    const f = await fault(name, balanced, balancer, gen(`t-${name}`), rate);
    faults.push(f);
    console.log(
      `  fault ${name}: ${Object.entries(f.answers)
        .map(([k, n]) => `${n} × ${k}`)
        .join(', ')}; longest answer ${s1(f.longestMs)}; ${f.duplicates} duplicate wallet requests ` +
        `(${f.inFlight} rows in flight at the kill); ${f.losses} losses, ${f.differences} differences, ` +
        `${f.violations} ledger violations; takeover ${f.takeoverMs === null ? 'n/a (not fired)' : s1(f.takeoverMs)}`,
    );
  }
  const stats = await balancer.servers();
  console.log(
    `  HAProxy: ${stats?.map((s) => `${s.name} ${s.sessions} requests, ${s.retries} retries, ${s.redispatches} redispatches`).join('; ')}`,
  );
  await balancer.stop();
  await balanced.close();
  await stopBouncer();
  await dropDatabases(admin, [registered]);
  const file = resolve(LOG_DIR, `topology-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(
    file,
    JSON.stringify(
      { capacity: cap, rate, direct: d, balanced: b, shares, audit: bAudit, faults, haproxy: stats },
      (k, v: unknown) => (k === 'latencies' ? undefined : v),
      2,
    ),
  );
  console.log(`figures: ${file}; total ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  await wallet?.close();
}

async function cleanup(): Promise<void> {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await wallet?.close();
}

runBench(main, cleanup);
