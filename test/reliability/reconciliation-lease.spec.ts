import { TcpProxy } from '../../sim/tcp-proxy.js';
import { RECONCILIATION_LOCK_KEY } from '../../src/intake/reconciliation/scheduled-reconciliation.js';
import { FakeSportApi, startFakeSportApi } from '../support/fake-sportapi.js';
import { opCount } from '../support/rows.js';
import { LOCKED_TRUE } from '../support/database-faults.js';
import { eventually } from '../support/wait.js';
import {
  fundCoupons,
  portRange,
  post,
  Receiver,
  startReceiver,
  stopReceiver,
  suiteDatabase,
  SuiteDatabase,
  verifyLedger,
  violationsOf,
} from './support/receiver.js';

// Issue 39 fault (d), docs/reconciliation.md: two replicas run the scheduled reconciliation, one at
// a time under the session lock RECONCILIATION_LOCK_KEY. The first to take it is SIGKILLed holding
// it; PostgreSQL frees the lock with the session, and the other replica's next run reads and
// applies every coupon, each once.

/** RECONCILE_INTERVAL of both replicas, ms: the lock is taken over at the next run. */
const RUN_MS = 2000;
const CODES = ['RL-1', 'RL-2', 'RL-3', 'RL-4'];

describe('SIGKILL of a replica holding the reconciliation lock (issue 39, fault d)', () => {
  const ports = portRange(84, 2);
  let db: SuiteDatabase;
  let api: FakeSportApi;
  const proxies: TcpProxy[] = [];
  const replicas: Receiver[] = [];

  beforeAll(async () => {
    db = await suiteDatabase(2);
    api = await startFakeSportApi();
    const server = new URL(db.url);
    for (const port of ports) {
      const proxy = await TcpProxy.start({ host: server.hostname, port: Number(server.port || 5432) });
      proxies.push(proxy);
      const url = new URL(db.url);
      url.hostname = '127.0.0.1';
      url.port = String(proxy.port);
      replicas.push(
        await startReceiver(
          port,
          url.toString(),
          {
            SPORTAPI_BASE_URL: api.url,
            SPORTAPI_RETRIES: '0',
            RECONCILE_INTERVAL: String(RUN_MS),
            RECONCILE_AFTER: '1',
            RETENTION_INTERVAL: 'off',
            LOG_LEVEL: 'info',
          },
          90_000,
        ),
      );
    }
  }, 200_000);

  afterAll(async () => {
    for (const proxy of proxies) proxy.release();
    await Promise.all(replicas.map((r) => stopReceiver(r)));
    for (const proxy of proxies) await proxy.close();
    await api?.close();
    await db?.close();
  }, 60_000);

  it('the other replica takes the lock at its next run and applies each coupon once', async () => {
    // Coupons left unsettled by the callback (status 1); SportAPI does not know them yet (404).
    await fundCoupons(
      replicas.map((r) => r.url),
      { id: 'p-lease', amount: '100.00', key: 'lease-dep', reason: 'lease' },
      CODES,
      '1.00',
    );
    const pending = (code: string, status: number) => ({
      coupon_code: code,
      status,
      realWin: status === 2 ? '3.00' : null,
      events: [{ uuid: `${code}-e1`, status }],
    });
    for (const code of CODES) {
      const batch = { batchId: `lease-${code}`, couponCount: 1, coupons: [pending(code, 1)] };
      expect((await post(replicas[1].url, batch)).status).toBe(200);
    }
    // The next replica to take the lock is killed holding it (its answer never reaches it).
    const killed: { replica?: Receiver; at?: number } = {};
    for (const [i, proxy] of proxies.entries())
      proxy.arm({
        after: 'pg_try_advisory_lock',
        marker: String(RECONCILIATION_LOCK_KEY),
        then: 'answerLost',
        answerMarker: LOCKED_TRUE,
        onFired: () => {
          if (killed.replica) return;
          killed.replica = replicas[i];
          killed.at = Date.now();
          replicas[i].kill('SIGKILL');
        },
      });
    await eventually(async () => killed.replica !== undefined, 'a replica to take the reconciliation lock', {
      timeoutMs: 4 * RUN_MS + 10_000,
    });
    for (const proxy of proxies) proxy.release();
    const victim = killed.replica as Receiver;
    const survivor = replicas.find((r) => r !== victim) as Receiver;
    expect(await victim.exited).toEqual({ code: null, signal: 'SIGKILL' });
    // Settled at SportAPI from now on: only a run that took the lock after the kill can apply them.
    for (const code of CODES) api.serve(pending(code, 2));
    const dueAt = Date.now();
    const takenAt = await eventually(
      async () =>
        (await Promise.all(CODES.map((c) => opCount(db.pool, `${c}:0:final_credit`)))).every((n) => n === 1)
          ? Date.now()
          : undefined,
      "the other replica's run to settle every coupon",
      { timeoutMs: 3 * RUN_MS + 10_000, intervalMs: 50 },
    );
    process.stderr.write(
      `reconciliation lock: every coupon settled ${takenAt - (killed.at as number)} ms after the kill\n`,
    );
    // At the survivor's next run or the one after (a run in progress when they became due).
    expect(takenAt - dueAt).toBeLessThanOrEqual(2 * RUN_MS + 5000);
    // The run logs its summary once it ends, after its last coupon's commit: wait for the line.
    await eventually(
      async () => /reconciliation run: \d+ candidates, [1-9]\d* applied/.test(survivor.output()),
      "the survivor's run summary",
    );
    // Each coupon settled once: one credit of 3.00 each, the balance exact to the cent.
    const { rows } = await db.pool.query<{ code: string; n: number }>(
      `SELECT c.coupon_code AS code, count(o.*)::int AS n
         FROM coupons c LEFT JOIN financial_operations o ON o.operation_key = c.coupon_code || ':0:final_credit'
        WHERE c.coupon_code LIKE 'RL-%' GROUP BY c.coupon_code ORDER BY c.coupon_code`,
    );
    expect(rows).toEqual(CODES.map((code) => ({ code, n: 1 })));
    const balance = await db.pool.query<{ balance: string }>(
      `SELECT balance::numeric(20, 2)::text AS balance FROM accounts WHERE id = 'p-lease'`,
    );
    expect(balance.rows).toEqual([{ balance: '108.00' }]);
    expect(violationsOf(await verifyLedger(db.url))).toEqual([]);
  }, 120_000);
});
