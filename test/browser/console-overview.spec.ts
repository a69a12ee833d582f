import { copyFileSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  attemptsWritten,
  batchOf,
  deliver,
  deposit,
  expectError,
  register,
  useTestApp,
} from '../support/test-app.js';
import { useBrowser } from './support/browser.js';
import { signIn, useCleanPages } from './support/console.js';

// The console's first screen with a day of traffic (issue 30): the cards and both charts as an
// operator sees them. Its screenshot is the README's (docs/console-overview.png), copied there
// when UPDATE_DOCS_SCREENSHOT=1.

/**
 * A day of earlier deliveries, minute by minute (before the current one): a daily curve of
 * processed batches with their redeliveries, and a bad deploy two hours ago whose batches were
 * refused for 20 minutes. Written as the receiver records attempts; nothing else depends on them.
 */
const HISTORY = `
  WITH m AS (
    SELECT i, date_trunc('minute', now()) - make_interval(mins => i) AS minute
      FROM generate_series(1, 1439) AS i),
  n AS (
    SELECT minute, i,
           (14 + round(9 * sin(i / 229.0)) + (i * 7919) % 7 - 3)::int AS processed,
           (1 + (i % 7 = 0)::int + (i % 11 = 0)::int) AS duplicate,
           CASE WHEN i BETWEEN 100 AND 119 THEN 6 + i % 5 ELSE (i % 97 = 0)::int END AS rejected,
           (i % 149 = 0)::int AS conflict,
           (i % 61 = 0)::int AS failed
      FROM m)
  INSERT INTO delivery_attempts (batch_id, request_id, received_at, outcome, http_status, error_code, coupon_count, duration_ms, payload_hash)
  SELECT 'hist-' || i || '-' || o.outcome || '-' || k, 'hist-' || i || '-' || k,
         minute + make_interval(secs => (k * 7) % 60), o.outcome, o.status, o.code, 1 + k % 40, 8 + k % 30, repeat('a', 64)
    FROM n
    CROSS JOIN LATERAL (VALUES ('processed', 200, NULL, n.processed), ('duplicate', 200, NULL, n.duplicate),
                               ('rejected', 400, 'validation_failed', n.rejected), ('conflict', 409, 'batch_conflict', n.conflict),
                               ('failed', 503, 'transient_failure', n.failed)) AS o(outcome, status, code, count)
    CROSS JOIN LATERAL generate_series(1, o.count) AS k`;

/** Coupon `c` of player `p`: twelve digits, as SportAPI's. */
const couponCode = (p: number, c: number) => String(1000 + p * 10 + c).padStart(12, '0');

describe('operator console: the overview with a day of traffic', () => {
  // No rollup: the history is written after the app starts, so every minute is counted live.
  const t = useTestApp({ DELIVERY_ROLLUP_INTERVAL: 'off' });
  const b = useBrowser();
  useCleanPages(b);

  beforeAll(async () => {
    await t.db.query(HISTORY);
    // Now: real signed callbacks. Eight players, a coupon each settled, some redelivered.
    for (let p = 1; p <= 8; p++) {
      const player = `player-${100 + p}`;
      await deposit(t.app, player, '200.00');
      for (let c = 1; c <= 3; c++) {
        const code = couponCode(p, c);
        await register(t.app, code, player, `${c * 5}.00`);
        const batch = batchOf(`b-2026-12-04-${p}${c}`, {
          code,
          status: c === 3 ? 4 : 2,
          realWin: c === 3 ? null : `${p * c * 3}.50`,
        });
        await deliver(t.app, batch);
        if ((p + c) % 3 === 0) await deliver(t.app, batch);
      }
    }
    // Two late results that disagree: flagged conflicting_result, not paid.
    await deliver(
      t.app,
      batchOf('b-2026-12-04-late-1', { code: couponCode(1, 1), status: 2, realWin: '9.00' }),
    );
    await deliver(
      t.app,
      batchOf('b-2026-12-04-late-2', { code: couponCode(5, 2), status: 2, realWin: '1.00' }),
    );
    // A coupon settled before its registration: unallocated.
    await deliver(
      t.app,
      batchOf('b-2026-12-04-early', { code: '000000009990', status: 2, realWin: '12.00' }),
    );
    // A body refused by validation: quarantined. A forged one: unauthorized, never stored.
    expectError(
      await deliver(t.app, {
        ...batchOf('b-2026-12-04-bad', { code: '000000009991', status: 2 }),
        couponCount: 2,
      }),
      400,
      'validation_failed',
    );
    expectError(
      await deliver(t.app, batchOf('b-forged', { code: '1', status: 2 }), { secret: 'wrong' }),
      401,
      'invalid_signature',
    );
    // The 401's attempt is written after its answer (DeliveryAttemptWriter): the charts count it.
    await attemptsWritten(t);
  }, 60_000);

  it('cards and charts', async () => {
    await signIn(b.page, t.url, 'reader');
    await b.page.getByRole('heading', { name: 'Overview' }).waitFor();
    await b.page.locator('figure.chart canvas').nth(1).waitFor();
    const card = (title: string) =>
      b.page.locator('article.card', { has: b.page.getByRole('heading', { name: title }) }).locator('.big');
    expect({
      review: await card('Coupons needing review').innerText(),
      unallocated: await card('Unallocated coupons').innerText(),
      quarantined: await card('Quarantined, not replayed').innerText(),
      inbox: await card('Inbox backlog').innerText(),
      outbox: await card('Wallet outbox').innerText(),
    }).toEqual({ review: '2', unallocated: '1', quarantined: '1', inbox: '0', outbox: '0' });
    const captions = await b.page.locator('figure.chart figcaption').allInnerTexts();
    expect(captions).toEqual([
      expect.stringMatching(
        /^Last hour: \d+ deliveries \(processed \d+, duplicate \d+, rejected \d+, unauthorized 1(, failed \d+)?\)$/,
      ),
      expect.stringMatching(
        /^Last day: \d+ deliveries \(processed \d+, duplicate \d+, conflict \d+, rejected \d+, unauthorized 1, failed \d+\)$/,
      ),
    ]);
    // Let Chart.js finish its layout before the screenshot.
    await b.page.waitForTimeout(500);
    if (process.env.UPDATE_DOCS_SCREENSHOT === '1') {
      const shot = resolve('test/browser/screenshots/console-overview.png');
      await b.page.screenshot({ path: shot, fullPage: true });
      copyFileSync(shot, resolve('docs/console-overview.png'));
    }
  });
});
