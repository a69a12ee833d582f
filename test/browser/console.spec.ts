import {
  batchOf,
  deliver,
  deposit,
  expectError,
  ops,
  quarantinedConflict,
  register,
  useTestApp,
} from '../support/test-app.js';
import { fetchRead } from '../support/http.js';
import { useBrowser } from './support/browser.js';
import { rows, signIn, watch } from './support/console.js';
import type { PageTrouble } from './support/console.js';

// The operator console at /ops (issue 30) in Debian's chromium: sign-in, what it sends and is
// sent (the CSP), a read-only key's disabled actions, every screen without a console error.

/** The Content-Security-Policy of /ops (src/console/console-pages.ts). */
const CSP =
  "default-src 'self';script-src 'self';script-src-attr 'none';style-src 'self';img-src 'self' data:;" +
  "font-src 'self';connect-src 'self';object-src 'none';base-uri 'self';form-action 'self';frame-ancestors 'none'";

describe('operator console (/ops)', () => {
  const t = useTestApp();
  const b = useBrowser();
  let trouble: PageTrouble;

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
  beforeEach(() => {
    trouble = watch(b.page);
  });
  afterEach(() => {
    expect({ errors: b.errors.map(String), ...trouble }).toEqual({ errors: [], messages: [], dialogs: [] });
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
    // The refused request is the only console error the browser logs here.
    trouble.messages = trouble.messages.filter((m) => !/status of 401/.test(m));
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
});
