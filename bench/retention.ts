/**
 * `npm run bench:retention` (docs/retention.md, issue 32's figures), two parts on throw-away
 * databases of the PostgreSQL at `--database-url`:
 *
 * 1. Soak: `--months` months of back-dated traffic (`--batches` batches of 100 settled coupons a
 *    month: the raw body, 100 snapshots with their JSON, an attempt per delivery with 10 %
 *    redeliveries, 3 bets per coupon), month by month; at the end of each month the policy's
 *    report, then its apply, as the job runs them at that time. Prints per month the bytes each
 *    class holds, the policy's bytes per settled bet of a month (flat once the window is full,
 *    where without a policy they keep growing), the ledger's and coupons' bytes kept forever, and
 *    whether the report's rows equal what was removed (exit code 1 when not).
 * 2. Expiry under load: a receiver (`node dist/src/main.js`) is measured closed-loop at
 *    `--connections` (its capacity in this run), then takes callbacks open-loop at `--fraction` of
 *    that capacity (the sender's own schedule, docs/benchmark.md) for `--seconds`: without, while
 *    the policy detaches and drops a `delivery_attempts` partition of `--expiry-rows` rows (15
 *    months old, past the 400 days), and without again. Prints the callback's p50/p99 of each,
 *    the p99 of the sends scheduled while the expiry ran, the slowest answer per second, the
 *    ratios, the expiry's duration and the longest lock wait of a receiver session in
 *    `pg_stat_activity` (sampled every 20 ms).
 *
 * Run the built code: `npm run bench:retention -- --help`.
 */
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { loadRetentionConfig } from '../src/operations/retention/retention.config.js';
import { RetentionEngine } from '../src/operations/retention/retention-engine.js';
import { ensurePartitions, monthStart } from '../src/operations/retention/retention-partitions.js';
import type { SqlQueryable } from '../src/platform/database/sql-queryable.js';
import type { RetentionReport } from '../src/operations/retention/retention-report.js';
import { closedLoop, openLoop, receiverPool } from './open-loop-sender.js';
import type { LoadResult } from './open-loop-sender.js';
import type { Delivery } from './load.js';
import { percentile, sleep, startChild, startScriptNodeFlags, stopChild } from './processes.js';
import { createMigratedDatabase, databaseUrl, dropDatabases, withClient } from './setup.js';

const { values: args } = parseArgs({
  options: {
    months: { type: 'string', default: '6' },
    batches: { type: 'string', default: '100' },
    policy: { type: 'string', default: 'defaults' },
    'expiry-rows': { type: 'string', default: '200000' },
    connections: { type: 'string', default: '8' },
    fraction: { type: 'string', default: '0.5' },
    seconds: { type: 'string', default: '20' },
    'database-url': { type: 'string', default: 'postgres://postgres@127.0.0.1:5432/postgres' },
    port: { type: 'string', default: '4690' },
    part: { type: 'string', default: 'both' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

if (args.help) {
  process.stdout.write(`npm run bench:retention -- [options]
  --months N          months of back-dated traffic in the soak (default 6)
  --batches N         batches of 100 coupons a month (default 100; a bookmaker's month: 30000+)
  --policy P          defaults | floors (every class at its floor: 120 d batch ids, 30 d the rest)
  --expiry-rows N     rows of the partition expired under load (default 200000; the figure: 5000000)
  --connections N     callbacks in flight when measuring the capacity (default 8)
  --fraction F        the loads' rate as a fraction of that capacity (default 0.5)
  --seconds N         seconds of each load (default 20)
  --part P            both | soak | expiry (default both)
  --database-url URL  PostgreSQL server (databases are created and dropped; default the local service)
  --port N            the receiver's port (default 4690)
`);
  process.exit(0);
}

const DAY = 86_400_000;
const ADMIN = args['database-url'];
const SECRET = 'bench-retention-secret';

/** The policy of the soak. */
function policy() {
  return loadRetentionConfig(
    args.policy === 'floors'
      ? {
          RETENTION_BATCH_IDS: '120d',
          RETENTION_RAW_BODIES: '30d',
          RETENTION_SNAPSHOTS: '30d',
          RETENTION_DELIVERY_ATTEMPTS: '30d',
          RETENTION_OUTBOX: '30d',
        }
      : {},
  );
}

/** Inserts month `from`..`to`'s traffic: `batches` batches of 100 settled coupons, numbered from `first`. */
async function insertMonth(
  c: pg.Client,
  from: Date,
  to: Date,
  batches: number,
  first: number,
): Promise<void> {
  // float8: a month's seconds times the batch number overflow int4 from about 800 batches a month.
  const span = `(${(to.getTime() - from.getTime()) / 1000}::float8 * (b - ${first}) / ${batches}) * interval '1 second'`;
  const at = `'${from.toISOString()}'::timestamptz + ${span}`;
  const range = `generate_series(${first}, ${first + batches - 1}) b`;
  await c.query(`INSERT INTO coupons (coupon_code, status, real_win, generation_settled, settled_amount, last_batch_id, created_at, updated_at)
    SELECT 'S' || b || '-' || k, 4, 0, true, 0, 'sb-' || b, ${at}, ${at} FROM ${range}, generate_series(1, 100) k`);
  await c.query(`INSERT INTO callback_batches (batch_id, payload_hash, coupon_count, payload, received_at)
    SELECT 'sb-' || b, encode(sha256(p), 'hex'), 100, p, ${at}
    FROM ${range}, LATERAL (SELECT convert_to(json_build_object('batchId', 'sb-' || b, 'couponCount', 100, 'coupons',
      (SELECT json_agg(json_build_object('coupon_code', 'S' || b || '-' || k, 'status', 4, 'realWin', '0',
         'events', json_build_array(json_build_object('uuid', md5(b || '-' || k || 'a'), 'status', 4),
                                    json_build_object('uuid', md5(b || '-' || k || 'b'), 'status', 4),
                                    json_build_object('uuid', md5(b || '-' || k || 'c'), 'status', 4))))
       FROM generate_series(1, 100) k))::text, 'UTF8') AS p) body`);
  await c.query(`INSERT INTO coupon_snapshots (coupon_code, batch_id, status, real_win, applied, transition, generation, operations, payload, received_at)
    SELECT 'S' || b || '-' || k, 'sb-' || b, 4, 0, true, 'settled', 0, '[]',
           jsonb_build_object('coupon_code', 'S' || b || '-' || k, 'status', 4, 'realWin', '0',
             'events', jsonb_build_array(jsonb_build_object('uuid', md5(b || '-' || k || 'a'), 'status', 4),
                                         jsonb_build_object('uuid', md5(b || '-' || k || 'b'), 'status', 4),
                                         jsonb_build_object('uuid', md5(b || '-' || k || 'c'), 'status', 4))), ${at}
    FROM ${range}, generate_series(1, 100) k`);
  await c.query(`INSERT INTO bets (coupon_code, uuid, status, payload, last_batch_id, created_at, updated_at)
    SELECT 'S' || b || '-' || k, md5(b || '-' || k || e), 4, jsonb_build_object('uuid', md5(b || '-' || k || e), 'status', 4), 'sb-' || b, ${at}, ${at}
    FROM ${range}, generate_series(1, 100) k, unnest(ARRAY['a', 'b', 'c']) e`);
  await c.query(`INSERT INTO delivery_attempts (batch_id, request_id, received_at, outcome, http_status, coupon_count, duration_ms, payload_hash)
    SELECT 'sb-' || b, md5('r' || b || d), ${at} + d * interval '1 minute', CASE d WHEN 0 THEN 'processed' ELSE 'duplicate' END, 200, 100, 40,
           (SELECT payload_hash FROM callback_batches WHERE batch_id = 'sb-' || b)
    FROM ${range}, generate_series(0, CASE WHEN b % 10 = 0 THEN 1 ELSE 0 END) d`);
}

/** Bytes of the tables kept forever (coupons, bets, ledger). */
async function foreverBytes(c: pg.Client): Promise<number> {
  const { rows } = await c.query<{ bytes: string }>(
    `SELECT sum(pg_total_relation_size(t))::text AS bytes FROM unnest(ARRAY['coupons', 'bets', 'financial_operations', 'ledger_entries']::regclass[]) t`,
  );
  return Number(rows[0].bytes);
}

const MB = (n: number) => (n / 1e6).toFixed(1);

/** Part 1. @returns true when every report equalled what its apply removed. */
async function soak(): Promise<boolean> {
  const name = `bench_retention_soak_${process.pid}`;
  await createMigratedDatabase(ADMIN, name);
  const months = Number(args.months);
  const batches = Number(args.batches);
  const config = policy();
  let allEqual = true;
  try {
    await withClient(databaseUrl(ADMIN, name), async (c) => {
      await c.query('SET statement_timeout = 0');
      const now = new Date();
      const start = monthStart(now, -months);
      await ensurePartitions(c, now, 3, start);
      const engine = new RetentionEngine(c, config);
      let removedTotal = 0;
      process.stdout.write(
        `soak: ${months} months × ${batches} batches of 100 coupons (3 bets each), policy ${args.policy}\n` +
          'month    | bets/month | snapshots MB | bodies MB | attempts MB | batch ids MB | policy MB | policy B/bet-month | without policy B/bet-month | forever MB | report = removed\n',
      );
      for (let m = 0; m < months; m++) {
        const from = monthStart(start, m);
        const to = monthStart(start, m + 1);
        await insertMonth(c, from, to, batches, m * batches + 1);
        await c.query('ANALYZE');
        const at = new Date(Math.min(to.getTime() + DAY, now.getTime()));
        const report = await engine.report(at);
        const applied = await engine.apply(at);
        // What autovacuum does between two months of a real receiver: the space of emptied bodies
        // and deleted rows becomes free for the next month's rows (files do not shrink).
        await c.query('VACUUM');
        const held = await engine.report(at);
        const equal = sameRemoval(report, applied);
        allEqual &&= equal;
        const cls = (k: string) => held.classes.find((x) => x.dataClass === k)!;
        const policyBytes = held.classes.reduce((n, x) => n + x.totalBytes, 0);
        removedTotal += applied.classes.reduce((n, x) => n + x.removeBytes, 0);
        const bets = batches * 100 * 3;
        process.stdout.write(
          `${from.toISOString().slice(0, 7)}  | ${String(bets).padStart(10)} | ${MB(cls('snapshots').totalBytes).padStart(12)} | ` +
            `${MB(cls('raw_bodies').totalBytes).padStart(9)} | ${MB(cls('delivery_attempts').totalBytes).padStart(11)} | ` +
            `${MB(cls('batch_ids').totalBytes).padStart(12)} | ${MB(policyBytes).padStart(9)} | ${String(Math.round(policyBytes / bets)).padStart(18)} | ` +
            `${String(Math.round((policyBytes + removedTotal) / bets)).padStart(26)} | ${MB(await foreverBytes(c)).padStart(10)} | ${equal ? 'yes' : 'NO'}` +
            ` (removed ${applied.classes.map((x) => `${x.dataClass} ${x.removeRows}`).join(', ')})\n`,
        );
      }
    });
  } finally {
    await dropDatabases(ADMIN, [name]);
  }
  return allEqual;
}

/** Whether an apply removed exactly the rows (per item) its report listed. */
function sameRemoval(report: RetentionReport, applied: RetentionReport): boolean {
  const items = (r: RetentionReport) =>
    r.classes.flatMap((c) => c.remove.filter((i) => i.rows > 0).map((i) => `${i.target}:${i.rows}`)).sort();
  return JSON.stringify(items(report)) === JSON.stringify(items(applied));
}

/** Signed one-batch deliveries of 10 unregistered coupons each (LOSS, no money), each batch new. */
function deliveries(): () => Delivery {
  let n = 0;
  const run = process.pid;
  return () => {
    n++;
    const body = Buffer.from(
      JSON.stringify({
        batchId: `ld-${run}-${n}`,
        couponCount: 10,
        coupons: Array.from({ length: 10 }, (_, k) => ({
          coupon_code: `L${run % 1000}-${n}-${k}`,
          status: 4,
          realWin: '0',
          events: [{ uuid: `${n}-${k}`, status: 4 }],
        })),
      }),
    );
    return {
      body,
      signature: `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}`,
      batchId: `ld-${run}-${n}`,
      redelivery: false,
    };
  };
}

/** Part 2. */
async function expiryUnderLoad(): Promise<void> {
  const name = `bench_retention_expiry_${process.pid}`;
  await createMigratedDatabase(ADMIN, name);
  const url = databaseUrl(ADMIN, name);
  const rows = Number(args['expiry-rows']);
  const connections = Number(args.connections);
  const seconds = Number(args.seconds);
  let receiver;
  try {
    const old = monthStart(new Date(), -15);
    await withClient(url, async (c) => {
      await c.query('SET statement_timeout = 0');
      await ensurePartitions(c, new Date(), 3, old);
      const t0 = performance.now();
      await c.query(
        `INSERT INTO delivery_attempts (batch_id, request_id, received_at, outcome, http_status, coupon_count, duration_ms, payload_hash)
         SELECT 'old-' || g, md5(g::text), $1::timestamptz + (g % 2000000) * interval '1 second', 'processed', 200, 100, 40, md5(g::text) || md5(g::text)
         FROM generate_series(1, $2::int) g`,
        [old, rows],
      );
      // A partition 15 months old is long settled: hint bits set, frozen, checkpointed. Without
      // this the first load pays the insert's aftermath (vacuum, a checkpoint of ~2 GB), not the expiry.
      await c.query('VACUUM (FREEZE, ANALYZE) delivery_attempts');
      await c.query('CHECKPOINT').catch(() => undefined); // superuser or pg_checkpoint only
      process.stdout.write(
        `expiry: ${rows} rows in ${old.toISOString().slice(0, 7)} inserted in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`,
      );
    });
    const port = Number(args.port);
    const pkg = JSON.parse(readFileSync(resolve('package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    receiver = await startChild(
      'receiver',
      [...startScriptNodeFlags(pkg.scripts.start), 'dist/src/main.js'],
      {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        NODE_ENV: 'production',
        DATABASE_URL: url,
        PORT: String(port),
        HOST: '127.0.0.1',
        SPORTAPI_WEBHOOK_SECRETS: SECRET,
        OPS_API_KEYS: 'bench-retention-ops-key-0001',
        RETENTION_INTERVAL: 'off',
        LOG_LEVEL: 'warn',
      },
      `http://127.0.0.1:${port}/health/live`,
      { cwd: process.cwd(), logPath: resolve('.data', 'bench-retention-receiver.log') },
    );
    const pool = receiverPool(`http://127.0.0.1:${port}`);
    const next = deliveries();
    await closedLoop(pool, '/sportapi/callback', next, connections, Math.min(10, seconds)); // warm-up
    // The database began empty: the receiver's cached generic plans were made when coupons had no
    // rows, and nothing re-plans them until statistics change (this machine's service runs without
    // autovacuum). Left so, the first load ran 4-5x slower than the ones after the expiry, whose
    // DDL re-planned them (stop 37: sampled sessions busy in the coupon upsert and lookup). An
    // ANALYZE, as autovacuum would run, gives the three loads the same plans.
    await withClient(url, (c) => c.query('ANALYZE'));
    let maxLockWaitMs = 0;
    let maxOwnWaitMs = 0;
    let longestWait = '';
    let retentionPid = 0;
    let sampling = true;
    /** Samples the longest lock wait of the database's sessions every 20 ms until `sampling` is false. */
    const sample = () =>
      withClient(url, async (c) => {
        while (sampling) {
          // The receiver's sessions only: the retention session's own waits (a concurrent detach
          // waits for older snapshots to end) block no callback.
          const { rows: w } = await c.query<{ pid: number; ms: number; what: string }>(
            `SELECT a.pid, (extract(epoch FROM clock_timestamp() - a.state_change) * 1000)::float8 AS ms,
                    a.wait_event || ' in ' || left(regexp_replace(a.query, '\\s+', ' ', 'g'), 70) || ', behind ' ||
                    coalesce((SELECT string_agg(left(regexp_replace(b.query, '\\s+', ' ', 'g'), 70), ' | ')
                                FROM pg_stat_activity b WHERE b.pid = ANY (pg_blocking_pids(a.pid))), '?') AS what
               FROM pg_stat_activity a WHERE a.wait_event_type = 'Lock' AND a.datname = current_database()`,
          );
          for (const r of w) {
            if (r.pid === retentionPid) maxOwnWaitMs = Math.max(maxOwnWaitMs, r.ms);
            else if (r.ms > maxLockWaitMs) {
              maxLockWaitMs = r.ms;
              longestWait = r.what;
            }
          }
          await sleep(20);
        }
      });
    // The capacity in this run, then the loads at a fraction of it: at capacity, p99 measures the
    // queue any extra work adds, not the expiry's effect on a receiver with room to spare.
    const capacity = await closedLoop(
      pool,
      '/sportapi/callback',
      next,
      connections,
      Math.max(10, seconds / 3),
    );
    const rate = Math.max(1, Math.round(capacity.okPerSecond * Number(args.fraction)));
    const load = (onAnswer?: (at: number, ms: number) => void) =>
      openLoop(
        pool,
        '/sportapi/callback',
        Array.from({ length: Math.ceil(rate * seconds) + 1 }, next),
        rate,
        seconds,
        onAnswer,
      );
    let sampler = sample();
    const without = await load();
    sampling = false;
    await sampler;
    const lockWaitWithout = maxLockWaitMs;
    // The same load while the policy expires the old partition (after 2 s), lock waits sampled.
    maxLockWaitMs = 0;
    longestWait = '';
    sampling = true;
    sampler = sample();
    let expiryFrom = Number.POSITIVE_INFINITY;
    let expiryTo = Number.POSITIVE_INFINITY;
    const answers: [number, number][] = [];
    const slowStatements: string[] = [];
    let loadFrom = Number.NaN;
    const sinceLoad = (at: number) => ((at - loadFrom) / 1000).toFixed(1);
    const expiry = (async () => {
      await sleep(2000);
      return withClient(url, async (c) => {
        await c.query('SET statement_timeout = 0');
        retentionPid = (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
        expiryFrom = performance.now();
        // Each statement of the retention session over 100 ms (or failed), to see where its time goes.
        const timed: SqlQueryable = {
          query: async (text: string, values?: unknown[]) => {
            const t = performance.now();
            const end = (what: string) => {
              const ms = performance.now() - t;
              if (ms > 100 || what !== 'ok')
                slowStatements.push(
                  `${sinceLoad(t)} s +${ms.toFixed(0)} ms ${what}: ${text.replace(/\s+/g, ' ').slice(0, 90)}`,
                );
            };
            try {
              const r = await c.query(text, values);
              end('ok');
              return r;
            } catch (err) {
              end(`error ${(err as { code?: string }).code}`);
              throw err;
            }
          },
        } as SqlQueryable;
        const report = await new RetentionEngine(timed, loadRetentionConfig({})).apply();
        expiryTo = performance.now();
        const dropped = report.classes.find((x) => x.dataClass === 'delivery_attempts')!;
        return { ms: expiryTo - expiryFrom, rows: dropped.removeRows, bytes: dropped.removeBytes };
      });
    })();
    loadFrom = performance.now();
    const during = await load((at, ms) => answers.push([at, ms]));
    const done = await expiry;
    sampling = false;
    await sampler;
    // Without again, after: the load's own drift (caches, autovacuum) shows between the two.
    const after = await load();
    await pool.close();
    // The sends scheduled while the expiry ran (it may outlast the load: then up to its end).
    const inExpiry = answers
      .filter(([at]) => at >= expiryFrom && at < expiryTo)
      .map(([, ms]) => ms)
      .sort((a, b) => a - b);
    const line = (label: string, r: LoadResult) =>
      `${label}: ${r.sent} callbacks (${JSON.stringify(r.answers)}), ${r.okPerSecond.toFixed(1)}/s, p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms, max ${r.max.toFixed(1)} ms` +
      (r.lateSends ? `, ${r.lateSends} sends over 10 ms late (the bench was busy)` : '') +
      '\n';
    process.stdout.write(
      `capacity (closed loop, c=${connections}, ${capacity.seconds} s): ${capacity.okPerSecond.toFixed(1)}/s; loads open-loop at ${rate}/s (${args.fraction} of it), ${seconds} s each\n`,
    );
    process.stdout.write(line('without expiry', without));
    process.stdout.write(line('during expiry ', during));
    process.stdout.write(line('after, without', after));
    process.stdout.write(
      `while the expiry ran (${sinceLoad(expiryFrom)}-${sinceLoad(expiryTo)} s of the load): ${inExpiry.length} sends, p50 ${percentile(inExpiry, 50).toFixed(1)} ms, p99 ${percentile(inExpiry, 99).toFixed(1)} ms; ` +
        `slowest answer per second of the load: ${during.worstBySecond.map((ms) => ms.toFixed(0)).join(' ')} ms\n`,
    );
    if (longestWait)
      process.stdout.write(`longest lock wait of a receiver session during the expiry: ${longestWait}\n`);
    process.stdout.write(
      `statements of the retention session over 100 ms or failed:\n  ${slowStatements.join('\n  ')}\n`,
    );
    process.stdout.write(
      `expiry: ${done.rows} rows, ${MB(done.bytes)} MB detached concurrently and dropped in ${(done.ms / 1000).toFixed(2)} s; ` +
        `longest lock wait of a receiver session ${maxLockWaitMs.toFixed(0)} ms (without expiry ${lockWaitWithout.toFixed(0)} ms), ` +
        `of the retention session itself ${maxOwnWaitMs.toFixed(0)} ms; callback p99 during / without ${(during.p99 / without.p99).toFixed(2)}×, ` +
        `while the expiry ran / without ${(percentile(inExpiry, 99) / without.p99).toFixed(2)}×, during / after ${(during.p99 / after.p99).toFixed(2)}×\n`,
    );
  } finally {
    await stopChild(receiver);
    await dropDatabases(ADMIN, [name]);
  }
}

async function main(): Promise<number> {
  let ok = true;
  if (args.part !== 'expiry') ok = await soak();
  if (args.part !== 'soak') await expiryUnderLoad();
  if (!ok) process.stderr.write('a report differed from what its apply removed\n');
  return ok ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench:retention failed: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(2);
  },
);
