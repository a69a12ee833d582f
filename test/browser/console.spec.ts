import { batchOf, deliver, deposit, quarantinedConflict, register, useTestApp } from '../support/test-app.js';
import { fetchRead } from '../support/http.js';
import { useBrowser } from './support/browser.js';
import { rows, signIn, useCleanPages } from './support/console.js';

// The operator console at /ops (issue 30) in Debian's chromium: sign-in, what it sends and is
// sent (the CSP), a read-only key's disabled actions, every screen without a console error.

/** The Content-Security-Policy of /ops (src/operations/console/console-pages.ts). */
const CSP =
  "default-src 'self';script-src 'self';script-src-attr 'none';style-src 'self';img-src 'self' data:;" +
  "font-src 'self';connect-src 'self';object-src 'none';base-uri 'self';form-action 'self';frame-ancestors 'none'";

describe('operator console (/ops)', () => {
  // Polling on (nothing listens there; no scheduled runs), so Reconcile now is offered.
  const t = useTestApp({ SPORTAPI_BASE_URL: 'http://127.0.0.1:9', RECONCILE_INTERVAL: 'off' });
  const b = useBrowser();
  const trouble = useCleanPages(b);

  beforeAll(async () => {
    await deposit(t.app, 'player-42', '100.00');
    await register(t.app, '000000000272', 'player-42', '10.00');
    await register(t.app, '000000000273', 'player-42', '5.00');
    await deliver(
      t.app,
      batchOf('b-2026-11-30-000123', { code: '000000000272', status: 2, realWin: '185.50' }),
    );
    await deliver(
      t.app,
      batchOf('b-2026-11-30-000123', { code: '000000000272', status: 2, realWin: '185.50' }),
    );
    await deliver(
      t.app,
      batchOf('b-2026-11-30-000124', { code: '000000000273', status: 2, realWin: '12.00' }),
    );
    await deliver(
      t.app,
      batchOf('b-2026-11-30-000125', { code: '000000000273', status: 2, realWin: '14.00' }),
    );
    await quarantinedConflict(t, batchOf('b-2026-11-30-000126', { code: '000000000274', status: 4 }));
  });

  it('/ops sends the strict CSP; client routes load the app; a missing asset is a 404', async () => {
    const page = await fetchRead(`${t.url}/ops`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toBe(CSP);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    const route = await fetchRead(`${t.url}/ops/coupons/000000000272`);
    expect([route.status, route.text]).toEqual([200, page.text]);
    const asset = /src="(\/ops\/assets\/[^"]+\.js)"/.exec(page.text)![1];
    const script = await fetchRead(`${t.url}${asset}`);
    expect([
      script.status,
      script.headers.get('content-type'),
      script.headers.get('content-security-policy'),
    ]).toEqual([200, 'text/javascript; charset=utf-8', CSP]);
    expect(script.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect((await fetchRead(`${t.url}/ops/assets/missing.js`)).status).toBe(404);
    // The API keeps helmet's default policy.
    const api = await fetchRead(`${t.url}/health/live`);
    expect(api.headers.get('content-security-policy')).not.toBe(CSP);
  });

  it('sign in: a wrong key is explained, the right one shows its name and scopes', async () => {
    await b.page.goto(`${t.url}/ops`);
    await b.page.getByLabel('API key').fill('not-a-key-of-this-receiver');
    await b.page.getByRole('button', { name: 'Sign in' }).click();
    await b.page.getByRole('alert').waitFor();
    expect(await b.page.getByRole('alert').innerText()).toContain('The key was refused (401 unauthorized)');
    // A key without scope read cannot use the console: the 403 says which key and scopes.
    await b.page.getByLabel('API key').fill('test-placement-key-8d1e7b33');
    await b.page.getByRole('button', { name: 'Sign in' }).click();
    await b.page.getByRole('alert').getByText(/403/).waitFor();
    expect(await b.page.getByRole('alert').innerText()).toBe(
      'This key may not do that (403 insufficient_scope): this route needs scope read; key placement has register. Ask for a key with that scope.',
    );
    // The refused requests are the only console errors the browser logs here.
    expect(trouble.messages).toEqual([
      expect.stringMatching(/status of 401/),
      expect.stringMatching(/status of 403/),
    ]);
    trouble.messages = [];
    await b.page.getByLabel('API key').fill('test-operator-key-e61d0f58');
    await b.page.getByRole('button', { name: 'Sign in' }).click();
    await b.page.getByRole('button', { name: 'Sign out' }).waitFor();
    expect(await b.page.locator('.who span').innerText()).toBe('operator · read, operate');
    await b.page.getByRole('heading', { name: 'Overview' }).waitFor();
  });

  it('overview', async () => {
    await signIn(b.page, t.url, 'legacy');
    await b.page.getByRole('heading', { name: 'Overview' }).waitFor();
    await b.page.locator('figure.chart canvas').first().waitFor();
    await b.page.waitForTimeout(300);
  });

  it('a read-only key sees the actions disabled with the scope they need', async () => {
    await signIn(b.page, t.url, 'reader', '/ops/coupons/000000000273');
    await b.page.getByRole('heading', { name: 'Coupon 000000000273' }).waitFor();
    await b.page.getByRole('table', { name: 'snapshots' }).waitFor();
    await b.page.getByRole('table', { name: 'operations' }).waitFor();
    expect(await b.page.getByRole('button', { name: 'Reconcile now' }).isDisabled()).toBe(true);
    expect(await b.page.getByRole('button', { name: 'Resolve' }).isDisabled()).toBe(true);
    expect(await b.page.locator('.needs-scope').allInnerTexts()).toEqual([
      'needs scope operate',
      'needs scope operate',
    ]);
    expect(await rows(b.page, 'operations')).toEqual([
      ['000000000273:0:stake_debit', 'stake_debit', '0', '5.00 EUR'],
      ['000000000273:0:final_credit', 'final_credit', '0', '12.00 EUR'],
    ]);
  });

  it('a batch delivered twice: both attempts answered 200 with one payload hash, its operation posted once', async () => {
    await signIn(b.page, t.url, 'reader', '/ops/deliveries');
    await b.page.getByLabel('Batch id').fill('b-2026-11-30-000123');
    await b.page.getByRole('table', { name: 'delivery attempts' }).locator('tbody tr').nth(1).waitFor();
    await b.page.getByRole('link', { name: 'b-2026-11-30-000123' }).first().click();
    await b.page.getByRole('heading', { name: 'Batch b-2026-11-30-000123' }).waitFor();
    await b.page.getByRole('table', { name: 'operations posted' }).waitFor();
    const attempts = await rows(b.page, 'delivery attempts');
    expect(attempts.map((a) => a.slice(1, 5))).toEqual([
      ['processed', '200', '', '1'],
      ['duplicate', '200', '', '1'],
    ]);
    expect(new Set(attempts.map((a) => a[6])).size).toBe(1);
    // Request ids as their first 8 characters on one line, the whole id on hover, linked to search.
    expect(attempts.map((a) => a[7])).toEqual([
      expect.stringMatching(/^\S{8}…$/),
      expect.stringMatching(/^\S{8}…$/),
    ]);
    const requestLink = b.page
      .getByRole('table', { name: 'delivery attempts' })
      .locator('tbody tr td:nth-child(8) a');
    const requestId = await requestLink.first().getAttribute('title');
    expect(requestId!.startsWith(attempts[0][7].slice(0, 8))).toBe(true);
    expect(await requestLink.first().getAttribute('href')).toBe(
      `/ops/search?q=${encodeURIComponent(requestId!)}`,
    );
    // Times in UTC, the local time on hover.
    const time = b.page.getByRole('table', { name: 'delivery attempts' }).locator('time').first();
    expect(await time.innerText()).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC$/);
    expect(await time.getAttribute('title')).toMatch(/ \([^,]+, local time\)$/);
    expect(await b.page.getByRole('note').innerText()).toBe(
      "Delivered 2 times: 1 attempt(s) answered as duplicate; the batch's 1 financial operation(s) below were posted once.",
    );
    expect((await rows(b.page, 'operations posted')).map((o) => o.slice(0, 5))).toEqual([
      ['000000000272:0:final_credit', 'final_credit', '000000000272', 'player-42', '185.50 EUR'],
    ]);
    const { rows: posted } = await t.db.query(
      `SELECT count(*)::int AS n FROM financial_operations WHERE operation_key LIKE '000000000272:%:final_credit'`,
    );
    expect(posted[0].n).toBe(1);
  });

  it('every screen opens without a console error, from the keyboard too', async () => {
    await signIn(b.page, t.url, 'legacy');
    const screens: [string, string][] = [
      ['Coupons', 'Coupons'],
      ['Quarantine', 'Quarantine'],
      ['Deliveries', 'Batches and deliveries'],
      ['Wallet outbox', 'Wallet outbox'],
      ['Settlement events', 'Settlement events'],
      ['Accounts', 'Accounts'],
      ['Bulk actions', 'Bulk actions'],
      ['Operator actions', 'Operator actions'],
      ['Overview', 'Overview'],
    ];
    for (const [link, heading] of screens) {
      // Focus the link and follow it with Enter, as a keyboard user would.
      await b.page.getByRole('link', { name: link, exact: true }).focus();
      await b.page.keyboard.press('Enter');
      await b.page.getByRole('heading', { name: heading, exact: true }).waitFor();
      await b.page.waitForLoadState('networkidle');
    }
    // Records' screens, reached through links.
    for (const path of [
      '/ops/coupons/000000000272',
      '/ops/quarantine/1',
      '/ops/batches/b-2026-11-30-000126',
      '/ops/accounts/player-42',
      '/ops/search?q=player-42',
      '/ops/no-such-screen',
    ]) {
      await b.page.goto(`${t.url}${path}`);
      await b.page.locator('main.content h1, main.content p').first().waitFor();
      await b.page.waitForLoadState('networkidle');
    }
    expect(await b.page.locator('main.content').innerText()).toBe('No such screen. Start from the overview.');
  });

  it('the key stays in this tab only, and goes out only as Authorization', async () => {
    const urls: string[] = [];
    b.page.on('request', (r) => urls.push(r.url()));
    await signIn(b.page, t.url, 'operator', '/ops/coupons');
    await b.page.getByRole('heading', { name: 'Coupons' }).waitFor();
    // (Page code as text: the tests compile without the DOM's types.)
    const stored = await b.page.evaluate(`({
      session: Object.values(sessionStorage),
      local: Object.keys(localStorage).length,
      cookie: document.cookie,
    })`);
    expect(stored).toEqual({ session: ['test-operator-key-e61d0f58'], local: 0, cookie: '' });
    expect(urls.filter((u) => u.includes('test-operator-key'))).toEqual([]);
    // A reload keeps the session of the tab; Sign out forgets it.
    await b.page.reload();
    await b.page.getByRole('heading', { name: 'Coupons' }).waitFor();
    await b.page.getByRole('button', { name: 'Sign out' }).click();
    await b.page.getByLabel('API key').waitFor();
    expect(await b.page.evaluate('sessionStorage.length')).toBe(0);
  });
});
