import { startWallet } from '../../sim/wallet.js';
import type { RunningWallet } from '../../sim/wallet.js';
import { batchOf, createTestApp, deliver, deposit, ops, register } from '../support/test-app.js';
import type { TestContext } from '../support/test-app.js';
import { moveInWallet } from '../support/http.js';
import { eventually } from '../support/wait.js';
import { useBrowser } from './support/browser.js';
import { rows, signIn, useCleanPages } from './support/console.js';

// The wallet outbox in the operator console (issue 30), against the simulator's stand-in wallet
// (sim/wallet.ts) as in test/e2e/wallet.e2e.spec.ts: a recalculation debit the wallet refuses
// (the player spent the winnings) parks; once the money is back, an operator retries it here.

const WALLET_SECRET = 'test-wallet-secret-console';

describe('operator console: wallet outbox', () => {
  let wallet: RunningWallet;
  let t: TestContext;
  const b = useBrowser();
  useCleanPages(b);
  let parkedId: string;

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
    await deposit(t.app, 'w-d', '50.00');
    await register(t.app, 'WD1', 'w-d', '10.00');
    await deliver(t.app, batchOf('wd-1', { code: 'WD1', status: 2, realWin: '40.00' }));
    await eventually(
      async () => wallet.transactions().some((x) => x.transactionId === 'WD1:0:final_credit'),
      'the credit delivered',
    );
    // The player spends the winnings in the wallet: the recalculation debit cannot be taken.
    await moveInWallet(wallet.url, 'w-d', 'withdrawals', '35.00');
    await deliver(t.app, batchOf('wd-2', { code: 'WD1', status: 15, realWin: '0.00' }));
    parkedId = await eventually(async () => {
      const { rows: parked } = await t.db.query<{ id: string }>(
        `SELECT id::text FROM wallet_outbox WHERE status = 'parked' AND operation_key = 'WD1:1:recalculation_debit'`,
      );
      return parked[0]?.id;
    }, 'the debit parked');
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await wallet?.close();
  });

  it('a parked row: its attempts and the refusal; retried after a confirmation, then delivered', async () => {
    await signIn(b.page, t.url, 'operator', '/ops/wallet');
    await b.page.getByRole('table', { name: 'outbox rows' }).waitFor();
    expect((await rows(b.page, 'outbox rows')).map((r) => r.slice(0, 6))).toEqual([
      [parkedId, 'WD1:1:recalculation_debit', 'w-d', '40.00 EUR', 'parked refused', '1'],
    ]);
    // A later credit of the same player waits behind the parked row, and says so (issue 38).
    await register(t.app, 'WD2', 'w-d', '1.00');
    await deliver(t.app, batchOf('wd-3', { code: 'WD2', status: 2, realWin: '3.00' }));
    const { rows: held } = await t.db.query<{ id: string }>(
      `SELECT id::text FROM wallet_outbox WHERE operation_key = 'WD2:0:final_credit' AND status = 'pending'`,
    );
    expect((await ops(t.app).get(`/wallet/outbox/${held[0].id}`)).body.heldBy).toBe(parkedId);
    await b.page
      .getByRole('group', { name: 'outbox state' })
      .getByRole('button', { name: 'pending' })
      .click();
    await b.page.getByRole('table', { name: 'outbox rows' }).getByText('WD2:0:final_credit').waitFor();
    expect((await rows(b.page, 'outbox rows')).map((r) => [r[1], r[4]])).toEqual([
      [
        'WD2:0:final_credit',
        `pending held behind parked row ${parkedId} of its account: retry or skip that one first`,
      ],
    ]);
    await b.page.getByRole('group', { name: 'outbox state' }).getByRole('button', { name: 'parked' }).click();
    await b.page.getByRole('link', { name: parkedId, exact: true }).click();
    await b.page.getByRole('heading', { name: `Outbox row ${parkedId}` }).waitFor();
    await b.page
      .getByRole('table', { name: 'wallet delivery attempts' })
      .locator('tbody tr')
      .first()
      .waitFor();
    expect((await rows(b.page, 'wallet delivery attempts')).map((r) => [r[0], r[2], r[3], r[4]])).toEqual([
      ['1', 'http', 'refused', '402'],
    ]);

    // The money is back in the wallet; the operator releases the row.
    await moveInWallet(wallet.url, 'w-d', 'deposits', '35.00');
    await b.page.getByRole('button', { name: 'Retry' }).click();
    const dialog = b.page.getByRole('dialog');
    expect((await dialog.innerText()).replace(/\s+/g, ' ')).toContain(
      `Row ${parkedId} becomes pending again, due at once, with a new retry budget; the wallet gets the same transaction id WD1:1:recalculation_debit`,
    );
    await dialog.getByRole('button', { name: 'Confirm: Retry' }).click();
    const answer = b.page.getByRole('status', { name: 'server answer' });
    await answer.waitFor();
    expect(await answer.locator('p').innerText()).toBe('Server answered 200');
    expect(JSON.parse(await answer.getByLabel('answer body').innerText())).toMatchObject({
      id: parkedId,
      status: 'pending',
      retriedBy: 'operator',
    });

    await eventually(
      async () => (await ops(t.app).get(`/wallet/outbox/${parkedId}`)).body.status === 'delivered',
      'the retried row delivered',
    );
    await eventually(
      async () => (await ops(t.app).get(`/wallet/outbox/${held[0].id}`)).body.status === 'delivered',
      'the held row delivered after it',
    );
    await b.page.reload();
    await b.page
      .getByRole('table', { name: 'wallet delivery attempts' })
      .locator('tbody tr')
      .nth(1)
      .waitFor();
    expect((await rows(b.page, 'wallet delivery attempts')).map((r) => [r[0], r[3], r[4]])).toEqual([
      ['1', 'refused', '402'],
      ['2', 'delivered', '200'],
    ]);
    expect(await b.page.getByRole('button', { name: 'Retry' }).isDisabled()).toBe(true);
    expect(
      wallet
        .transactions()
        .filter((x) => x.accountId === 'w-d')
        .map((x) => `${x.transactionId} ${x.direction} ${x.amount}`),
    ).toEqual([
      'WD1:0:final_credit credit 40.00',
      'WD1:1:recalculation_debit debit 40.00',
      'WD2:0:final_credit credit 3.00',
    ]);
  });

  it('pause and resume, each confirmed and answered', async () => {
    await signIn(b.page, t.url, 'operator', '/ops/wallet');
    await b.page.getByLabel('Pause reason').fill('wallet maintenance 02:00-02:30');
    await b.page.getByRole('button', { name: 'Pause delivery' }).click();
    await b.page.getByRole('dialog').getByRole('button', { name: 'Confirm: Pause delivery' }).click();
    await b.page.getByRole('button', { name: 'Resume delivery' }).waitFor();
    expect((await ops(t.app).get('/wallet/status')).body).toMatchObject({
      paused: true,
      reason: 'wallet maintenance 02:00-02:30',
      changedBy: 'operator',
    });
    await b.page.getByRole('button', { name: 'Resume delivery' }).click();
    await b.page.getByRole('dialog').getByRole('button', { name: 'Confirm: Resume delivery' }).click();
    await b.page.getByRole('button', { name: 'Pause delivery' }).waitFor();
    expect((await ops(t.app).get('/wallet/status')).body).toMatchObject({
      paused: false,
      changedBy: 'operator',
    });
  });
});
