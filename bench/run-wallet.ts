/** The wallet phase of `npm run bench --wallet`: both sides with the wallet outbox on, delivering to the stand-in wallet. */
import pg from 'pg';
import type { WalletStats } from '../sim/wallet.js';
import { lastBatchId, TableCounts, tableCounts, withClient } from './setup.js';
import { Backlog, BacklogWatch, watchedLoad } from './run-inbox.js';
import { measureConcurrency, runLoad, RunStats, Slice, warmUp } from './run-load.js';
import {
  DRAIN_TIMEOUT_MS,
  MEASURE,
  OPS_KEY,
  PORT_BASE,
  ProfileSpec,
  RATIO_CONCURRENCY,
  SAMPLE_MS,
  SLICES,
  WALLET_CONCURRENCY,
  WALLET_ENV,
  WALLET_POLL_MS,
  WALLET_SECRET,
  WALLET_TYPES,
} from './run-options.js';
import { ms, printTable } from './run-report.js';
import { children, Side, StandInWallet } from './run-sides.js';
import { describeWaits, MONITOR_APP } from './run-waits.js';

/** The outbox figures of the wallet run's receiver at one concurrency, its slices summed. */
export interface WalletLoadFigures {
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
export interface OutboxTotals {
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
export interface WalletRunStats {
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

export async function outboxTotals(client: pg.Client): Promise<OutboxTotals> {
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
export async function walletBacklog(side: Side): Promise<Backlog> {
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
export async function runWallet(
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
        if (side !== receiver) return runLoad(side, c, seconds, { sampleMs: SAMPLE_MS });
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
      rows.push(...(await measureConcurrency(admin, sides, c, MEASURE, slice)));
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

export const perSecond = (n: number, seconds: number) => (seconds > 0 ? (n / seconds).toFixed(0) : 'n/a');

/** `wallet throughput ratio receiver/baseline: R (…)` at {@link RATIO_CONCURRENCY} (or the first one run). */
export function walletRatioLine(w: WalletRunStats): string {
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

export function printWallet(w: WalletRunStats): void {
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
