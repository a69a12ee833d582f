import { startWallet } from '../../sim/wallet.js';
import type { RunningWallet } from '../../sim/wallet.js';
import { batchOf, createTestApp, deliver, deposit, ops, register, TestContext } from '../support/test-app.js';
import { eventually } from '../support/wait.js';
import { fetchRead, moveInWallet } from '../support/http.js';
import { sample, scrape } from '../support/metrics.js';
import {
  pushedOperations,
  reconcileWallet,
  walletExport,
} from '../../src/outbound/wallet/wallet-reconciler.js';

// Issue 15 (docs/wallet.md): every financial operation of a pushed type is written to the outbox
// in the transaction that posts it, and delivered to the wallet exactly once per transaction id,
// in order per account, through faults; operators see, retry, skip, pause and resume.

const WALLET_SECRET = 'test-wallet-secret-1';

interface OutboxRow {
  id: string;
  operation_key: string;
  account_id: string;
  status: string;
  attempts: number;
  parked_reason: string | null;
}

describe('wallet outbox and HTTP connector (issue 15)', () => {
  let wallet: RunningWallet;
  let t: TestContext;

  beforeAll(async () => {
    wallet = await startWallet({ port: 0, secret: WALLET_SECRET, seed: 7 });
    t = await createTestApp({
      WALLET_URL: wallet.url,
      WALLET_SECRET,
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
  afterEach(() => wallet.setFaults({ failRate: 0, dropAfterApply: 0, slowMs: 0, down: false }));

  const outbox = async (account: string) =>
    (
      await t.db.query<OutboxRow>(
        `SELECT id::text, operation_key, account_id, status, attempts, parked_reason
           FROM wallet_outbox WHERE account_id = $1 ORDER BY wallet_outbox.id`,
        [account],
      )
    ).rows;
  const settled = (account: string, n: number) =>
    eventually(async () => {
      const rows = await outbox(account);
      return rows.length === n && rows.every((r) => r.status !== 'pending') && rows;
    }, `${n} outbox rows of ${account} settled`);
  const applied = (account: string) =>
    wallet
      .transactions()
      .filter((x) => x.accountId === account)
      .map((x) => `${x.transactionId} ${x.direction} ${x.amount}`);
  const walletBalance = (account: string) =>
    wallet.balances().find((b) => b.accountId === account && b.currency === 'EUR')?.balance;
  const walletMove = (account: string, kind: 'deposits' | 'withdrawals', amount: string) =>
    moveInWallet(wallet.url, account, kind, amount);
  const review = async (code: string) => {
    const { needsReview, reviewReason } = (await ops(t.app).get(`/coupons/${code}`)).body;
    return { needsReview, reviewReason };
  };
  const needingReview = async () => sample(await scrape(t.app), 'settlement_coupons_needing_review');

  it('a settlement pushes its final_credit once, with the contract body; stake and deposit stay in the ledger', async () => {
    await deposit(t.app, 'w-a', '50.00');
    await register(t.app, 'WA1', 'w-a', '10.00');
    expect((await deliver(t.app, batchOf('wa-1', { code: 'WA1', status: 2, realWin: '25.50' }))).status).toBe(
      200,
    );
    const rows = await settled('w-a', 1);
    expect(rows).toEqual([
      {
        id: rows[0].id,
        operation_key: 'WA1:0:final_credit',
        account_id: 'w-a',
        status: 'delivered',
        attempts: 1,
        parked_reason: null,
      },
    ]);
    expect(applied('w-a')).toEqual(['WA1:0:final_credit credit 25.50']);
    const [sent] = wallet.transactions().filter((x) => x.accountId === 'w-a');
    expect(sent).toEqual({
      transactionId: 'WA1:0:final_credit',
      direction: 'credit',
      type: 'final_credit',
      accountId: 'w-a',
      amount: '25.50',
      currency: 'EUR',
      couponCode: 'WA1',
      generation: 0,
      batchId: 'wa-1',
      reversesTransactionId: null,
      createdAt: sent.createdAt,
      appliedAt: sent.appliedAt,
    });
    // The stored body is what went out, byte for byte.
    const { rows: stored } = await t.db.query<{ body: string }>(
      `SELECT convert_from(body, 'UTF8') AS body FROM wallet_outbox WHERE operation_key = 'WA1:0:final_credit'`,
    );
    const { appliedAt: _, ...body } = sent;
    expect(stored[0].body).toBe(JSON.stringify(body));
  });

  it('a recalculation pushes the debit (naming the credit it reverses) and the new credit, in ledger order', async () => {
    await deposit(t.app, 'w-b', '50.00');
    await register(t.app, 'WB1', 'w-b', '10.00');
    await deliver(t.app, batchOf('wb-1', { code: 'WB1', status: 2, realWin: '30.00' }));
    await deliver(t.app, batchOf('wb-2', { code: 'WB1', status: 15, realWin: '12.00' }));
    await settled('w-b', 3);
    expect(applied('w-b')).toEqual([
      'WB1:0:final_credit credit 30.00',
      'WB1:1:recalculation_debit debit 30.00',
      'WB1:1:final_credit credit 12.00',
    ]);
    expect(
      wallet.transactions().find((x) => x.transactionId === 'WB1:1:recalculation_debit')
        ?.reversesTransactionId,
    ).toBe('WB1:0:final_credit');
    expect(walletBalance('w-b')).toBe('12.00');
  });

  it('wallet down, then lost answers: retried with the same key until delivered, applied once', async () => {
    await deposit(t.app, 'w-c', '50.00');
    await register(t.app, 'WC1', 'w-c', '10.00');
    wallet.setFaults({ down: true });
    await deliver(t.app, batchOf('wc-1', { code: 'WC1', status: 2, realWin: '7.25' }));
    // Recorded 503s, not claims: a claimed attempt may reach the wallet only after it is back up.
    const recorded503 = async () =>
      (
        await t.db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM wallet_delivery_attempts a JOIN wallet_outbox o ON o.id = a.outbox_id
            WHERE o.account_id = 'w-c' AND a.http_status = 503`,
        )
      ).rows[0].n;
    await eventually(async () => (await recorded503()) >= 3, 'three failed attempts recorded');
    expect((await outbox('w-c'))[0].status).toBe('pending');
    wallet.setFaults({ down: false, dropAfterApply: 1 });
    await eventually(async () => wallet.stats().faults.dropped >= 1, 'an answer lost after applying');
    wallet.setFaults({ dropAfterApply: 0 });
    await settled('w-c', 1);
    expect(applied('w-c')).toEqual(['WC1:0:final_credit credit 7.25']);
    expect(walletBalance('w-c')).toBe('7.25');
    const { rows } = await t.db.query<{ outcome: string; http_status: number | null }>(
      `SELECT a.outcome, a.http_status FROM wallet_delivery_attempts a JOIN wallet_outbox o ON o.id = a.outbox_id
        WHERE o.account_id = 'w-c' ORDER BY a.id`,
    );
    expect(rows.at(-1)).toEqual({ outcome: 'delivered', http_status: 200 });
    expect(rows.filter((r) => r.outcome === 'retry').length).toBeGreaterThanOrEqual(3);
    expect(rows.filter((r) => r.http_status === 503).length).toBeGreaterThanOrEqual(3);
  });

  it('a refused recalculation debit parks, flags the coupon and holds the account back until retried or skipped', async () => {
    await deposit(t.app, 'w-d', '50.00');
    await register(t.app, 'WD1', 'w-d', '10.00');
    await register(t.app, 'WD2', 'w-d', '10.00');
    await deliver(t.app, batchOf('wd-1', { code: 'WD1', status: 2, realWin: '40.00' }));
    await settled('w-d', 1);
    // The player spends the winnings in the wallet: the recalculation debit cannot be taken.
    const spent = await fetchRead(`${wallet.url}/accounts/w-d/withdrawals`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ amount: '35.00', currency: 'EUR' }),
    });
    expect(spent.status).toBe(200);
    await deliver(t.app, batchOf('wd-2', { code: 'WD1', status: 15, realWin: '0.00' }));
    await deliver(t.app, batchOf('wd-3', { code: 'WD2', status: 2, realWin: '3.00' }));
    const parked = await eventually(
      async () => (await outbox('w-d')).find((r) => r.status === 'parked'),
      'the debit parked',
    );
    expect(parked).toMatchObject({
      operation_key: 'WD1:1:recalculation_debit',
      parked_reason: 'refused',
      attempts: 1,
    });
    expect(await review('WD1')).toEqual({ needsReview: true, reviewReason: 'wallet_refused' });
    expect(await needingReview()).toBe(1);
    // The later credit of the same account waits behind the parked row.
    const later = (await outbox('w-d')).find((r) => r.operation_key === 'WD2:0:final_credit');
    expect(later).toMatchObject({ status: 'pending', attempts: 0 });
    // And says which row it waits for, in the list and on its own (issue 38); the parked row waits for none.
    const pending = await ops(t.app).get('/wallet/outbox?status=pending');
    expect(pending.body.items.map((r: { id: string; heldBy: string | null }) => [r.id, r.heldBy])).toEqual([
      [later!.id, parked.id],
    ]);
    expect((await ops(t.app).get(`/wallet/outbox/${later!.id}`)).body.heldBy).toBe(parked.id);

    const detail = await ops(t.app).get(`/wallet/outbox/${parked.id}`);
    expect(detail.status).toBe(200);
    expect(detail.body).toMatchObject({
      status: 'parked',
      heldBy: null,
      parkedReason: 'refused',
      lastStatus: 402,
      amount: '40.00',
    });
    expect(detail.body.deliveryAttempts).toEqual([
      expect.objectContaining({ attempt: 1, outcome: 'refused', httpStatus: 402, connector: 'http' }),
    ]);

    // Retry before the wallet has the money: parked again. Then the wallet gets it back: delivered.
    const retried = await ops(t.app, 'operator').post(`/wallet/outbox/${parked.id}/retry`, {});
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ status: 'pending', retriedBy: 'operator' });
    await eventually(
      async () => (await outbox('w-d'))[1].attempts === 2 && (await outbox('w-d'))[1].status === 'parked',
      'parked again',
    );
    const refunded = await fetchRead(`${wallet.url}/accounts/w-d/deposits`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ amount: '35.00', currency: 'EUR' }),
    });
    expect(refunded.status).toBe(200);
    expect((await ops(t.app, 'operator').post(`/wallet/outbox/${parked.id}/retry`, {})).status).toBe(200);
    await settled('w-d', 3);
    expect(applied('w-d')).toEqual([
      'WD1:0:final_credit credit 40.00',
      'WD1:1:recalculation_debit debit 40.00',
      'WD2:0:final_credit credit 3.00',
    ]);
    // Issue 29: the refusal the flag reported has ended with the delivery: the flag went with it.
    expect(await review('WD1')).toEqual({ needsReview: false, reviewReason: null });
    expect(await needingReview()).toBe(0);
    expect((await ops(t.app, 'operator').post(`/wallet/outbox/${parked.id}/retry`, {})).body.error).toEqual({
      code: 'outbox_entry_state',
      message: `outbox row ${parked.id} is delivered: only a parked row can be retried`,
    });
  });

  it('skip: an operator settles a parked row by hand; it is never sent, the account goes on, the flag ends, the reason stays', async () => {
    await deposit(t.app, 'w-e', '50.00');
    await register(t.app, 'WE1', 'w-e', '10.00');
    await register(t.app, 'WE2', 'w-e', '10.00');
    await deliver(t.app, batchOf('we-1', { code: 'WE1', status: 2, realWin: '20.00' }));
    await settled('w-e', 1);
    const spent = await fetchRead(`${wallet.url}/accounts/w-e/withdrawals`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ amount: '20.00', currency: 'EUR' }),
    });
    expect(spent.status).toBe(200);
    await deliver(t.app, batchOf('we-2', { code: 'WE1', status: 15, realWin: '0.00' }));
    await deliver(t.app, batchOf('we-3', { code: 'WE2', status: 2, realWin: '4.00' }));
    const parked = await eventually(
      async () => (await outbox('w-e')).find((r) => r.status === 'parked'),
      'parked',
    );
    expect(await review('WE1')).toEqual({ needsReview: true, reviewReason: 'wallet_refused' });
    expect(await needingReview()).toBe(1);
    const missingReason = await ops(t.app, 'operator').post(`/wallet/outbox/${parked.id}/skip`, {});
    expect(missingReason.status).toBe(400);
    const reader = await ops(t.app, 'reader').post(`/wallet/outbox/${parked.id}/skip`, { reason: 'by hand' });
    expect(reader.status).toBe(403);
    const skipped = await ops(t.app, 'operator').post(`/wallet/outbox/${parked.id}/skip`, {
      reason: 'debited by hand in the wallet, ticket OPS-1',
    });
    expect(skipped.status).toBe(200);
    expect(skipped.body).toMatchObject({
      status: 'skipped',
      parkedReason: 'refused',
      skippedBy: 'operator',
      skipReason: 'debited by hand in the wallet, ticket OPS-1',
    });
    // Issue 29: settled by hand, the refusal is over: the coupon's flag ends in the skip's transaction.
    expect(await review('WE1')).toEqual({ needsReview: false, reviewReason: null });
    expect(await needingReview()).toBe(0);
    const rows = await settled('w-e', 3);
    expect(rows.map((r) => `${r.operation_key} ${r.status} ${r.parked_reason}`)).toEqual([
      'WE1:0:final_credit delivered null',
      'WE1:1:recalculation_debit skipped refused',
      'WE2:0:final_credit delivered null',
    ]);
    expect(applied('w-e')).toEqual(['WE1:0:final_credit credit 20.00', 'WE2:0:final_credit credit 4.00']);
  });

  it('a coupon flagged for another reason keeps it through the refusal and after the delivery', async () => {
    // WH1: flagged recalculation_conflict before its debit is refused; WI1: after.
    for (const [account, code] of [
      ['w-h', 'WH1'],
      ['w-i', 'WI1'],
    ]) {
      await deposit(t.app, account, '50.00');
      await register(t.app, code, account, '10.00');
      await deliver(t.app, batchOf(`${code}-1`, { code, status: 2, realWin: '30.00' }));
      await settled(account, 1);
      await walletMove(account, 'withdrawals', '30.00');
    }
    wallet.setFaults({ down: true });
    await deliver(t.app, batchOf('WH1-2', { code: 'WH1', status: 15, realWin: '0.00' }));
    await deliver(t.app, batchOf('WH1-3', { code: 'WH1', status: 15, realWin: '5.00' }));
    expect(await review('WH1')).toEqual({ needsReview: true, reviewReason: 'recalculation_conflict' });
    wallet.setFaults({ down: false });
    await deliver(t.app, batchOf('WI1-2', { code: 'WI1', status: 15, realWin: '0.00' }));
    const parked = async (account: string) =>
      eventually(async () => (await outbox(account)).find((r) => r.status === 'parked'), `${account} parked`);
    const h = await parked('w-h');
    const i = await parked('w-i');
    expect(await review('WH1')).toEqual({ needsReview: true, reviewReason: 'recalculation_conflict' });
    expect(await review('WI1')).toEqual({ needsReview: true, reviewReason: 'wallet_refused' });
    await deliver(t.app, batchOf('WI1-3', { code: 'WI1', status: 15, realWin: '5.00' }));
    expect(await review('WI1')).toEqual({ needsReview: true, reviewReason: 'recalculation_conflict' });
    expect(await needingReview()).toBe(2);

    for (const [account, row] of [
      ['w-h', h],
      ['w-i', i],
    ] as const) {
      await walletMove(account, 'deposits', '30.00');
      expect((await ops(t.app, 'operator').post(`/wallet/outbox/${row.id}/retry`, {})).status).toBe(200);
      await settled(account, 2);
    }
    expect((await outbox('w-h')).map((r) => r.status)).toEqual(['delivered', 'delivered']);
    expect((await outbox('w-i')).map((r) => r.status)).toEqual(['delivered', 'delivered']);
    expect(await review('WH1')).toEqual({ needsReview: true, reviewReason: 'recalculation_conflict' });
    expect(await review('WI1')).toEqual({ needsReview: true, reviewReason: 'recalculation_conflict' });
    expect(await needingReview()).toBe(2);
  });

  it('pause holds every row; resume delivers them; the list filters by status with keyset pages', async () => {
    await deposit(t.app, 'w-f', '50.00');
    await register(t.app, 'WF1', 'w-f', '1.00');
    await register(t.app, 'WF2', 'w-f', '1.00');
    const paused = await ops(t.app, 'operator').post('/wallet/pause', { reason: 'wallet maintenance' });
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({
      paused: true,
      reason: 'wallet maintenance',
      changedBy: 'operator',
      connector: 'http',
    });
    await deliver(t.app, batchOf('wf-1', { code: 'WF1', status: 2, realWin: '2.00' }));
    await deliver(t.app, batchOf('wf-2', { code: 'WF2', status: 2, realWin: '3.00' }));
    const pending = await ops(t.app).get('/wallet/outbox?status=pending&limit=1');
    expect(pending.status).toBe(200);
    expect(pending.body.items.map((i: { operationKey: string }) => i.operationKey)).toEqual([
      'WF2:0:final_credit',
    ]);
    const next = await ops(t.app).get(
      `/wallet/outbox?status=pending&limit=1&cursor=${pending.body.nextCursor}`,
    );
    expect(next.body.items.map((i: { operationKey: string }) => i.operationKey)).toEqual([
      'WF1:0:final_credit',
    ]);
    expect((await outbox('w-f')).map((r) => r.attempts)).toEqual([0, 0]);
    const resumed = await ops(t.app, 'operator').post('/wallet/resume', {});
    expect(resumed.body).toMatchObject({ paused: false, reason: null, changedBy: 'operator' });
    await settled('w-f', 2);
    expect(applied('w-f')).toEqual(['WF1:0:final_credit credit 2.00', 'WF2:0:final_credit credit 3.00']);
    expect((await ops(t.app).get('/wallet/outbox?status=bogus')).status).toBe(400);
    expect((await ops(t.app).get('/wallet/outbox/999999')).status).toBe(404);
    expect((await ops(t.app).get('/wallet/outbox/abc')).status).toBe(404);
  });

  it('the wallet answers 401 (wrong secret): delivery pauses by itself with the reason, nothing is parked', async () => {
    const impostor = await startWallet({ port: 0, secret: 'another-wallet-secret-2' });
    const other = await createTestApp({
      WALLET_URL: impostor.url,
      WALLET_SECRET,
      WALLET_RETRY_BASE_MS: '20',
      WALLET_POLL_INTERVAL_MS: '20',
    });
    try {
      await deposit(other.app, 'w-g', '50.00');
      await register(other.app, 'WG1', 'w-g', '1.00');
      await deliver(other.app, batchOf('wg-1', { code: 'WG1', status: 2, realWin: '2.00' }));
      const status = await eventually(async () => {
        const res = await ops(other.app).get('/wallet/status');
        return res.body.paused && res.body;
      }, 'paused');
      expect(status).toMatchObject({ paused: true, changedBy: null, pending: 1, parked: 0 });
      expect(status.reason).toMatch(/^wallet answered 401: HTTP 401/);
      const { rows } = await other.db.query(`SELECT status, attempts FROM wallet_outbox`);
      expect(rows).toEqual([{ status: 'pending', attempts: 1 }]);
      const metrics = await ops(other.app).get('/metrics');
      expect(metrics.text).toContain('settlement_wallet_outbox_paused 1');
      expect(metrics.text).toContain('settlement_wallet_deliveries_total{outcome="unauthorized"} 1');
    } finally {
      await other.close();
      await impostor.close();
    }
  });

  it('wallet:reconcile: after all of the above the ledger and the wallet agree; a forged wallet entry is listed', async () => {
    await eventually(async () => {
      const { rows } = await t.db.query(`SELECT 1 FROM wallet_outbox WHERE status = 'pending'`);
      return rows.length === 0;
    }, 'no pending row');
    const client = await t.db.connect();
    try {
      const format = (amount: { toFixed: () => string }, currency: string) =>
        t.config.money.currencies.format(amount.toFixed(), currency);
      const ledger = await pushedOperations(client);
      const exported = await walletExport(wallet.url, 2000);
      const clean = reconcileWallet(ledger, exported, format);
      expect(clean.differences).toEqual([]);
      expect(clean.operations).toEqual({ pending: 0, delivered: 16, parked: 0, skipped: 1 });
      expect(clean.walletTransactions).toBe(16);
      // A transaction the ledger never pushed, and an amount changed by hand.
      const forged = reconcileWallet(
        ledger,
        [
          ...exported.map((x) => (x.transactionId === 'WA1:0:final_credit' ? { ...x, amount: '26.5' } : x)),
          {
            transactionId: 'X9:0:final_credit',
            direction: 'credit',
            type: 'final_credit',
            accountId: 'w-a',
            amount: '1.00',
            currency: 'EUR',
          },
        ],
        format,
      );
      expect(forged.differences).toEqual([
        {
          kind: 'fields_differ',
          subject: 'WA1:0:final_credit',
          detail: 'ledger final_credit credit 25.50 EUR w-a, wallet final_credit credit 26.50 EUR w-a',
        },
        { kind: 'unknown_to_ledger', subject: 'X9:0:final_credit', detail: 'credit 1.00 EUR w-a' },
      ]);
    } finally {
      client.release();
    }
  });
});

describe('no wallet connector configured', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp();
  }, 60_000);
  afterAll(() => t?.close());

  it('writes no outbox row: the settlement stays in the ledger, as before', async () => {
    await deposit(t.app, 'n-a', '50.00');
    await register(t.app, 'NA1', 'n-a', '10.00');
    expect((await deliver(t.app, batchOf('na-1', { code: 'NA1', status: 2, realWin: '5.00' }))).status).toBe(
      200,
    );
    const { rows } = await t.db.query('SELECT count(*)::int AS n FROM wallet_outbox');
    expect(rows).toEqual([{ n: 0 }]);
    const status = await ops(t.app).get('/wallet/status');
    expect(status.body).toMatchObject({ connector: null, paused: false, pending: 0, parked: 0 });
  });

  it('a wallet never paused answers changedAt null; a pause and a resume set it (new-user report 2, 7)', async () => {
    const never = await ops(t.app).get('/wallet/status');
    expect(never.body).toEqual({
      connector: null,
      paused: false,
      reason: null,
      changedAt: null,
      changedBy: null,
      pending: 0,
      parked: 0,
      oldestPendingAgeSeconds: 0,
    });
    const before = Date.now();
    const paused = await ops(t.app, 'operator').post('/wallet/pause', { reason: 'maintenance' });
    expect({ status: paused.status, changedBy: paused.body.changedBy }).toEqual({
      status: 200,
      changedBy: 'operator',
    });
    expect(Date.parse(paused.body.changedAt)).toBeGreaterThanOrEqual(before - 1000);
    const resumed = await ops(t.app, 'operator').post('/wallet/resume', {});
    expect({
      paused: resumed.body.paused,
      reason: resumed.body.reason,
      changedBy: resumed.body.changedBy,
    }).toEqual({ paused: false, reason: null, changedBy: 'operator' });
    expect(Date.parse(resumed.body.changedAt)).toBeGreaterThanOrEqual(Date.parse(paused.body.changedAt));
  });
});
