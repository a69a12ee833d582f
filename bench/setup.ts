/**
 * Databases of the throughput benchmark (bench/run.ts): a template migrated with the receiver's
 * own migrations (optionally preloaded with 1 M coupons / 5 M bets), cloned into one database per
 * side, the pool seeded for the baseline in bulk SQL and registered on the receiver through its
 * partner API, exactly as an operator would.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { buildDataSourceOptions } from '../src/platform/database/data-source-options.js';
import { runMigrationsLocked } from '../src/platform/database/migrator.js';
import { ensurePartitions } from '../src/operations/retention/retention-partitions.js';
import { PoolCoupon } from './load.js';

/** Deposit of every pool player (enough for every stake of the pool). */
export const DEPOSIT = '1000000.00';
export const CURRENCY = 'EUR';

/** Connection URL of database `name` on the server of `adminUrl`. */
export function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Runs `work` on one connection to `url`, then closes it. */
export async function withClient<T>(url: string, work: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, application_name: 'bench-setup' });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** True when a PostgreSQL server answers at `url` within two seconds. */
export async function reachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Drops the databases (terminating their sessions). */
export async function dropDatabases(adminUrl: string, names: string[]): Promise<void> {
  await withClient(adminUrl, async (c) => {
    const version = Number((await c.query('SHOW server_version_num')).rows[0].server_version_num);
    for (const name of names) {
      const id = c.escapeIdentifier(name);
      if (version >= 130000) await c.query(`DROP DATABASE IF EXISTS ${id} WITH (FORCE)`);
      else {
        await c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]);
        await c.query(`DROP DATABASE IF EXISTS ${id}`);
      }
    }
  });
}

/** Creates `name` as a copy of `template` (file copy for big templates: no 2 GB of WAL). */
export async function cloneDatabase(adminUrl: string, template: string, name: string, big: boolean) {
  await withClient(adminUrl, async (c) => {
    const version = Number((await c.query('SHOW server_version_num')).rows[0].server_version_num);
    const strategy = big && version >= 150000 ? ' STRATEGY = FILE_COPY' : '';
    await c.query(
      `CREATE DATABASE ${c.escapeIdentifier(name)} TEMPLATE ${c.escapeIdentifier(template)}${strategy}`,
    );
  });
}

/** Creates the empty database `name`. */
export async function createDatabase(adminUrl: string, name: string): Promise<void> {
  await withClient(adminUrl, (c) => c.query(`CREATE DATABASE ${c.escapeIdentifier(name)}`));
}

/** Creates `name` and applies the receiver's migrations to it (the same code as `npm start`). */
export async function createMigratedDatabase(adminUrl: string, name: string): Promise<void> {
  await createDatabase(adminUrl, name);
  const dataSource = await new DataSource(buildDataSourceOptions(databaseUrl(adminUrl, name))).initialize();
  try {
    await runMigrationsLocked(dataSource);
  } finally {
    await dataSource.destroy();
  }
}

/**
 * Preloads a migrated database with a bookmaker's history: 10 000 players, 1 M registered coupons
 * (40 % won, 50 % lost, 10 % still pending), 5 M bets, one snapshot per coupon in 10 000 old
 * batches, the stake debits and win credits with their ledger entries, and consistent balances.
 * Bulk `INSERT … SELECT generate_series`, foreign-key triggers off when the role may (superuser),
 * then VACUUM ANALYZE so the clones start with the visibility map and statistics set.
 * @returns seconds taken.
 */
export async function preload(url: string, coupons = 1_000_000, betsPerCoupon = 5): Promise<number> {
  const t0 = performance.now();
  const players = 10_000;
  const batches = Math.ceil(coupons / 100);
  await withClient(url, async (c) => {
    await c.query("SET synchronous_commit = off; SET maintenance_work_mem = '512MB'; SET work_mem = '256MB'");
    await c.query('SET statement_timeout = 0; SET lock_timeout = 0');
    await c.query("SET session_replication_role = 'replica'").catch(() => undefined);
    // Rows are back-dated up to 31 days: the time partitions of those months (issue 32) first.
    await ensurePartitions(c, new Date(), 3, new Date(Date.now() - 31 * 86_400_000));
    const code = (i: string) => `lpad(${i}::text, 12, '0')`;
    const player = (i: string) => `'pre-p' || lpad((${i} % ${players})::text, 5, '0')`;
    const batch = (i: string) => `'pre-' || lpad((${i} / 100)::text, 7, '0')`;
    // status by i % 10: 0-3 won, 4-8 lost, 9 pending; a win pays 2.5 × the stake.
    const status = (i: string) => `(CASE WHEN ${i} % 10 < 4 THEN 2 WHEN ${i} % 10 < 9 THEN 4 ELSE 1 END)`;
    const stake = (i: string) => `((${i} % 20) + 1)::numeric`;
    const win = (i: string) =>
      `(CASE WHEN ${i} % 10 < 4 THEN ${stake(i)} * 2.5 WHEN ${i} % 10 < 9 THEN 0 ELSE NULL END)`;
    await c.query(`
      INSERT INTO accounts (id, kind, currency)
      SELECT 'pre-p' || lpad(i::text, 5, '0'), 'player', '${CURRENCY}' FROM generate_series(0, ${players - 1}) i
      UNION ALL SELECT 'house:${CURRENCY}', 'house', '${CURRENCY}'
      ON CONFLICT (id) DO NOTHING`);
    await c.query(`
      INSERT INTO callback_batches (batch_id, payload_hash, coupon_count, payload, received_at)
      SELECT 'pre-' || lpad(i::text, 7, '0'), md5(i::text) || md5('b' || i), 100, convert_to('{}', 'UTF8'),
             now() - interval '30 days'
      FROM generate_series(0, ${batches - 1}) i`);
    await c.query(`
      INSERT INTO coupons (coupon_code, account_id, stake, currency, registration_hash, registered_at, status,
        real_win, settlement_generation, generation_settled, settled_amount, last_batch_id, created_at, updated_at)
      SELECT ${code('i')}, ${player('i')}, ${stake('i')}, '${CURRENCY}', md5(i::text) || md5('c' || i),
             now() - interval '30 days', ${status('i')}, ${win('i')}, 0, ${win('i')} IS NOT NULL, ${win('i')},
             ${batch('i')}, now() - interval '30 days',
             -- Updated batch by batch, as a settled coupon is: a batch's 100 share their time, no more.
             now() - interval '29 days' + (i / 100) * interval '1 second'
      FROM generate_series(0, ${coupons - 1}) i`);
    await c.query(`
      INSERT INTO bets (coupon_code, uuid, status, payload, last_batch_id, created_at, updated_at)
      SELECT code, u, s, jsonb_build_object('uuid', u, 'status', s), b, now() - interval '30 days', now() - interval '29 days'
      FROM (SELECT ${code('i')} AS code, md5(i || ':' || j)::uuid::text AS u,
                   CASE WHEN i % 10 = 9 THEN 0 ELSE 1 + (i + j) % 2 END AS s, ${batch('i')} AS b
            FROM generate_series(0, ${coupons - 1}) i, generate_series(0, ${betsPerCoupon - 1}) j) x`);
    await c.query(`
      INSERT INTO coupon_snapshots (coupon_code, batch_id, status, real_win, applied, transition, generation, operations, payload, received_at)
      SELECT ${code('i')}, ${batch('i')}, ${status('i')}, ${win('i')}, true,
             CASE WHEN ${status('i')} = 1 THEN 'pending_applied' ELSE 'settled' END, 0,
             CASE WHEN i % 10 < 4 THEN jsonb_build_array(jsonb_build_object('type', 'final_credit', 'generation', 0,
               'amount', (${win('i')})::text)) ELSE '[]'::jsonb END,
             jsonb_build_object('coupon_code', ${code('i')}, 'status', ${status('i')}), now() - interval '29 days'
      FROM generate_series(0, ${coupons - 1}) i`);
    await c.query(`
      INSERT INTO financial_operations (operation_key, type, coupon_code, generation, account_id, amount, currency, batch_id, created_at)
      SELECT 'adjustment:pre-dep-' || i, 'deposit', NULL, NULL, 'pre-p' || lpad(i::text, 5, '0'), 100000, '${CURRENCY}', NULL,
             now() - interval '31 days'
      FROM generate_series(0, ${players - 1}) i
      UNION ALL
      SELECT ${code('i')} || ':0:stake_debit', 'stake_debit', ${code('i')}, 0, ${player('i')}, ${stake('i')},
             '${CURRENCY}', NULL, now() - interval '30 days'
      FROM generate_series(0, ${coupons - 1}) i
      UNION ALL
      SELECT ${code('i')} || ':0:final_credit', 'final_credit', ${code('i')}, 0, ${player('i')}, ${win('i')},
             '${CURRENCY}', ${batch('i')}, now() - interval '29 days'
      FROM generate_series(0, ${coupons - 1}) i WHERE i % 10 < 4`);
    await c.query(`
      INSERT INTO ledger_entries (operation_id, account_id, amount, created_at)
      SELECT id, account_id, CASE WHEN type IN ('deposit', 'final_credit') THEN amount ELSE -amount END, created_at
      FROM financial_operations
      UNION ALL
      SELECT id, 'house:' || currency, CASE WHEN type IN ('deposit', 'final_credit') THEN -amount ELSE amount END, created_at
      FROM financial_operations`);
    await c.query(`
      UPDATE accounts a SET balance = x.total
      FROM (SELECT account_id, sum(amount) AS total FROM ledger_entries GROUP BY account_id) x
      WHERE a.id = x.account_id`);
    await c.query(`
      INSERT INTO delivery_attempts (batch_id, request_id, received_at, outcome, http_status, coupon_count, duration_ms, payload_hash)
      SELECT batch_id, md5(batch_id), received_at, 'processed', 200, 100, 12, payload_hash FROM callback_batches`);
    await c.query('RESET session_replication_role').catch(() => undefined);
    await c.query('VACUUM ANALYZE');
  });
  return (performance.now() - t0) / 1000;
}

/** SHA-256 of a registration, as the receiver computes it (coupons.service). */
function registrationHash(c: PoolCoupon): string {
  return createHash('sha256')
    .update(JSON.stringify([c.code, c.accountId, c.stake, CURRENCY]))
    .digest('hex');
}

/**
 * The baseline's equivalent of the partner API calls: the players with their deposits (operation,
 * adjustment, two entries), the coupons registered with their stake debits, the players' balances
 * from their entries (the baseline derives the house balance from its entries: its row is left as is).
 */
export async function seedBaseline(url: string, players: string[], coupons: PoolCoupon[]): Promise<void> {
  await withClient(url, async (c) => {
    await c.query('BEGIN');
    await c.query(
      `INSERT INTO accounts (id, kind, currency)
       SELECT p, 'player', $2 FROM unnest($1::text[]) p UNION ALL SELECT 'house:' || $2, 'house', $2
       ON CONFLICT (id) DO NOTHING`,
      [players, CURRENCY],
    );
    await c.query(
      `WITH ops AS (
         INSERT INTO financial_operations (operation_key, type, account_id, amount, currency)
         SELECT 'adjustment:bench-dep-' || p, 'deposit', p, $2::numeric, $3 FROM unnest($1::text[]) p
         RETURNING id, account_id, amount, operation_key
       ), adj AS (
         INSERT INTO account_adjustments (idempotency_key, account_id, request_hash, amount, currency, reason, operation_id, balance_after)
         SELECT substr(operation_key, 12), account_id, md5(account_id) || md5(operation_key), amount, $3,
                'benchmark deposit', id, amount FROM ops
       )
       INSERT INTO ledger_entries (operation_id, account_id, amount)
       SELECT id, account_id, amount FROM ops UNION ALL SELECT id, 'house:' || $3, -amount FROM ops`,
      [players, DEPOSIT, CURRENCY],
    );
    await c.query(
      `INSERT INTO coupons (coupon_code, account_id, stake, currency, registration_hash, registered_at)
       SELECT code, account, stake, $5, hash, now() FROM unnest($1::text[], $2::text[], $3::numeric[], $4::text[])
         AS x(code, account, stake, hash)`,
      [
        coupons.map((x) => x.code),
        coupons.map((x) => x.accountId),
        coupons.map((x) => x.stake),
        coupons.map(registrationHash),
        CURRENCY,
      ],
    );
    await c.query(
      `WITH ops AS (
         INSERT INTO financial_operations (operation_key, type, coupon_code, generation, account_id, amount, currency)
         SELECT code || ':0:stake_debit', 'stake_debit', code, 0, account, stake, $4
         FROM unnest($1::text[], $2::text[], $3::numeric[]) AS x(code, account, stake)
         RETURNING id, account_id, amount
       )
       INSERT INTO ledger_entries (operation_id, account_id, amount)
       SELECT id, account_id, -amount FROM ops UNION ALL SELECT id, 'house:' || $4, amount FROM ops`,
      [coupons.map((x) => x.code), coupons.map((x) => x.accountId), coupons.map((x) => x.stake), CURRENCY],
    );
    await c.query(
      `UPDATE accounts a SET balance = a.balance + x.total
       FROM (SELECT e.account_id, sum(e.amount) AS total FROM ledger_entries e
             JOIN financial_operations o ON o.id = e.operation_id
             WHERE o.operation_key LIKE 'adjustment:bench-dep-%' OR o.coupon_code LIKE '2%'
             GROUP BY e.account_id) x
       WHERE a.id = x.account_id AND a.kind = 'player'`,
    );
    await c.query('COMMIT');
  });
}

/** Runs `task` over `items` with `concurrency` workers; the first failure stops the rest. */
async function eachLimited<T>(items: T[], concurrency: number, task: (item: T) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await task(items[next++]);
    }),
  );
}

/** The players' deposits and the coupons' registrations through the receiver's partner API. */
export async function registerOnReceiver(
  baseUrl: string,
  opsKey: string,
  players: string[],
  coupons: PoolCoupon[],
): Promise<void> {
  const headers = { authorization: `Bearer ${opsKey}`, 'content-type': 'application/json' };
  const post = async (path: string, body: unknown, extra: Record<string, string> = {}) => {
    const res = await fetch(`${baseUrl}${path}`, {
      method: 'POST',
      headers: { ...headers, ...extra },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status !== 200 && res.status !== 201) throw new Error(`POST ${path}: HTTP ${res.status} ${text}`);
  };
  await eachLimited(players, 8, (p) =>
    post(
      `/accounts/${encodeURIComponent(p)}/adjustments`,
      { amount: DEPOSIT, currency: CURRENCY, reason: 'benchmark deposit' },
      { 'idempotency-key': `bench-dep-${p}` },
    ),
  );
  await eachLimited(coupons, 8, (c) =>
    post('/coupons', { coupon_code: c.code, accountId: c.accountId, stake: c.stake, currency: CURRENCY }),
  );
}

/** Player balance total and registered coupons of a side's database (both sides must agree). */
export async function seededTotals(url: string): Promise<{ coupons: number; balance: string }> {
  return withClient(url, async (c) => {
    const { rows } = await c.query<{ coupons: string; balance: string }>(
      `SELECT (SELECT count(*) FROM coupons WHERE coupon_code LIKE '2%' AND account_id IS NOT NULL) AS coupons,
              (SELECT trim_scale(coalesce(sum(balance), 0))::text FROM accounts WHERE id LIKE 'bench-p%') AS balance`,
    );
    return { coupons: Number(rows[0].coupons), balance: rows[0].balance };
  });
}

/** Rows the load wrote for the batches of `prefix` up to `lastBatchId` (not the seed or the preload). */
export interface TableCounts {
  batches: number;
  snapshots: number;
  operations: number;
  entries: number;
  /** Wallet outbox rows of their operations (0 without a wallet connector or outbox insert). */
  outboxRows: number;
  /** Net amount the load's ledger entries moved to players (decimal string; the house got the opposite). */
  playersNet: string;
  /** Net amount of the load's entries on house accounts (`kind = 'house'`, any number per currency). */
  houseNet: string;
  transitions: Record<string, number>;
}

/** The id of the last new batch a side committed, or undefined. */
export async function lastBatchId(url: string, prefix: string): Promise<string | undefined> {
  return withClient(url, async (c) => {
    const { rows } = await c.query<{ id: string | null }>(
      'SELECT max(batch_id) AS id FROM callback_batches WHERE batch_id LIKE $1',
      [`${prefix}-%`],
    );
    return rows[0].id ?? undefined;
  });
}

/**
 * Counts of the rows written for the batches `<prefix>-…` up to `lastBatchId`: given the same
 * sequence, both sides must write the same rows for the same batches.
 */
export async function tableCounts(url: string, prefix: string, lastBatchId: string): Promise<TableCounts> {
  return withClient(url, async (c) => {
    const params = [`${prefix}-%`, lastBatchId];
    const one = async (sql: string) => Number((await c.query(sql, params)).rows[0].n);
    const transitions: Record<string, number> = {};
    for (const r of (
      await c.query<{ transition: string; n: string }>(
        `SELECT transition, count(*) AS n FROM coupon_snapshots WHERE batch_id LIKE $1 AND batch_id <= $2
         GROUP BY 1 ORDER BY 2 DESC, 1`,
        params,
      )
    ).rows)
      transitions[r.transition] = Number(r.n);
    return {
      batches: await one(
        'SELECT count(*) AS n FROM callback_batches WHERE batch_id LIKE $1 AND batch_id <= $2',
      ),
      snapshots: await one(
        'SELECT count(*) AS n FROM coupon_snapshots WHERE batch_id LIKE $1 AND batch_id <= $2',
      ),
      operations: await one(
        'SELECT count(*) AS n FROM financial_operations WHERE batch_id LIKE $1 AND batch_id <= $2',
      ),
      entries: await one(
        `SELECT count(*) AS n FROM ledger_entries e JOIN financial_operations o ON o.id = e.operation_id
         WHERE o.batch_id LIKE $1 AND o.batch_id <= $2`,
      ),
      // (a receiver built before the wallet outbox has no such table: 0)
      outboxRows: (await c.query("SELECT to_regclass('wallet_outbox') IS NOT NULL AS t")).rows[0].t
        ? await one(
            `SELECT count(*) AS n FROM wallet_outbox w JOIN financial_operations o ON o.id = w.operation_id
             WHERE o.batch_id LIKE $1 AND o.batch_id <= $2`,
          )
        : 0,
      ...(
        await c.query<{ players: string; house: string }>(
          `SELECT trim_scale(coalesce(sum(e.amount) FILTER (WHERE a.kind = 'player'), 0))::text AS players,
                  trim_scale(coalesce(sum(e.amount) FILTER (WHERE a.kind = 'house'), 0))::text AS house
           FROM ledger_entries e JOIN financial_operations o ON o.id = e.operation_id
           JOIN accounts a ON a.id = e.account_id
           WHERE o.batch_id LIKE $1 AND o.batch_id <= $2`,
          params,
        )
      ).rows.map((r) => ({ playersNet: r.players, houseNet: r.house }))[0],
      transitions,
    };
  });
}

/** Money of a side's database in one currency, for the balance check after a phase. */
export interface BalanceTotals {
  /** Sum of the players' materialised balances. */
  players: string;
  /** Sum of the materialised balances of the house accounts (`kind = 'house'`, however many). */
  houseBalance: string;
  /** Sum of the ledger entries on those house accounts. */
  houseEntries: string;
  houseAccounts: number;
  /** players + house entries: 0 when every operation has its two entries. */
  net: string;
}

/**
 * Player and house totals of `currency`. The house side is summed over every account with
 * `kind = 'house'` (the receiver may spread it over sub-accounts; the baseline keeps only entries).
 */
export async function balanceTotals(url: string, currency = CURRENCY): Promise<BalanceTotals> {
  return withClient(url, async (c) => {
    const { rows } = await c.query<{
      players: string;
      house_balance: string;
      house_entries: string;
      house_accounts: number;
      net: string;
    }>(
      `WITH p AS (SELECT coalesce(sum(balance), 0) AS v FROM accounts WHERE kind = 'player' AND currency = $1),
            h AS (SELECT coalesce(sum(balance), 0) AS v, count(*)::int AS n FROM accounts
                  WHERE kind = 'house' AND currency = $1),
            he AS (SELECT coalesce(sum(e.amount), 0) AS v FROM ledger_entries e
                   JOIN accounts a ON a.id = e.account_id WHERE a.kind = 'house' AND a.currency = $1)
       SELECT trim_scale(p.v)::text AS players, trim_scale(h.v)::text AS house_balance,
              trim_scale(he.v)::text AS house_entries, h.n AS house_accounts, trim_scale(p.v + he.v)::text AS net
       FROM p, h, he`,
      [currency],
    );
    const r = rows[0];
    return {
      players: r.players,
      houseBalance: r.house_balance,
      houseEntries: r.house_entries,
      houseAccounts: r.house_accounts,
      net: r.net,
    };
  });
}

/** Sizes of what {@link preloadConsole} adds for the operator console's benchmark. */
export interface ConsolePreload {
  /** Delivery attempts spread over the last 24 hours (2 M for the `--large` preload). */
  attempts: number;
  /** Quarantined bodies over the last 3 days, half of them replayed. */
  quarantined: number;
  /** Operator actions over the last 30 days. */
  operatorActions: number;
}

/**
 * Adds to a database {@link preload}ed what the operator console reads and the preload lacks:
 * delivery attempts of the last day (75 % processed, 20 % duplicate, the rest refused or failed),
 * quarantined bodies, a wallet outbox row with one delivery attempt per final credit (all
 * delivered but 500 pending and 500 parked), 0.2 % of the coupons flagged `needs_review`, 2 000
 * unallocated coupons and operator actions; then VACUUM ANALYZE. Bulk SQL, like the preload.
 * @returns seconds taken.
 */
export async function preloadConsole(url: string, sizes: ConsolePreload): Promise<number> {
  const t0 = performance.now();
  await withClient(url, async (c) => {
    await c.query("SET synchronous_commit = off; SET maintenance_work_mem = '512MB'; SET work_mem = '256MB'");
    await c.query('SET statement_timeout = 0; SET lock_timeout = 0');
    await c.query("SET session_replication_role = 'replica'").catch(() => undefined);
    const { rows } = await c.query<{ batches: number }>(
      'SELECT count(*)::int AS batches FROM callback_batches',
    );
    const batches = Math.max(1, rows[0].batches);
    await c.query(
      `INSERT INTO delivery_attempts (batch_id, request_id, received_at, outcome, http_status, error_code, coupon_count, duration_ms, payload_hash)
       SELECT 'pre-' || lpad((i % $2)::text, 7, '0'), md5('req' || i), now() - (i::float8 / $1) * interval '1 day',
              o.outcome, o.status, o.code, 100, 5 + i % 40, md5('b' || (i % $2)) || md5('c' || (i % $2))
         FROM generate_series(0, $1 - 1) i
         CROSS JOIN LATERAL (SELECT CASE WHEN i % 100 < 75 THEN 'processed' WHEN i % 100 < 95 THEN 'duplicate'
                                         WHEN i % 100 < 97 THEN 'rejected' WHEN i % 100 < 98 THEN 'conflict'
                                         WHEN i % 100 < 99 THEN 'unauthorized' ELSE 'failed' END AS outcome) x
         CROSS JOIN LATERAL (SELECT x.outcome,
                                    CASE x.outcome WHEN 'rejected' THEN 400 WHEN 'conflict' THEN 409
                                                   WHEN 'unauthorized' THEN 401 WHEN 'failed' THEN 503 ELSE 200 END AS status,
                                    CASE x.outcome WHEN 'rejected' THEN 'validation_failed' WHEN 'conflict' THEN 'batch_conflict'
                                                   WHEN 'unauthorized' THEN 'invalid_signature' WHEN 'failed' THEN 'transient_failure'
                                    END AS code) o`,
      [sizes.attempts, batches],
    );
    await c.query(
      `INSERT INTO quarantined_bodies (batch_id, reason, details, http_status, body, content_type, payload_hash, received_at,
                                       replayed_at, replay_outcome, replay_count, replayed_by)
       SELECT 'q-' || lpad(i::text, 7, '0'), CASE WHEN i % 3 = 0 THEN 'batch_conflict' ELSE 'validation_failed' END,
              '{"message": "preloaded"}', CASE WHEN i % 3 = 0 THEN 409 ELSE 400 END,
              convert_to(format('{"batchId":"q-%s","couponCount":1,"coupons":[{"coupon_code":"%s","status":2,"realWin":"1.00","events":[]}]}',
                                lpad(i::text, 7, '0'), lpad((i * 7919 % 1000000)::text, 12, '0')), 'UTF8'),
              'application/json', md5('q' || i) || md5('r' || i), now() - (i::float8 / $1) * interval '3 days',
              CASE WHEN i % 2 = 0 THEN now() - interval '1 hour' END, CASE WHEN i % 2 = 0 THEN 'processed' END,
              CASE WHEN i % 2 = 0 THEN 1 ELSE 0 END, CASE WHEN i % 2 = 0 THEN 'ops-desk' END
         FROM generate_series(0, $1 - 1) i`,
      [sizes.quarantined],
    );
    await c.query(
      `INSERT INTO wallet_outbox (operation_id, operation_key, account_id, status, attempts, parked_reason, created_at,
                                  delivered_at, parked_at, last_status)
       SELECT id, operation_key, account_id,
              CASE WHEN n <= 500 THEN 'pending' WHEN n <= 1000 THEN 'parked' ELSE 'delivered' END, 1,
              CASE WHEN n > 500 AND n <= 1000 THEN 'refused' END, created_at,
              CASE WHEN n > 1000 THEN created_at + interval '1 second' END,
              CASE WHEN n > 500 AND n <= 1000 THEN created_at + interval '1 second' END,
              CASE WHEN n > 500 AND n <= 1000 THEN 422 ELSE 200 END
         FROM (SELECT id, operation_key, account_id, created_at, row_number() OVER (ORDER BY id DESC) AS n
                 FROM financial_operations WHERE type = 'final_credit') f
        ORDER BY id`,
    );
    await c.query(
      `INSERT INTO wallet_delivery_attempts (outbox_id, attempt, request_id, connector, started_at, duration_ms, outcome, http_status)
       SELECT id, 1, md5('wallet' || id), 'http', created_at, 20,
              CASE status WHEN 'parked' THEN 'refused' WHEN 'pending' THEN 'retry' ELSE 'delivered' END,
              CASE status WHEN 'parked' THEN 422 WHEN 'pending' THEN 503 ELSE 200 END
         FROM wallet_outbox`,
    );
    await c.query(
      `UPDATE coupons SET needs_review = true, updated_at = now() - (random() * interval '2 days'),
              review_reason = CASE WHEN coupon_code::bigint % 1000 = 0 THEN 'conflicting_result' ELSE 'amount_precision' END
        WHERE coupon_code::bigint % 500 = 0`,
    );
    await c.query(
      `INSERT INTO coupons (coupon_code, status, real_win, created_at, updated_at)
       SELECT 'U' || lpad(i::text, 11, '0'), 2, 5, now() - i * interval '1 minute', now() - i * interval '1 minute'
         FROM generate_series(0, 1999) i`,
    );
    await c.query(
      `INSERT INTO operator_actions (at, actor, action, target_kind, target_id, reason, request_id, outcome, details)
       SELECT now() - (i::float8 / $1) * interval '30 days', CASE WHEN i % 4 = 0 THEN 'ops-desk' ELSE 'cashier' END,
              CASE WHEN i % 4 = 0 THEN 'replay' ELSE 'adjustment' END,
              CASE WHEN i % 4 = 0 THEN 'quarantine' ELSE 'account' END,
              CASE WHEN i % 4 = 0 THEN (i % 1000 + 1)::text ELSE 'pre-p' || lpad((i % 10000)::text, 5, '0') END,
              CASE WHEN i % 4 = 0 THEN NULL ELSE 'cashier deposit' END, md5('action' || i), 'ok', '{}'::jsonb
         FROM generate_series(0, $1 - 1) i`,
      [sizes.operatorActions],
    );
    await c.query('RESET session_replication_role').catch(() => undefined);
    await c.query('VACUUM ANALYZE');
  });
  return (performance.now() - t0) / 1000;
}
