import { lockWaiters, whileLocked } from '../support/database-faults.js';
import { eventually } from '../support/wait.js';
import {
  fundCoupons,
  partner,
  portRange,
  post,
  startReceiver,
  useReceivers,
  verifyLedger,
} from './support/receiver.js';

// CONTRACT §4 (batch registration, coupon, bet and ledger writes are ONE transaction; never the
// batch id alone) and §1 (never lose an acknowledged batch): the receiver is killed with SIGKILL
// while a batch transaction is open and blocked on a row lock held by a second connection.
// The inline hot path sends its last round of statements (writes, ledger posting) together with
// COMMIT (node-postgres pipeline mode, `Tx.commitWith`): a transaction blocked in that round may
// still commit WHOLE after the process died (the COMMIT is already at the server), never in part;
// the 200 was never sent, so SportAPI's redelivery is then a duplicate. Blocked in the first round
// (claim and coupon locks), COMMIT was not sent: nothing persists.

const [PORT] = portRange(10);
/** Long enough that the blocked batch waits for the kill instead of timing out. */
const SLOW_ENV = {
  DB_LOCK_TIMEOUT_MS: '7000',
  DB_STATEMENT_TIMEOUT_MS: '7000',
  CALLBACK_DEADLINE_MS: '9500',
};

describe('SIGKILL while a batch transaction is open (CONTRACT §4)', () => {
  const suite = useReceivers([PORT], { env: SLOW_ENV, poolSize: 4 });

  /** Rows of every table a batch writes, for `batchId` and `couponCode`. */
  async function rowsOf(batchId: string, couponCode: string) {
    const { rows } = await suite.db.pool.query(
      `SELECT (SELECT count(*)::int FROM callback_batches WHERE batch_id = $1) AS batches,
              (SELECT count(*)::int FROM coupon_snapshots WHERE batch_id = $1) AS snapshots,
              (SELECT count(*)::int FROM bets WHERE coupon_code = $2) AS bets,
              (SELECT count(*)::int FROM financial_operations WHERE coupon_code = $2 AND type <> 'stake_debit') AS operations,
              (SELECT count(*)::int FROM delivery_attempts WHERE batch_id = $1) AS attempts,
              (SELECT status FROM coupons WHERE coupon_code = $2) AS status`,
      [batchId, couponCode],
    );
    return rows[0] as Record<string, number | null>;
  }

  /** Waits until a receiver backend is blocked on a lock inside a transaction that has written rows. */
  async function blockedWriter(): Promise<{ pid: number; query: string }> {
    return eventually(
      async () => (await lockWaiters(suite.db.pool, { writing: true }))[0],
      'a receiver transaction blocked on the lock',
      { timeoutMs: 10_000, intervalMs: 50 },
    );
  }

  async function backendGone(pid: number): Promise<void> {
    await eventually(
      async () =>
        !(await suite.db.pool.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1`, [pid])).rowCount,
      `backend ${pid} of the killed receiver to end`,
      { timeoutMs: 10_000, intervalMs: 50 },
    );
  }

  beforeAll(async () => {
    await fundCoupons(
      suite.receiver.url,
      { id: 'p-crash', amount: '100.00', key: 'crash-dep', reason: 'crash' },
      ['K1', 'K2'],
      '10.00',
    );
  }, 60_000);

  it.each([
    {
      name: 'blocked on the house account (ledger posting, after the batch id, snapshot and coupon writes)',
      // Every house sub-account of EUR: the posting takes a free one, else waits.
      lockSql: `SELECT 1 FROM accounts WHERE kind = 'house' AND currency = 'EUR' FOR UPDATE`,
      code: 'K1',
      batchId: 'crash-1',
      commitSent: true,
    },
    {
      name: 'blocked on the coupon row (after the batch id was inserted)',
      lockSql: `SELECT 1 FROM coupons WHERE coupon_code = 'K2' FOR UPDATE`,
      code: 'K2',
      batchId: 'crash-2',
      commitSent: false,
    },
  ])(
    '$name: the first attempt persists whole or not at all, the batch is applied once',
    async ({ lockSql, code, batchId, commitSent }) => {
      const body = {
        batchId,
        couponCount: 1,
        coupons: [
          { coupon_code: code, status: 2, realWin: '30.00', events: [{ uuid: `${code}-e1`, status: 2 }] },
        ],
      };
      const killedPid = await whileLocked(suite.db.pool, lockSql, async () => {
        const first = post(suite.receiver.url, body, { timeoutMs: 20_000 });
        const blocked = await blockedWriter();
        suite.receiver.kill('SIGKILL');
        const { signal } = await suite.receiver.exited;
        expect(signal).toBe('SIGKILL');
        expect((await first).status).toBe(0); // the connection died with the process: no answer
        return blocked.pid;
      });
      // The orphaned backend finishes what it had received (a COMMIT included) or notices the
      // closed socket and rolls back; either way it ends.
      await backendGone(killedPid);
      const left = await rowsOf(batchId, code);
      const committed = left.batches === 1;
      if (!commitSent) expect(committed).toBe(false);
      expect(left).toEqual(
        committed
          ? { batches: 1, snapshots: 1, bets: 1, operations: 1, attempts: 1, status: 2 }
          : { batches: 0, snapshots: 0, bets: 0, operations: 0, attempts: 0, status: null },
      );

      suite.receiver = await startReceiver(PORT, suite.db.url, SLOW_ENV);
      const again = await post(suite.receiver.url, body);
      expect(again.status).toBe(200);
      expect(again.body).toEqual(
        committed ? { success: true, processed: 1, duplicate: true } : { success: true, processed: 1 },
      );
      const dup = await post(suite.receiver.url, body);
      expect(dup.body).toEqual({ success: true, processed: 1, duplicate: true });
      expect(await rowsOf(batchId, code)).toEqual({
        batches: 1,
        snapshots: 1,
        bets: 1,
        operations: 1,
        attempts: committed ? 3 : 2,
        status: 2,
      });
      const { rows } = await suite.db.pool.query(
        `SELECT operation_key, amount::text FROM financial_operations WHERE coupon_code = $1 ORDER BY id`,
        [code],
      );
      expect(rows).toEqual([
        { operation_key: `${code}:0:stake_debit`, amount: '10.00000000' },
        { operation_key: `${code}:0:final_credit`, amount: '30.00000000' },
      ]);
      expect((await verifyLedger(suite.db.url)).violations).toEqual([]);
    },
    60_000,
  );

  it('after both crashes the player balance is exact: 100 - 2 × 10 + 2 × 30', async () => {
    const res = await partner(suite.receiver.url, 'GET', '/accounts/p-crash');
    expect(res.body).toEqual({ id: 'p-crash', currency: 'EUR', balance: '140.00' });
  });
});
