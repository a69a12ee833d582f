import pg from 'pg';
import { DataSource } from 'typeorm';
import { startWallet } from '../../sim/wallet.js';
import type { RunningWallet } from '../../sim/wallet.js';
import { buildDataSourceOptions } from '../../src/platform/database/data-source-options.js';
import { checkPooling } from '../../src/platform/database/session-database.js';
import { ScheduledReconciliation } from '../../src/intake/reconciliation/scheduled-reconciliation.js';
import { RetentionJob } from '../../src/operations/retention/retention.job.js';
import { FakeSportApi, startFakeSportApi } from '../support/fake-sportapi.js';
import {
  batchOf,
  createTestApp,
  deliver,
  deposit,
  pooled,
  register,
  TestContext,
} from '../support/test-app.js';
import { eventually } from '../support/wait.js';

// Issue 39 (docs/production.md#pgbouncer): through PgBouncer in transaction mode with a pool of 2
// server connections (the global set-up's, TEST_PGBOUNCER_PORT), the callback, inbox, wallet
// outbox, retention and reconciliation paths leave nothing on a server connection for the next
// client: no setting changed for the session, no prepared statement, no advisory lock.

const pgbouncer = process.env.TEST_POOLED_URL ? describe : describe.skip;

/** Settings the receiver changes in its transactions (SET LOCAL), never for a session. */
const SETTINGS = [
  'statement_timeout',
  'lock_timeout',
  'idle_in_transaction_session_timeout',
  'plan_cache_mode',
];

interface ServerState {
  pid: number;
  settings: { name: string; setting: string; reset_val: string }[];
  prepared: string[];
  advisory: number;
}

/**
 * What each server connection of the pool keeps for the next client: two clients through PgBouncer
 * in a transaction each hold both server connections of the pool at once.
 */
async function serverStates(directUrl: string): Promise<ServerState[]> {
  const url = pooled(directUrl).DATABASE_URL;
  const clients = [new pg.Client({ connectionString: url }), new pg.Client({ connectionString: url })];
  try {
    for (const c of clients) await c.connect();
    for (const c of clients) await c.query('BEGIN');
    const states: ServerState[] = [];
    for (const c of clients) {
      const settings = await c.query<{ name: string; setting: string; reset_val: string }>(
        `SELECT name, current_setting(name) AS setting, reset_val FROM pg_settings WHERE name = ANY ($1) ORDER BY name`,
        [SETTINGS],
      );
      const prepared = await c.query<{ name: string }>(
        'SELECT name FROM pg_prepared_statements ORDER BY name',
      );
      const locks = await c.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_locks
          WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      );
      const pid = await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      states.push({
        pid: pid.rows[0].pid,
        settings: settings.rows,
        prepared: prepared.rows.map((r) => r.name),
        advisory: locks.rows[0].n,
      });
    }
    for (const c of clients) await c.query('COMMIT');
    return states;
  } finally {
    for (const c of clients) await c.end().catch(() => undefined);
  }
}

function expectNothingLeaked(states: ServerState[]): void {
  expect(new Set(states.map((s) => s.pid)).size).toBe(2);
  for (const s of states) {
    expect(s.settings.map((x) => x.name)).toEqual([...SETTINGS].sort());
    for (const x of s.settings) expect(`${x.name}=${x.setting}`).toBe(`${x.name}=${x.reset_val}`);
    expect(s.prepared).toEqual([]);
    expect(s.advisory).toBe(0);
  }
}

pgbouncer('through PgBouncer (transaction mode, 2 server connections): nothing left on a connection', () => {
  let wallet: RunningWallet;
  let api: FakeSportApi;
  let t: TestContext | undefined;

  beforeAll(async () => {
    wallet = await startWallet({ port: 0, secret: 'test-wallet-secret-1', seed: 7 });
    api = await startFakeSportApi();
  });
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });
  afterAll(async () => {
    await wallet?.close();
    await api?.close();
  });

  const walletEnv = () => ({
    WALLET_URL: wallet.url,
    WALLET_SECRET: 'test-wallet-secret-1',
    WALLET_POLL_INTERVAL_MS: '20',
    SPORTAPI_BASE_URL: api.url,
    SPORTAPI_API_KEY: 'k',
    RECONCILE_INTERVAL: 'off',
    RECONCILE_AFTER: '0',
  });

  const settleOutbox = (ctx: TestContext) =>
    eventually(async () => {
      const { rows } = await ctx.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM wallet_outbox WHERE status = 'pending'`,
      );
      return rows[0].n === 0;
    }, 'wallet outbox delivered');

  // The breaker's finding: with a single probe a replica started without DATABASE_POOLED while
  // other clients loaded the pool was let through 2 times in 5, then held session locks on shared
  // server connections. Twenty start-up checks under such a load must all refuse.
  it('the start-up check refuses an undeclared pooler every time while other clients load it', async () => {
    t = await createTestApp(walletEnv());
    const directUrl = t.config.database.databaseDirectUrl!;
    const through = new DataSource(buildDataSourceOptions(pooled(directUrl).DATABASE_URL, undefined, 4));
    const direct = new DataSource(buildDataSourceOptions(directUrl, undefined, 4));
    await through.initialize();
    await direct.initialize();
    const load = new pg.Pool({ connectionString: pooled(directUrl).DATABASE_URL, max: 3 });
    let loading = true;
    const loaders = Array.from({ length: 3 }, async () => {
      while (loading) await load.query('SELECT pg_sleep(0.002)');
    });
    try {
      const outcomes: string[] = [];
      for (let i = 0; i < 20; i++) {
        outcomes.push(
          await checkPooling(through, undefined, false).then(
            () => 'started',
            (err: Error) =>
              /DATABASE_URL goes through a transaction-mode pooler/.test(err.message)
                ? 'refused'
                : err.message,
          ),
        );
      }
      expect(outcomes).toEqual(Array(20).fill('refused'));
      // The same server directly: never taken for a pooler.
      for (let i = 0; i < 5; i++)
        await expect(checkPooling(direct, undefined, false)).resolves.toBeUndefined();
    } finally {
      loading = false;
      await Promise.all(loaders);
      await load.end();
      await through.destroy();
      await direct.destroy();
    }
  });

  it('inline callback, registrations, deposits, wallet outbox, retention and reconciliation runs', async () => {
    t = await createTestApp(walletEnv());
    expect(t.config.database.databasePooled).toBe(true);
    for (const account of ['leak-p0', 'leak-p1', 'leak-p2']) await deposit(t.app, account, '100.00');
    // Concurrent registrations and callbacks: unrelated clients share the 2 server connections.
    await Promise.all(
      Array.from({ length: 12 }, (_, i) => register(t!.app, `LK-${i}`, `leak-p${i % 3}`, '1.00')),
    );
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        deliver(t!.app, batchOf(`lk-b-${i}`, { code: `LK-${i}`, status: 2, realWin: '2.00' })),
      ),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(12).fill(200));
    await settleOutbox(t);
    expect((await t.app.get(RetentionJob).runOnce()).skipped).toBe(false);
    api.serve({
      coupon_code: 'LK-0',
      status: 2,
      realWin: '2.00',
      events: [{ uuid: 'LK-0-ev-1', status: 2 }],
    });
    expect(await t.app.get(ScheduledReconciliation).runOnce()).toMatchObject({ skipped: false });
    const { rows } = await t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM coupons WHERE status = 2 AND coupon_code LIKE 'LK-%'`,
    );
    expect(rows[0].n).toBe(12);
    expectNothingLeaked(await serverStates(directUrlOf(t)));
  });

  it('inbox mode: intake, workers and the wallet outbox', async () => {
    t = await createTestApp({ ...walletEnv(), CALLBACK_MODE: 'inbox', INBOX_POLL_INTERVAL_MS: '20' });
    for (const account of ['leak-i0', 'leak-i1']) await deposit(t.app, account, '100.00');
    await Promise.all(
      Array.from({ length: 8 }, (_, i) => register(t!.app, `LI-${i}`, `leak-i${i % 2}`, '1.00')),
    );
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        deliver(t!.app, batchOf(`li-b-${i}`, { code: `LI-${i}`, status: 2, realWin: '3.00' })),
      ),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(8).fill(200));
    await eventually(async () => {
      const { rows } = await t!.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM callback_inbox WHERE status = 'done'`,
      );
      return rows[0].n === 8;
    }, '8 inbox rows done');
    await settleOutbox(t);
    expectNothingLeaked(await serverStates(directUrlOf(t)));
  });
});

/** The app's direct URL (`DATABASE_DIRECT_URL`: the test database itself). */
function directUrlOf(t: TestContext): string {
  return t.config.database.databaseDirectUrl as string;
}
