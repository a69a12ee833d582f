import {
  batchOf,
  deliver,
  deposit,
  expectError,
  quarantinedConflict,
  quarantinedInvalid,
  register,
  useTestApp,
} from '../support/test-app.js';
import { useBrowser } from './support/browser.js';
import { rows, signIn, useCleanPages } from './support/console.js';

// The quarantine in the operator console (issue 30): bulk replay planned with a count, run with a
// reason and a cap, watched to the end with every row's outcome; hostile bodies shown as text.

/** Hostile markup in a body: it must show as these characters and run nothing. */
const SCRIPT = '<script>alert("xss-script")</script>';
const IMG = '"><img src=x onerror=alert("xss-img")>';

describe('operator console: quarantine', () => {
  const t = useTestApp({ BULK_ACTION_POLL_INTERVAL: '100ms' });
  const b = useBrowser();
  useCleanPages(b);
  const ids: string[] = [];
  let hostile: { malformed: string; invalid: string };

  beforeAll(async () => {
    await deposit(t.app, 'bq-p1', '50.00');
    await register(t.app, 'BQ-A', 'bq-p1', '10.00');
    ids.push(await quarantinedConflict(t, batchOf('bq-1', { code: 'BQ-A', status: 1 })));
    ids.push(await quarantinedInvalid(t, 'bq-2', 'BQ-B'));
    ids.push(await quarantinedConflict(t, batchOf('bq-3', { code: 'BQ-B', status: 2, realWin: '7.00' })));
    ids.push(await quarantinedConflict(t, batchOf('bq-4', { code: 'BQ-A', status: 2, realWin: '25.50' })));
    // Two signed hostile bodies: not JSON at all, and JSON whose ids are markup.
    expectError(await deliver(t.app, `${SCRIPT}${IMG}`), 400, 'malformed_json');
    expectError(
      await deliver(t.app, {
        batchId: `x-${SCRIPT}`,
        couponCount: 1,
        coupons: [{ coupon_code: IMG.slice(0, 32), status: 'x', realWin: null, events: [] }],
      }),
      400,
      'validation_failed',
    );
    const { rows: found } = await t.db.query<{ id: string }>(
      `SELECT id::text FROM quarantined_bodies WHERE reason IN ('malformed_json', 'validation_failed') AND batch_id IS DISTINCT FROM 'bq-2' ORDER BY id`,
    );
    hostile = { malformed: found[0].id, invalid: found[1].id };
  });

  it('bulk replay: count first, run with a reason and a cap, watch every row to the end', async () => {
    await signIn(b.page, t.url, 'operator', '/ops/quarantine');
    const panel = b.page.getByRole('region', { name: 'Bulk replay' });
    await panel.getByLabel('Batch id starts with').fill('bq-');
    const run = panel.getByRole('button', { name: 'Run: replay quarantined bodies' });
    expect(await run.isDisabled()).toBe(true);
    expect(await panel.getByText('count first').isVisible()).toBe(true);
    await panel.getByRole('button', { name: 'Count matching rows' }).click();
    const plan = panel.getByRole('status', { name: 'plan' });
    await plan.waitFor();
    expect(await plan.innerText()).toBe(
      `4 row(s) match now; a run with cap 1000 would touch 4 (first: ${ids.join(', ')}).`,
    );
    // A cap below the count needs a new count, which says how many it would touch.
    await panel.getByLabel('Cap (rows at most)').fill('3');
    expect(await plan.count()).toBe(0);
    await panel.getByRole('button', { name: 'Count matching rows' }).click();
    expect(await plan.innerText()).toBe(
      `4 row(s) match now; a run with cap 3 would touch 3 (first: ${ids.slice(0, 3).join(', ')}).`,
    );
    await panel.getByLabel('Cap (rows at most)').fill('10');
    await panel.getByRole('button', { name: 'Count matching rows' }).click();
    await plan.getByText('cap 10 would touch 4').waitFor();
    expect(await run.isDisabled()).toBe(true);
    await panel.getByLabel('Reason', { exact: true }).fill('bad deploy fixed in 4.2.1');
    await run.click();
    const dialog = b.page.getByRole('dialog');
    expect((await dialog.innerText()).replace(/\s+/g, ' ')).toContain(
      'The receiver will replay quarantined bodies: 4 row(s), one by one in the order they arrived',
    );
    const { rows: before } = await t.db.query(`SELECT count(*)::int AS n FROM bulk_actions`);
    expect(before[0].n).toBe(0);
    await dialog.getByRole('button', { name: 'Confirm: Run: replay quarantined bodies' }).click();

    // The bulk action's own screen, refreshed until it is done.
    await b.page.getByRole('heading', { name: /^Bulk action \d+$/ }).waitFor();
    await b.page
      .getByText('4 of 4 finished: 2 done, 1 skipped, 1 failed, 0 pending')
      .waitFor({ timeout: 20_000 });
    expect(await b.page.locator('.facts').innerText()).toMatch(/status\s+done/);
    expect(await rows(b.page, 'rows')).toEqual([
      ['1', ids[0], 'done', 'processed', '', 'BQ-A', expect.stringMatching(/ UTC$/)],
      [
        '2',
        ids[1],
        'failed',
        'replay_rejected',
        'the quarantined body is still refused: the batch does not match the contract',
        'BQ-B',
        expect.stringMatching(/ UTC$/),
      ],
      [
        '3',
        ids[2],
        'skipped',
        'blocked',
        'row 2 of coupon BQ-B failed or was skipped first: its later rows keep their order',
        'BQ-B',
        expect.stringMatching(/ UTC$/),
      ],
      ['4', ids[3], 'done', 'processed', '', 'BQ-A', expect.stringMatching(/ UTC$/)],
    ]);
    expect(await b.page.getByRole('button', { name: 'Cancel bulk action' }).count()).toBe(0);
    const { rows: replays } = await t.db.query(
      `SELECT id::text, replay_count, replay_outcome, replayed_by FROM quarantined_bodies WHERE batch_id LIKE 'bq-%' ORDER BY id`,
    );
    expect(replays).toEqual([
      { id: ids[0], replay_count: 1, replay_outcome: 'processed', replayed_by: 'operator' },
      { id: ids[1], replay_count: 1, replay_outcome: 'rejected', replayed_by: 'operator' },
      { id: ids[2], replay_count: 0, replay_outcome: null, replayed_by: null },
      { id: ids[3], replay_count: 1, replay_outcome: 'processed', replayed_by: 'operator' },
    ]);
  });

  it('hostile bodies, batch ids and coupon codes render as text and run nothing', async () => {
    await signIn(b.page, t.url, 'operator', '/ops/quarantine');
    const list = b.page.getByRole('table', { name: 'quarantined bodies' });
    await list.waitFor();
    expect(await list.innerText()).toContain(`${SCRIPT}${IMG}`);
    expect(await list.innerText()).toContain(`x-${SCRIPT}`);

    for (const id of [hostile.malformed, hostile.invalid]) {
      await b.page.getByRole('link', { name: id, exact: true }).click();
      await b.page.getByRole('heading', { name: `Quarantined body ${id}` }).waitFor();
      const body = b.page.getByLabel('body as text');
      // The bytes as sent: raw markup, or markup inside JSON strings (quotes escaped).
      expect(await body.innerText()).toContain(
        id === hostile.malformed ? `${SCRIPT}${IMG}` : JSON.stringify(IMG.slice(0, 32)).slice(1, -1),
      );
      await b.page.getByRole('button', { name: 'Hex' }).click();
      expect((await b.page.getByLabel('body as hex').innerText()).split('\n')[0]).toMatch(
        /^00000000 {2}[0-9a-f ]{47} {2}/,
      );
      await b.page.getByRole('button', { name: 'Text (UTF-8)' }).click();
      await b.page.goBack();
      await list.waitFor();
    }
    // Nothing was injected: the page's only scripts are the console's own, no image came from the data.
    // (Page code as text: the tests compile without the DOM's types.)
    const injected = await b.page.evaluate(`({
      scripts: Array.from(document.scripts, (s) => s.getAttribute('src')),
      images: document.images.length,
      handlers: document.querySelectorAll('[onerror]').length,
    })`);
    expect(injected).toEqual({
      scripts: [expect.stringMatching(/^\/ops\/assets\/index-[\w-]+\.js$/)],
      images: 0,
      handlers: 0,
    });
  });
});
