import { signatureHeader } from '../../sim/signature.js';
import { startWallet } from '../../sim/wallet.js';
import type { RunningWallet } from '../../sim/wallet.js';
import { batchOf, createTestApp, deliver, deposit, ops, register, TestContext } from '../support/test-app.js';
import { eventually } from '../support/wait.js';

// Issue 31 (docs/wallet-http-contract.md#the-batch-call): with WALLET_BATCH_SIZE above 1 the rows
// of a claim go out as one signed array; each element's result decides its own row: applied and
// duplicate delivered, refused and conflict parked (coupon flagged), transient retried with the
// same bytes (maybe in another array). Every transaction reaches the wallet exactly once.

const WALLET_SECRET = 'test-wallet-secret-batch';

interface Row {
  operation_key: string;
  status: string;
  parked_reason: string | null;
  attempts: number;
}

describe('the batch call with a partial failure (issue 31)', () => {
  let wallet: RunningWallet;
  let t: TestContext;

  beforeAll(async () => {
    wallet = await startWallet({ port: 0, secret: WALLET_SECRET, seed: 3 });
    t = await createTestApp({
      WALLET_URL: wallet.url,
      WALLET_SECRET,
      WALLET_BATCH_SIZE: '16',
      WALLET_CLAIM_SIZE: '16',
      // One worker: the eight rows gathered while paused go out in one claim, so in one call.
      WALLET_CONCURRENCY: '1',
      WALLET_TIMEOUT_MS: '1000',
      WALLET_RETRY_BASE_MS: '20',
      WALLET_RETRY_MAX_MS: '100',
      WALLET_POLL_INTERVAL_MS: '20',
    });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await wallet?.close();
  });

  const rows = async (keys: string[]) =>
    (
      await t.db.query<Row>(
        `SELECT operation_key, status, parked_reason, attempts FROM wallet_outbox
          WHERE operation_key = ANY($1::text[]) ORDER BY operation_key`,
        [keys],
      )
    ).rows;
  const settle = async (
    code: string,
    account: string,
    batch: string,
    status: number,
    realWin: string | null,
  ) => {
    await register(t.app, code, account, '1.00').catch(() => undefined);
    expect((await deliver(t.app, batchOf(batch, { code, status, realWin }))).status).toBe(200);
  };
  const paused = async (on: boolean) =>
    expect(
      (await ops(t.app, 'operator').post(on ? '/wallet/pause' : '/wallet/resume', { reason: 'collect' }))
        .status,
    ).toBe(200);

  it('delivers each transaction once, parks the refused and the conflicting, retries the transient', async () => {
    // A credit delivered, then spent in the wallet: its recalculation's debit will be refused.
    for (const a of ['wb-r', 'wb-x', 'wb-0', 'wb-1', 'wb-2', 'wb-3', 'wb-4', 'wb-5'])
      await deposit(t.app, a, '10.00');
    await settle('WBR', 'wb-r', 'wbr-1', 2, '5.00');
    await eventually(
      async () => (await rows(['WBR:0:final_credit']))[0]?.status === 'delivered',
      'the credit',
    );
    const spent = await fetch(`${wallet.url}/accounts/wb-r/withdrawals`, {
      method: 'POST',
      body: JSON.stringify({ amount: '5.00', currency: 'EUR' }),
    });
    expect(spent.status).toBe(200);

    // Another sender's body under the transaction id of WBX's coming credit: a conflict.
    const foreign = JSON.stringify({
      transactionId: 'WBX:0:final_credit',
      direction: 'credit',
      type: 'final_credit',
      accountId: 'wb-x',
      amount: '99.00',
      currency: 'EUR',
      couponCode: 'WBX',
      generation: 0,
      batchId: 'elsewhere',
      reversesTransactionId: null,
      createdAt: '2025-03-01T10:00:00.000Z',
    });
    const planted = await fetch(`${wallet.url}/transactions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': 'WBX:0:final_credit',
        'x-signature': signatureHeader(foreign, WALLET_SECRET),
      },
      body: foreign,
    });
    expect(planted.status).toBe(200);

    // Eight rows of eight accounts gathered while paused, then one claim: one array of eight,
    // half of whose elements the wallet answers transient.
    await paused(true);
    await settle('WBR', 'wb-r', 'wbr-2', 15, null); // the debit of the 5.00 credit
    await settle('WBX', 'wb-x', 'wbx-1', 2, '4.00');
    for (let i = 0; i < 6; i++) await settle(`WB${i}`, `wb-${i}`, `wb-${i}`, 2, `${i + 2}.00`);
    wallet.setFaults({ elementFailRate: 0.5 });
    const callsBefore = wallet.stats().batchCalls;
    await paused(false);

    const good = [0, 1, 2, 3, 4, 5].map((i) => `WB${i}:0:final_credit`);
    const keys = ['WBR:1:recalculation_debit', 'WBX:0:final_credit', ...good];
    const final = await eventually(
      async () => {
        const r = await rows(keys);
        return r.length === 8 && r.every((x) => x.status !== 'pending') && r;
      },
      'every row settled',
      { timeoutMs: 20_000 },
    );
    wallet.setFaults({ elementFailRate: 0 });
    expect(final.map((r) => [r.operation_key, r.status, r.parked_reason])).toEqual([
      ['WB0:0:final_credit', 'delivered', null],
      ['WB1:0:final_credit', 'delivered', null],
      ['WB2:0:final_credit', 'delivered', null],
      ['WB3:0:final_credit', 'delivered', null],
      ['WB4:0:final_credit', 'delivered', null],
      ['WB5:0:final_credit', 'delivered', null],
      ['WBR:1:recalculation_debit', 'parked', 'refused'],
      ['WBX:0:final_credit', 'parked', 'conflict'],
    ]);
    // Some elements were transient and went out again: more attempts than rows, yet each
    // transaction applied exactly once (the stand-in's list), and never the refused one.
    expect(final.reduce((n, r) => n + r.attempts, 0)).toBeGreaterThan(8);
    const applied = wallet.transactions().map((x) => x.transactionId);
    for (const key of good) expect(applied.filter((id) => id === key)).toHaveLength(1);
    expect(applied.filter((id) => id === 'WBX:0:final_credit')).toHaveLength(1); // the planted one
    expect(applied).not.toContain('WBR:1:recalculation_debit');
    expect(wallet.balances().find((b) => b.accountId === 'wb-3')?.balance).toBe('5.00');
    expect(wallet.stats().batchCalls).toBeGreaterThan(callsBefore);

    // One call per claim: the first attempts of the eight rows share one request id; each row's
    // history keeps its element's answer.
    const { rows: history } = await t.db.query<{
      key: string;
      attempt: number;
      request_id: string;
      outcome: string;
      http_status: number;
      answer: string;
    }>(
      `SELECT o.operation_key AS key, a.attempt, a.request_id, a.outcome, a.http_status, a.answer
         FROM wallet_delivery_attempts a JOIN wallet_outbox o ON o.id = a.outbox_id
        WHERE o.operation_key = ANY($1::text[]) ORDER BY a.id`,
      [keys],
    );
    const firsts = history.filter((h) => h.attempt === 1);
    expect(firsts).toHaveLength(8);
    expect(new Set(firsts.map((h) => h.request_id)).size).toBe(1);
    expect(
      history
        .filter((h) => h.outcome === 'retry')
        .every((h) => h.answer.startsWith('transient: unavailable')),
    ).toBe(true);
    const refused = history.find((h) => h.key === 'WBR:1:recalculation_debit' && h.outcome === 'refused');
    expect(refused).toMatchObject({ http_status: 200 });
    expect(refused?.answer).toContain('refused: insufficient_funds: debit 5.00 EUR above the balance 0.00');
    const { rows: flagged } = await t.db.query<{ coupon_code: string; review_reason: string }>(
      `SELECT coupon_code, review_reason FROM coupons WHERE coupon_code IN ('WBR', 'WBX') ORDER BY 1`,
    );
    expect(flagged).toEqual([
      { coupon_code: 'WBR', review_reason: 'wallet_refused' },
      { coupon_code: 'WBX', review_reason: 'wallet_refused' },
    ]);
  }, 60_000);

  it('a wallet that refuses the array as a whole (404) pauses delivery and parks nothing', async () => {
    const other = await startWallet({ port: 0, secret: WALLET_SECRET });
    const single = await createTestApp({
      WALLET_URL: `${other.url}/nowhere`, // 404 to every call: as a wallet without the batch call
      WALLET_SECRET,
      WALLET_BATCH_SIZE: '4',
      WALLET_POLL_INTERVAL_MS: '20',
    });
    try {
      await deposit(single.app, 'wz-1', '10.00');
      await register(single.app, 'WZ1', 'wz-1', '1.00');
      expect(
        (await deliver(single.app, batchOf('wz-1', { code: 'WZ1', status: 2, realWin: '2.00' }))).status,
      ).toBe(200);
      const status = await eventually(async () => {
        const res = await ops(single.app).get('/wallet/status');
        return (res.body as { paused: boolean }).paused && (res.body as { reason: string; parked: number });
      }, 'delivery paused');
      expect(status.parked).toBe(0);
      expect(status.reason).toContain('HTTP 404 to the batch call as a whole');
      const { rows: left } = await single.db.query(`SELECT status FROM wallet_outbox`);
      expect(left).toEqual([{ status: 'pending' }]);
    } finally {
      await single.close();
      await other.close();
    }
  });
});
