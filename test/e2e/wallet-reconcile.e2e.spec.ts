import { createServer } from 'node:http';
import type pg from 'pg';
import { listen, Listening } from '../../sim/http-server.js';
import { startWallet } from '../../sim/wallet.js';
import type { RunningWallet } from '../../sim/wallet.js';
import {
  reconcileWithDatabase,
  walletExport,
  WalletExportTransaction,
  walletReconcileCommand,
} from '../../src/outbound/wallet/wallet-reconciler.js';
import { moveInWallet } from '../support/http.js';
import { batchOf, createTestApp, deliver, deposit, ops, register, TestContext } from '../support/test-app.js';
import { eventually } from '../support/wait.js';

// Issue 29, item 1 (docs/wallet.md, "Reconciliation"): `wallet:reconcile` compares what
// docs/wallet-http-contract.md defines, transactions by id, and nothing about balances, which hold
// money the receiver never pushed. Run as the CLI runs it (walletReconcileCommand), against the
// stand-in wallet and against a wallet that serves only the contract's `GET /transactions`.

const WALLET_SECRET = 'test-wallet-secret-29';

describe('wallet:reconcile compares transactions by id (issue 29)', () => {
  let wallet: RunningWallet;
  let t: TestContext;
  /** A wallet built to the contract: `GET /transactions` answers `answer()`, nothing else exists. */
  let contractWallet: Listening;
  let answer: () => { status: number; body: string } = () => ({ status: 404, body: '{}' });

  beforeAll(async () => {
    wallet = await startWallet({ port: 0, secret: WALLET_SECRET, seed: 29 });
    t = await createTestApp({
      WALLET_URL: wallet.url,
      WALLET_SECRET,
      WALLET_TIMEOUT_MS: '1000',
      WALLET_RETRY_BASE_MS: '20',
      WALLET_RETRY_MAX_MS: '100',
      WALLET_POLL_INTERVAL_MS: '20',
    });
    contractWallet = await listen(
      createServer((req, res) => {
        const { status, body } =
          req.method === 'GET' && req.url === '/transactions' ? answer() : { status: 404, body: '{}' };
        res.writeHead(status, { 'content-type': 'application/json' }).end(body);
      }),
    );
  }, 60_000);
  afterAll(async () => {
    await contractWallet?.close();
    await t?.close();
    await wallet?.close();
  });

  /** The test database as the CLI's `withCliDatabase` gives it. */
  const withDatabase = async <T>(work: (client: pg.ClientBase) => Promise<T>): Promise<T> => {
    const client = await t.db.connect();
    try {
      return await work(client);
    } finally {
      client.release();
    }
  };
  const reconcile = (url: string) => walletReconcileCommand(['--wallet-url', url], {}, withDatabase);
  const walletMove = (account: string, kind: 'deposits' | 'withdrawals', amount: string) =>
    moveInWallet(wallet.url, account, kind, amount);
  const rowsOf = async (account: string) =>
    (
      await t.db.query<{ id: string; key: string; status: string }>(
        `SELECT id::text, operation_key AS key, status FROM wallet_outbox WHERE account_id = $1 ORDER BY id`,
        [account],
      )
    ).rows;
  const allDelivered = (account: string, n: number) =>
    eventually(async () => {
      const rows = await rowsOf(account);
      return rows.length === n && rows.every((r) => r.status === 'delivered');
    }, `${n} rows of ${account} delivered`);
  const parkedRow = (account: string) =>
    eventually(async () => (await rowsOf(account)).find((r) => r.status === 'parked'), `${account} parked`);
  /** A coupon of `account` won `win`, delivered; the player spent `spent` of it in the wallet; recalculated to a loss. */
  async function spentThenRecalculated(account: string, code: string, win: string, spent: string) {
    await deposit(t.app, account, '50.00');
    await register(t.app, code, account, '10.00');
    await deliver(t.app, batchOf(`${code}-1`, { code, status: 2, realWin: win }));
    await allDelivered(account, 1);
    await walletMove(account, 'withdrawals', spent);
    await deliver(t.app, batchOf(`${code}-2`, { code, status: 15, realWin: '0.00' }));
    return parkedRow(account);
  }

  it("docs/wallet.md's typical case: the debit parked for funds, the wallet topped up, retried, delivered: exit 0, no difference", async () => {
    const parked = await spentThenRecalculated('r-a', 'RA1', '40.00', '35.00');
    expect(parked.key).toBe('RA1:1:recalculation_debit');
    // The player deposits 50.00 in the wallet; the operator retries the row; it is delivered.
    await walletMove('r-a', 'deposits', '50.00');
    expect((await ops(t.app, 'operator').post(`/wallet/outbox/${parked.id}/retry`, {})).status).toBe(200);
    await allDelivered('r-a', 2);
    // The wallet's balance holds the player's own deposit: 40 - 35 + 50 - 40.
    expect(wallet.balances()).toEqual([{ accountId: 'r-a', currency: 'EUR', balance: '15.00' }]);

    expect(await reconcile(wallet.url)).toEqual({
      code: 0,
      stdout:
        'wallet reconciliation: 2 pushed operations (2 delivered, 0 pending of which 0 applied by the wallet already, 0 parked, 0 skipped); the wallet lists 2 transactions; compared by transaction id (balances are not compared: they hold money the receiver did not push)\n' +
        'no difference\n',
      stderr: '',
    });
  });

  it('a wallet that serves only the contract: every kind of difference, by transaction id', async () => {
    // r-b: a debit parked; r-c: a debit skipped by an operator (settled by hand).
    const parked = await spentThenRecalculated('r-b', 'RB1', '20.00', '20.00');
    const skippedRow = await spentThenRecalculated('r-c', 'RC1', '30.00', '30.00');
    const skip = await ops(t.app, 'operator').post(`/wallet/outbox/${skippedRow.id}/skip`, {
      reason: 'debited by hand, ticket OPS-29',
    });
    expect(skip.status).toBe(200);
    const exported = wallet.transactions();
    answer = () => ({ status: 200, body: JSON.stringify({ transactions: exported }) });
    expect(await reconcile(contractWallet.url)).toMatchObject({ code: 0, stderr: '' });

    const byId = (id: string) => exported.find((x) => x.transactionId === id) as WalletExportTransaction;
    const forged = [
      // RA1:0:final_credit missing; RA1:1:recalculation_debit listed twice.
      byId('RA1:1:recalculation_debit'),
      byId('RA1:1:recalculation_debit'),
      { ...byId('RB1:0:final_credit'), amount: '20.01' },
      { ...byId('RC1:0:final_credit'), direction: 'debit', accountId: 'r-x', currency: 'USD' },
      // The parked and the skipped debits applied; one transaction the receiver never pushed.
      { ...byId('RA1:1:recalculation_debit'), transactionId: parked.key, accountId: 'r-b', amount: '20.00' },
      {
        ...byId('RA1:1:recalculation_debit'),
        transactionId: skippedRow.key,
        accountId: 'r-c',
        amount: '30.00',
      },
      { ...byId('RA1:1:recalculation_debit'), transactionId: 'deposit-77', type: 'deposit', amount: '5' },
    ];
    answer = () => ({ status: 200, body: JSON.stringify({ transactions: forged }) });
    const report = await reconcile(contractWallet.url);
    expect(report.code).toBe(1);
    expect(report.stdout.split('\n')).toEqual([
      'wallet reconciliation: 6 pushed operations (4 delivered, 0 pending of which 0 applied by the wallet already, 1 parked, 1 skipped); the wallet lists 7 transactions; compared by transaction id (balances are not compared: they hold money the receiver did not push)',
      '  applied_twice RA1:1:recalculation_debit: listed twice by the wallet',
      '  missing_in_wallet RA1:0:final_credit: delivered credit 40.00 EUR r-a',
      '  fields_differ RB1:0:final_credit: ledger final_credit credit 20.00 EUR r-b, wallet final_credit credit 20.01 EUR r-b',
      '  applied_but_parked RB1:1:recalculation_debit: parked debit 20.00 EUR r-b',
      '  fields_differ RC1:0:final_credit: ledger final_credit credit 30.00 EUR r-c, wallet final_credit debit 30.00 USD r-x',
      '  applied_but_skipped RC1:1:recalculation_debit: skipped debit 30.00 EUR r-c',
      '  unknown_to_ledger deposit-77: debit 5 EUR r-a',
      '7 difference(s)',
      '',
    ]);
  });

  it('an export the receiver cannot read, or not of the contract: no comparison, the reason with the URL', async () => {
    const where = `${contractWallet.url}/transactions`;
    answer = () => ({ status: 503, body: '{"error":"unavailable"}' });
    await expect(reconcile(contractWallet.url)).rejects.toThrow(
      `cannot read the wallet's export GET ${where}: HTTP 503`,
    );
    answer = () => ({ status: 200, body: 'not json' });
    await expect(reconcile(contractWallet.url)).rejects.toThrow(
      `cannot read the wallet's export GET ${where}: `,
    );
    answer = () => ({
      status: 200,
      body: JSON.stringify({ transactions: [{ transactionId: 'a:0:final_credit' }] }),
    });
    await expect(reconcile(contractWallet.url)).rejects.toThrow(
      `the wallet's export GET ${where} is not the contract's (docs/wallet-http-contract.md): "transactions[0].direction" is required`,
    );
    answer = () => ({
      status: 200,
      body: JSON.stringify({
        transactions: [
          {
            transactionId: 'a:0:final_credit',
            direction: 'credit',
            type: 'final_credit',
            accountId: 'p',
            amount: '-1.00',
            currency: 'EUR',
          },
        ],
      }),
    });
    await expect(reconcile(contractWallet.url)).rejects.toThrow(
      `"transactions[0].amount" must be a positive decimal string such as "12.50"`,
    );
  });

  it('operations written or retried after the ledger was read and delivered before the export: no difference', async () => {
    const parked = await spentThenRecalculated('r-d', 'RD1', '10.00', '10.00');
    await register(t.app, 'RD2', 'r-d', '1.00');
    const report = await withDatabase((client) =>
      reconcileWithDatabase(
        client,
        async () => {
          // Between the ledger's read and the export's: the parked debit retried and delivered,
          // then a new coupon settled and its credit delivered.
          await walletMove('r-d', 'deposits', '10.00');
          expect((await ops(t.app, 'operator').post(`/wallet/outbox/${parked.id}/retry`, {})).status).toBe(
            200,
          );
          await deliver(t.app, batchOf('RD2-1', { code: 'RD2', status: 2, realWin: '2.00' }));
          await allDelivered('r-d', 3);
          return walletExport(wallet.url, 2000);
        },
        (amount, currency) => t.config.money.currencies.format(amount.toFixed(), currency),
      ),
    );
    expect(report.differences).toEqual([]);
    expect(report.operations).toEqual({ pending: 0, delivered: 7, parked: 1, skipped: 1 });
  });
});
