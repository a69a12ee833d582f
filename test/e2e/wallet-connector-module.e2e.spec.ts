import { partnerExtension } from '../../examples/partner-module/extension.js';
import { batchOf, deliver, deposit, ops, register, useTestApp } from '../support/test-app.js';
import { eventually } from '../support/wait.js';

// The extension point (docs/extending.md): the example partner module, given to
// AppModule.forRoot, provides the connector `partner-table`, which applies each transaction to the partner's own tables instead of an HTTP
// call; the outbox, ordering, parking and operator endpoints work the same. Also every posting
// path writes its outbox row: adjustments when listed, a callback applied by an inbox worker, the
// deferred credit of a coupon registered after its settlement.

describe('WALLET_CONNECTOR=partner-table (the example connector module), inbox mode', () => {
  const t = useTestApp(
    {
      WALLET_CONNECTOR: 'partner-table',
      WALLET_OPERATION_TYPES: 'final_credit,recalculation_debit,deposit,withdrawal',
      CALLBACK_MODE: 'inbox',
      INBOX_POLL_INTERVAL_MS: '20',
      WALLET_POLL_INTERVAL_MS: '20',
      WALLET_RETRY_BASE_MS: '20',
    },
    { extensions: [partnerExtension] },
  );

  const partner = async (account: string) =>
    (
      await t.db.query<{ transaction_id: string; amount: string }>(
        `SELECT transaction_id, amount::text FROM partner_wallet.transactions WHERE account_id = $1 ORDER BY applied_at, transaction_id`,
        [account],
      )
    ).rows.map((r) => `${r.transaction_id} ${r.amount}`);
  const partnerBalance = async (account: string) =>
    (
      await t.db.query<{ balance: string }>(
        `SELECT balance::text FROM partner_wallet.balances WHERE account_id = $1 AND currency = 'EUR'`,
        [account],
      )
    ).rows[0]?.balance;
  const outbox = async (account: string) =>
    (
      await t.db.query<{ key: string; status: string }>(
        `SELECT operation_key AS key, status FROM wallet_outbox WHERE account_id = $1 ORDER BY wallet_outbox.id`,
        [account],
      )
    ).rows.map((r) => `${r.key} ${r.status}`);
  const settled = (account: string, n: number) =>
    eventually(async () => {
      const rows = await outbox(account);
      return rows.length === n && !rows.some((r) => r.endsWith(' pending')) && rows;
    }, `${n} settled outbox rows of ${account}`);

  it('adjustments are pushed when listed; a callback applied by an inbox worker pushes its credit', async () => {
    await deposit(t.app, 'pt-a', '50.00');
    const withdrawal = await ops(t.app).post(
      '/accounts/pt-a/adjustments',
      { amount: '-20.00', currency: 'EUR', reason: 'cash out' },
      { 'idempotency-key': 'pt-a-out' },
    );
    expect(withdrawal.status).toBe(201);
    await register(t.app, 'PTA1', 'pt-a', '10.00');
    expect(
      (await deliver(t.app, batchOf('pta-1', { code: 'PTA1', status: 2, realWin: '15.75' }))).status,
    ).toBe(200);
    expect(await settled('pt-a', 3)).toEqual([
      'adjustment:dep-pt-a-50.00 delivered',
      'adjustment:pt-a-out delivered',
      'PTA1:0:final_credit delivered',
    ]);
    expect(await partner('pt-a')).toEqual([
      'adjustment:dep-pt-a-50.00 50.00',
      'adjustment:pt-a-out -20.00',
      'PTA1:0:final_credit 15.75',
    ]);
    expect(await partnerBalance('pt-a')).toBe('45.75');
  });

  it('a coupon settled before its registration pushes its credit when registered (the stake stays in the ledger)', async () => {
    await deposit(t.app, 'pt-b', '30.00');
    expect(
      (await deliver(t.app, batchOf('ptb-1', { code: 'PTB1', status: 2, realWin: '8.00' }))).status,
    ).toBe(200);
    await eventually(
      async () => (await ops(t.app).get('/coupons/PTB1')).status === 200,
      'the coupon applied',
    );
    expect((await outbox('pt-b')).filter((r) => r.startsWith('PTB1'))).toEqual([]);
    await register(t.app, 'PTB1', 'pt-b', '5.00');
    expect(await settled('pt-b', 2)).toEqual([
      'adjustment:dep-pt-b-30.00 delivered',
      'PTB1:0:final_credit delivered',
    ]);
    expect(await partnerBalance('pt-b')).toBe('38.00');
  });

  it('the connector refuses a debit the partner balance cannot cover: parked and flagged, like any connector', async () => {
    await deposit(t.app, 'pt-c', '10.00');
    await register(t.app, 'PTC1', 'pt-c', '10.00');
    await deliver(t.app, batchOf('ptc-1', { code: 'PTC1', status: 2, realWin: '30.00' }));
    await settled('pt-c', 2);
    // The player spent the win in the partner's wallet.
    await t.db.query(`UPDATE partner_wallet.balances SET balance = 5.00 WHERE account_id = 'pt-c'`);
    await deliver(t.app, batchOf('ptc-2', { code: 'PTC1', status: 15, realWin: '0.00' }));
    expect(
      await eventually(
        async () => (await outbox('pt-c')).find((r) => r.endsWith(' parked')),
        'the debit parked',
      ),
    ).toBe('PTC1:1:recalculation_debit parked');
    const { rows } = await t.db.query(
      `SELECT parked_reason, last_error FROM wallet_outbox WHERE operation_key = 'PTC1:1:recalculation_debit'`,
    );
    expect(rows).toEqual([{ parked_reason: 'refused', last_error: 'balance of pt-c is below 30.00 EUR' }]);
    expect(await partnerBalance('pt-c')).toBe('5.00');
    expect((await ops(t.app).get('/coupons/PTC1')).body.reviewReason).toBe('wallet_refused');
  });

  it('a transaction delivered again (its attempt lost) is applied once by the partner tables', async () => {
    await deposit(t.app, 'pt-d', '12.00');
    await settled('pt-d', 1);
    // As if the worker crashed after the connector applied it but before recording the attempt.
    await t.db.query(
      `UPDATE wallet_outbox SET status = 'pending', delivered_at = NULL WHERE operation_key = 'adjustment:dep-pt-d-12.00'`,
    );
    await settled('pt-d', 1);
    expect(await partner('pt-d')).toEqual(['adjustment:dep-pt-d-12.00 12.00']);
    expect(await partnerBalance('pt-d')).toBe('12.00');
    const detail = await ops(t.app).get(
      `/wallet/outbox/${(await t.db.query(`SELECT id FROM wallet_outbox WHERE operation_key = 'adjustment:dep-pt-d-12.00'`)).rows[0].id}`,
    );
    expect(
      detail.body.deliveryAttempts.map(
        (a: { outcome: string; answer: string }) => `${a.outcome} ${a.answer}`,
      ),
    ).toEqual(['delivered balance 12.00', 'delivered applied before']);
  });
});
