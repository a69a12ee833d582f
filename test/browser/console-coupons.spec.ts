import {
  balance,
  batchOf,
  deliver,
  deposit,
  operations,
  ops,
  register,
  useTestApp,
} from '../support/test-app.js';
import { useBrowser } from './support/browser.js';
import { rows, signIn, useCleanPages } from './support/console.js';

// A flagged coupon in the operator console (issue 30): found through the search box, resolved with
// an amount and a reason after a confirmation; the answer, the coupon's operations and the
// operator actions log after it.

describe('operator console: find a flagged coupon and resolve it', () => {
  const t = useTestApp();
  const b = useBrowser();
  useCleanPages(b);

  beforeAll(async () => {
    await deposit(t.app, 'player-7', '50.00');
    await register(t.app, 'CPN-7001', 'player-7', '10.00');
    await deliver(t.app, batchOf('b-7001-1', { code: 'CPN-7001', status: 2, realWin: '40.00' }));
    // A late batch with another final result: not paid, flagged conflicting_result (CONTRACT §6).
    await deliver(t.app, batchOf('b-7001-2', { code: 'CPN-7001', status: 2, realWin: '45.50' }));
    expect((await ops(t.app).get('/coupons/CPN-7001')).body).toMatchObject({
      needsReview: true,
      reviewReason: 'conflicting_result',
    });
  });

  it('search → coupon → resolve: confirmed, answered 201, operations posted once', async () => {
    await signIn(b.page, t.url, 'operator');
    // The search box, from the keyboard.
    await b.page.getByLabel('Search any id').focus();
    await b.page.keyboard.type('CPN-7001');
    await b.page.keyboard.press('Enter');
    await b.page.getByRole('heading', { name: 'Search: CPN-7001' }).waitFor();
    await b.page.getByRole('table', { name: 'search results' }).waitFor();
    expect(await rows(b.page, 'search results')).toEqual([
      ['coupon', 'coupon CPN-7001: player-7, EUR, status 2 WIN, needs review (conflicting_result)'],
    ]);
    await b.page.getByRole('link', { name: /^coupon CPN-7001/ }).click();
    await b.page.getByRole('heading', { name: 'Coupon CPN-7001' }).waitFor();
    await b.page.getByRole('table', { name: 'snapshots' }).waitFor();
    expect((await rows(b.page, 'snapshots')).map((r) => r.slice(1))).toEqual([
      ['b-7001-2', '2 WIN', '45.50 EUR', 'conflicting_result', '0', 'history only', 'none'],
      ['b-7001-1', '2 WIN', '40.00 EUR', 'settled', '0', 'yes', 'CPN-7001:0:final_credit 40.00 EUR'],
    ]);

    const form = b.page.getByRole('form', { name: 'resolve' });
    const resolve = form.getByRole('button', { name: 'Resolve' });
    expect(await resolve.isDisabled()).toBe(true);
    await form.getByLabel(/^realWin/).fill('45.50');
    await form.getByLabel('Reason').fill('confirmed with SportAPI support, ticket 4711');
    await form.getByLabel('Resolved by').fill('jane.doe@bookmaker.example');
    await resolve.click();
    const dialog = b.page.getByRole('dialog');
    expect((await dialog.innerText()).replace(/\s+/g, ' ')).toContain(
      'Coupon CPN-7001 is settled by hand at realWin 45.50 EUR.',
    );
    // Nothing is sent before the confirmation.
    expect((await ops(t.app).get('/coupons/CPN-7001')).body.needsReview).toBe(true);
    await dialog.getByRole('button', { name: 'Confirm: Resolve' }).click();
    const answer = b.page.getByRole('status', { name: 'server answer' });
    await answer.waitFor();
    expect(await answer.locator('p').innerText()).toBe('Server answered 201');
    const body = JSON.parse(await answer.getByLabel('answer body').innerText());
    expect(body.resolution).toMatchObject({
      coupon_code: 'CPN-7001',
      realWin: '45.50',
      reason: 'confirmed with SportAPI support, ticket 4711',
      resolvedBy: 'jane.doe@bookmaker.example',
      actor: 'operator',
      transition: 'resettled',
      generation: 1,
      operations: ['CPN-7001:1:recalculation_debit=40.00', 'CPN-7001:1:final_credit=45.50'],
    });
    expect(body.resolution.idempotencyKey).toMatch(/^console-[0-9a-f]{32}$/);

    // The coupon's screen reloads: no flag, the operations of generation 1, once.
    await b.page.getByRole('table', { name: 'operations' }).locator('tbody tr').nth(3).waitFor();
    expect(await resolve.isDisabled()).toBe(true);
    expect(await rows(b.page, 'operations')).toEqual([
      ['CPN-7001:0:stake_debit', 'stake_debit', '0', '10.00 EUR'],
      ['CPN-7001:0:final_credit', 'final_credit', '0', '40.00 EUR'],
      ['CPN-7001:1:recalculation_debit', 'recalculation_debit', '1', '40.00 EUR'],
      ['CPN-7001:1:final_credit', 'final_credit', '1', '45.50 EUR'],
    ]);
    expect(await operations(t.app, 'CPN-7001')).toEqual([
      'CPN-7001:0:final_credit=40.00',
      'CPN-7001:0:stake_debit=10.00',
      'CPN-7001:1:final_credit=45.50',
      'CPN-7001:1:recalculation_debit=40.00',
    ]);
    expect(await balance(t.app, 'player-7')).toBe('85.50');

    // Who did it: the operator actions log, filtered by action.
    await b.page.getByRole('link', { name: 'Operator actions' }).click();
    await b.page.getByLabel('Action', { exact: true }).selectOption('resolution');
    const log = b.page.getByRole('table', { name: 'operator actions' });
    await log.locator('tbody tr', { hasText: 'resolution' }).first().waitFor();
    const [logged, ...others] = await rows(b.page, 'operator actions');
    expect(others).toEqual([]);
    expect(logged.slice(1, 6)).toEqual([
      'operator',
      'resolution',
      'coupon CPN-7001',
      'confirmed with SportAPI support, ticket 4711',
      'ok',
    ]);
  });

  it('the account: balance, the statement newest first, and the CSV through fetch with the key', async () => {
    await signIn(b.page, t.url, 'reader', '/ops/accounts/player-7');
    await b.page.getByRole('table', { name: 'statement' }).waitFor();
    expect((await rows(b.page, 'statement')).map((r) => r.slice(1))).toEqual([
      ['CPN-7001:1:final_credit', 'final_credit', 'CPN-7001', '45.50 EUR', '85.50 EUR'],
      ['CPN-7001:1:recalculation_debit', 'recalculation_debit', 'CPN-7001', '-40.00 EUR', '40.00 EUR'],
      ['CPN-7001:0:final_credit', 'final_credit', 'CPN-7001', '40.00 EUR', '80.00 EUR'],
      ['CPN-7001:0:stake_debit', 'stake_debit', 'CPN-7001', '-10.00 EUR', '40.00 EUR'],
      ['adjustment:dep-player-7-50.00', 'deposit', '—', '50.00 EUR', '50.00 EUR'],
    ]);
    const requests: string[] = [];
    b.page.on('request', (r) =>
      requests.push(`${r.url()} ${r.headers().authorization ? 'with key' : 'no key'}`),
    );
    const [download] = await Promise.all([
      b.page.waitForEvent('download'),
      b.page.getByRole('button', { name: 'Download CSV' }).click(),
    ]);
    expect(download.suggestedFilename()).toBe('statement-player-7.csv');
    const csv = await (await download.createReadStream()).toArray();
    expect(Buffer.concat(csv).toString('utf8').split('\r\n')[0]).toBe(
      'entryId,at,operationKey,type,couponCode,amount,balanceAfter,currency',
    );
    expect(requests.filter((r) => r.includes('/statement'))).toEqual([
      `${t.url}/accounts/player-7/statement with key`,
    ]);
  });
});
