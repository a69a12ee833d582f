import { join } from 'node:path';
import type { Page } from 'playwright-core';
import {
  attemptsWritten,
  batchOf,
  deliver,
  deposit,
  expectError,
  ops,
  quarantinedConflict,
  register,
  useTestApp,
} from '../support/test-app.js';
import { seriousViolations } from './support/axe.js';
import { SCREENSHOT_DIR, useBrowser } from './support/browser.js';
import { rows, signIn, useCleanPages } from './support/console.js';

// The console as a person and axe-core see it (issue 38, item 12), on a receiver with SportAPI
// polling off and no wallet connector (the test app's defaults): no serious or critical axe
// violation on any screen, readable colours when hovered, one column at 375 px without
// horizontal scrolling, the day's chart drawn, and what each screen says about what it shows.

/** Every screen of the console with a record to show (paths under the app's URL). */
const SCREENS: [path: string, heading: string][] = [
  ['/ops', 'Overview'],
  ['/ops/coupons', 'Coupons'],
  ['/ops/coupons/000000000501', 'Coupon 000000000501'],
  ['/ops/quarantine', 'Quarantine'],
  ['/ops/quarantine/1', 'Quarantined body 1'],
  ['/ops/deliveries', 'Batches and deliveries'],
  ['/ops/batches/b-review-1', 'Batch b-review-1'],
  ['/ops/wallet', 'Wallet outbox'],
  ['/ops/events', 'Settlement events'],
  ['/ops/accounts', 'Accounts'],
  ['/ops/accounts/player-5', 'Account player-5'],
  ['/ops/bulk-actions', 'Bulk actions'],
  ['/ops/operator-actions', 'Operator actions'],
  ['/ops/search?q=b-review-1', 'Search: b-review-1'],
];

/** WCAG contrast ratio of two `rgb(r, g, b)` colours. */
function contrast(a: string, b: string): number {
  const lum = (rgb: string) => {
    const [r, g, bl] = rgb
      .match(/\d+(\.\d+)?/g)!
      .slice(0, 3)
      .map((v) => Number(v) / 255)
      .map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl;
  };
  const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

/** Text and background colour of the first element `selector` selects, as computed now. */
async function coloursOf(page: Page, selector: string): Promise<[string, string]> {
  return (await page.evaluate(
    `(() => { const s = getComputedStyle(document.querySelector(${JSON.stringify(selector)})); return [s.color, s.backgroundColor]; })()`,
  )) as [string, string];
}

/** Opens `path` (signed in) and waits for its heading and its data. */
async function open(page: Page, url: string, path: string, heading: string): Promise<void> {
  await page.goto(`${url}${path}`);
  await page.getByRole('heading', { name: heading, exact: true }).waitFor();
  await page.waitForLoadState('networkidle');
  await page.locator('text=Loading…').waitFor({ state: 'detached' });
}

describe('operator console: accessibility and what a person sees (issue 38)', () => {
  const t = useTestApp();
  const b = useBrowser();
  const trouble = useCleanPages(b);

  beforeAll(async () => {
    await deposit(t.app, 'player-5', '100.00');
    await register(t.app, '000000000501', 'player-5', '10.00');
    await register(t.app, '000000000502', 'player-5', '5.00');
    await deliver(t.app, batchOf('b-review-1', { code: '000000000501', status: 2, realWin: '20.00' }));
    // A status code STATUS_MAP does not know: stored, flagged, no money.
    await deliver(t.app, batchOf('b-review-2', { code: '000000000502', status: 99 }));
    // A signed body that is not JSON, and a well-formed one with a wrong signature.
    expectError(await deliver(t.app, '{"batchId": "b-review-3", '), 400, 'malformed_json');
    expectError(
      await deliver(t.app, batchOf('b-review-4', { code: '000000000503', status: 2 }), {
        signature: `sha256=${'0'.repeat(64)}`,
      }),
      401,
      'invalid_signature',
    );
    await quarantinedConflict(t, batchOf('b-review-5', { code: '000000000504', status: 4 }));
    // Fifteen operator actions, each with its details.
    for (let i = 1; i <= 8; i++) {
      expect(
        (await ops(t.app, 'operator').post('/wallet/pause', { reason: `maintenance ${i}` })).status,
      ).toBe(200);
      if (i < 8) expect((await ops(t.app, 'operator').post('/wallet/resume', {})).status).toBe(200);
    }
    await attemptsWritten(t);
  }, 60_000);

  it('no serious or critical axe-core violation on any screen, nor in a confirmation dialog', async () => {
    await b.page.goto(`${t.url}/ops`);
    await b.page.getByLabel('API key').waitFor();
    const found: Record<string, unknown> = { 'sign-in': await seriousViolations(b.page) };
    await signIn(b.page, t.url, 'legacy');
    for (const [path, heading] of SCREENS) {
      await open(b.page, t.url, path, heading);
      found[path] = await seriousViolations(b.page);
    }
    await open(b.page, t.url, '/ops/wallet', 'Wallet outbox');
    await b.page.getByRole('button', { name: 'Resume delivery' }).click();
    await b.page.getByRole('dialog').waitFor();
    found['dialog'] = await seriousViolations(b.page);
    expect(found).toEqual(Object.fromEntries(Object.keys(found).map((k) => [k, []])));
  }, 240_000);

  it('a selected filter tab keeps its contrast when hovered; so does the ok badge', async () => {
    await signIn(b.page, t.url, 'legacy', '/ops/wallet');
    const tab = b.page.getByRole('group', { name: 'outbox state' }).getByRole('button', { name: 'parked' });
    expect(await tab.getAttribute('aria-pressed')).toBe('true');
    await tab.hover();
    const colours = await coloursOf(b.page, '.filters button[aria-pressed="true"]');
    expect(contrast(...colours)).toBeGreaterThanOrEqual(4.5);
    // The ok badge (delivery "running" of a publisher, outcomes "processed") on its background.
    await open(b.page, t.url, '/ops/deliveries', 'Batches and deliveries');
    const ok = await coloursOf(b.page, '.badge.ok');
    expect(contrast(...ok)).toBeGreaterThanOrEqual(4.5);
  });

  it('at 375 px wide: one column, no screen scrolls sideways', async () => {
    await b.page.setViewportSize({ width: 375, height: 800 });
    await signIn(b.page, t.url, 'legacy');
    const wide: Record<string, number> = {};
    for (const [path, heading] of SCREENS) {
      await open(b.page, t.url, path, heading);
      const width = (await b.page.evaluate('document.documentElement.scrollWidth')) as number;
      if (width > 375) wide[path] = width;
      // Each screen as a person at 375 px sees it, for a look (gitignored, as every screenshot).
      await b.page.screenshot({
        path: join(SCREENSHOT_DIR, 'console-review.spec', `375px${path.replace(/[^a-z0-9]+/gi, '-')}.png`),
        fullPage: true,
      });
    }
    expect(wide).toEqual({});
    // The navigation is above the content, not beside it.
    const nav = await b.page.getByRole('navigation', { name: 'screens' }).boundingBox();
    const main = await b.page.locator('main.content').boundingBox();
    expect(main!.y).toBeGreaterThanOrEqual(nav!.y + nav!.height);
    expect(main!.width).toBeGreaterThan(350);
  }, 180_000);

  it('the last day: a few deliveries are bars of ten minutes, wide enough to see', async () => {
    await signIn(b.page, t.url, 'legacy');
    await b.page.locator('figure.chart canvas').nth(1).waitFor();
    await b.page.waitForTimeout(300);
    // The widest run of columns holding the colour of `processed` (#2e7d32) in the right quarter
    // (the last minutes; the legend's swatch is left of it): one minute of a day's 1440 was under
    // a pixel wide, drawn as a faint smear.
    const widest = (await b.page.evaluate(`(() => {
      const c = document.querySelectorAll('figure.chart canvas')[1];
      const { data, width, height } = c.getContext('2d').getImageData(0, 0, c.width, c.height);
      const near = (i) => Math.abs(data[i] - 0x2e) + Math.abs(data[i + 1] - 0x7d) + Math.abs(data[i + 2] - 0x32) < 12;
      let best = 0, run = 0;
      for (let x = Math.floor(width * 0.75); x < width; x++) {
        let hit = false;
        for (let y = 0; y < height && !hit; y++) hit = near((y * width + x) * 4);
        run = hit ? run + 1 : 0;
        best = Math.max(best, run);
      }
      return best;
    })()`)) as number;
    expect(widest).toBeGreaterThanOrEqual(4);
    expect(await b.page.locator('figure.chart canvas').nth(1).getAttribute('aria-label')).toBe(
      'Last day: deliveries per 10 minutes by outcome',
    );
  });

  it('the operator actions: details readable in a wide column, eighteen rows on a screen or two', async () => {
    await signIn(b.page, t.url, 'legacy', '/ops/operator-actions');
    const table = b.page.getByRole('table', { name: 'operator actions' });
    await table.locator('tbody tr').nth(14).waitFor();
    // 18 rows: the 15 above, two registrations and a deposit.
    expect(await table.locator('tbody tr').count()).toBe(18);
    const details = await table.locator('td.details').first().boundingBox();
    expect(details!.width).toBeGreaterThanOrEqual(240);
    // The table fits the screen (no sideways scrolling) and a row is a line or two, not seven.
    const fits = (await b.page.evaluate(
      `(() => { const m = document.querySelector('main.content'); return m.scrollWidth <= m.clientWidth; })()`,
    )) as boolean;
    expect(fits).toBe(true);
    const height = (await b.page.evaluate('document.documentElement.scrollHeight')) as number;
    expect(height).toBeLessThan(1500);
  });

  it('says what it shows: no batch id, status kinds, UTC times, polling off, no wallet connector', async () => {
    await signIn(b.page, t.url, 'legacy', '/ops/deliveries');
    await b.page.getByRole('table', { name: 'delivery attempts' }).locator('tbody tr').nth(3).waitFor();
    const attempts = (await rows(b.page, 'delivery attempts')).map((r) => [r[1], r[2], r[4]]);
    expect(attempts).toEqual(
      expect.arrayContaining([
        ['— (no valid batch id in the body)', 'rejected', 'malformed_json'],
        ['— (signature not verified)', 'unauthorized', 'invalid_signature'],
      ]),
    );

    // Status codes with their kinds (CONTRACT §6, STATUS_MAP).
    await open(b.page, t.url, '/ops/coupons?needsReview=false', 'Coupons');
    const coupons = await b.page
      .locator('table tbody tr')
      .evaluateAll((trs: { querySelectorAll(s: string): ArrayLike<{ textContent: string | null }> }[]) =>
        trs.map((tr) => Array.from(tr.querySelectorAll('td'), (td) => td.textContent ?? '')),
      );
    expect(coupons.map((r) => [r[0], r[3]])).toContainEqual(['000000000501', '2 WIN']);
    await open(b.page, t.url, '/ops/coupons/000000000502', 'Coupon 000000000502');
    expect(await b.page.locator('.facts').getByText('99 UNKNOWN').count()).toBe(1);
    expect((await rows(b.page, 'snapshots')).map((r) => r[2])).toEqual(['99 UNKNOWN']);

    // Polling is off: Reconcile now is not offered (it would answer 501), and the page says why.
    expect(await b.page.getByRole('button', { name: 'Reconcile now' }).count()).toBe(0);
    expect((await b.page.getByLabel('reconcile').innerText()).replace(/\s+/g, ' ')).toContain(
      'No Reconcile now: SportAPI polling is off on this receiver (SPORTAPI_BASE_URL is not set)',
    );

    // A search hit's times as everywhere else: UTC, the local time on hover.
    await open(b.page, t.url, '/ops/search?q=b-review-1', 'Search: b-review-1');
    const hit = await b.page.getByRole('table', { name: 'search results' }).locator('tbody tr td').nth(1);
    expect(await hit.innerText()).toMatch(/committed \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC/);
    expect(await hit.innerText()).not.toMatch(/\d\dT\d\d:/);
    expect(await hit.locator('time').first().getAttribute('title')).toMatch(/, local time\)$/);

    // No wallet connector: the outbox delivers nothing, whatever its pause state.
    await open(b.page, t.url, '/ops/wallet', 'Wallet outbox');
    const facts = (await b.page.locator('.facts').first().innerText()).replace(/\s+/g, ' ');
    expect(facts).toContain('connector none configured');
    expect(facts).toContain(
      'delivery no connector no wallet rows are written or delivered: WALLET_CONNECTOR is none',
    );
    expect(facts).not.toContain('running');
    await open(b.page, t.url, '/ops', 'Overview');
    const card = b.page.getByRole('article', { name: 'Wallet outbox' });
    expect((await card.innerText()).replace(/\s+/g, ' ')).toContain('delivery no connector');
    expect(trouble.messages).toEqual([]);
  });
});
