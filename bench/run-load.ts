/**
 * One load of `npm run bench` (and of `npm run bench:console`'s throughput rounds): autocannon
 * against a side in slices, warm-up, the figures of a concurrency. Takes its settings as
 * arguments, never from bench/run-options.ts, so that other benchmarks with their own options can
 * use it.
 */
import { loadavg } from 'node:os';
import autocannon from 'autocannon';
import { CALLBACK_PATH, Feed } from './load.js';
import { backendCpu, backendCpuUsed, cpuMsOf, memoryOf, percentile, sleep } from './processes.js';
import { withClient } from './setup.js';
import type { SideName } from './run-sides.js';
import { addWaits, emptyWaits, lockShare, WaitSampler, WaitStats, walPosition } from './run-waits.js';

/** Deliveries of the warm-up of each side (concurrency 8), not measured. */
export const WARMUP_DELIVERIES = 80;

/**
 * A server under load (a `Side` of bench/run-sides.ts, or bench:console's receiver): its port,
 * process and database, the deliveries it is sent, and its names in the per-run lines.
 */
export interface LoadSide {
  readonly name: SideName;
  readonly label: string;
  readonly port: number;
  readonly pid: number;
  readonly dbUrl: string;
  readonly feed: Feed;
  /** Highest batches/s seen so far (sizes the next run's {@link Feed.fill}). */
  bestRate: number;
}

/** How {@link measureConcurrency} runs: `seconds` per side in all, in `slices` interleaved slices. */
export interface MeasureOptions {
  seconds: number;
  slices: number;
  /** pg_stat_activity sampling interval for the wait figures, ms (0: none). */
  sampleMs: number;
}

/** What one autocannon run of one side measured. */
export interface Slice {
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
export interface RunStats {
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

export function summarize(side: SideName, connections: number, slices: Slice[]): RunStats {
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
export interface LoadOptions {
  amount?: number;
  /** Sample the side's database sessions for lock waits every `sampleMs` ms (measured runs; 0 or absent: not). */
  sampleMs?: number;
  /** Wait for the side's database to go idle after the load (not in inbox mode). */
  waitIdle?: boolean;
  /** Called right before the load starts and right after it ends. */
  onStart?: () => Promise<void>;
  onFinish?: () => Promise<void>;
}

/** One autocannon run against a side: `seconds` long, or `amount` deliveries. */
export async function runLoad(
  side: LoadSide,
  connections: number,
  seconds: number,
  opts: LoadOptions = {},
): Promise<Slice> {
  const { amount, sampleMs = 0, waitIdle: idle = true } = opts;
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
  const waitSampler = sampleMs > 0 ? new WaitSampler(side.dbUrl, sampleMs).start() : undefined;
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
export async function warmUp(sides: LoadSide[]): Promise<void> {
  for (const side of sides) {
    const w = await runLoad(side, 8, 0, { amount: WARMUP_DELIVERIES });
    console.log(
      `warm-up ${side.label}: ${WARMUP_DELIVERIES} deliveries at concurrency 8, ` +
        `${(w.ok / w.seconds).toFixed(1)} batches/s`,
    );
  }
}

/**
 * The measured runs of `sides` at concurrency `c`: VACUUM (ANALYZE) of each of their databases and
 * a CHECKPOINT, then `run.slices` interleaved slices of `run.seconds / run.slices` s each, a line
 * per slice. `slice` runs one (default: a load sampled for lock waits). @returns a row per side.
 */
export async function measureConcurrency<S extends LoadSide>(
  admin: string,
  sides: S[],
  c: number,
  run: MeasureOptions,
  slice: (side: S, seconds: number) => Promise<Slice> = (side, seconds) =>
    runLoad(side, c, seconds, { sampleMs: run.sampleMs }),
): Promise<RunStats[]> {
  // What autovacuum would have done by now (it may be off on a shared server), then a
  // checkpoint, so both sides start each concurrency from the same kind of state.
  for (const dbUrl of new Set(sides.map((s) => s.dbUrl)))
    await withClient(dbUrl, (client) => client.query('VACUUM (ANALYZE)'));
  await withClient(admin, (client) => client.query('CHECKPOINT')).catch(() => undefined);
  // Interleaved slices (receiver, baseline, receiver, …): noise from other work on the machine
  // falls on both sides alike.
  const slices = new Map<S, Slice[]>(sides.map((s) => [s, []]));
  const n = run.slices;
  for (let i = 0; i < n; i++) {
    for (const side of sides) {
      const load = loadavg()[0];
      const r = await slice(side, run.seconds / n);
      (slices.get(side) as Slice[]).push(r);
      console.log(
        `  ${side.label} c=${c}${n > 1 ? ` slice ${i + 1}/${n}` : ''}: ` +
          `${(r.ok / r.seconds).toFixed(1)} batches/s, ${r.errors} errors, lock waits ${lockShare(r.waits)}, ` +
          `load average ${load.toFixed(1)} before` +
          (r.madeDuringRun ? ` (${r.madeDuringRun} batches signed during the run)` : ''),
      );
    }
  }
  return sides.map((side) => summarize(side.name, c, slices.get(side) as Slice[]));
}

/** Waits until the side's database has no transaction left from the run (at most 10 s). */
export async function waitIdle(side: LoadSide): Promise<void> {
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
