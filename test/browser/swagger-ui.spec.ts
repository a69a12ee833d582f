import type { Locator, Page } from 'playwright-core';
import { useTestApp } from '../support/test-app.js';
import { useBrowser } from './support/browser.js';

// Swagger UI at /docs as a reader sees it in Debian's chromium (issue 29): the text on screen,
// after Swagger UI's Markdown, which drops a bare `<placeholder>` as an unknown HTML tag.

/** The sections of Swagger UI: tag name and its one-line description, in order. */
const TAGS: [string, string][] = [
  [
    'callback',
    "SportAPI's HMAC-signed settlement callback (CONTRACT §3–§5): batches of coupon snapshots, applied exactly once",
  ],
  [
    'coupons',
    'Register coupons (debits the stake); list them (flagged, unallocated); one with bets, operations, snapshot history',
  ],
  [
    'accounts',
    'Player accounts: list, balance, statement (JSON or CSV), deposits and withdrawals through the ledger (CONTRACT §10)',
  ],
  [
    'reconciliation',
    'Read a coupon from SportAPI now (polling fallback), or resolve a coupon flagged needs_review by hand (CONTRACT §9)',
  ],
  [
    'quarantine',
    'Signed callback bodies refused with 400 or 409, kept verbatim; replay one once the cause is fixed (CONTRACT §8)',
  ],
  [
    'inbox',
    'Inbox mode (CALLBACK_MODE=inbox): batches committed at the answer, applied by workers moments later',
  ],
  ['delivery audit', 'Every delivery attempt of the callback, and what one batch wrote (CONTRACT §8)'],
  [
    'wallet',
    "The wallet outbox: settled money pushed to the bookmaker's wallet; retry, skip, pause and resume its delivery",
  ],
  [
    'settlement events',
    "Each financial operation published to the bookmaker's message broker; retry, skip, pause, resume per publisher",
  ],
  [
    'operator console',
    "One search box for any id, and the console's first screen: deliveries per minute, flags, backlogs",
  ],
  [
    'bulk actions',
    'Replay quarantined bodies, retry or skip parked outbox rows in bulk: plan, run in order, watch, cancel',
  ],
  [
    'operator actions',
    'The append-only log of every action taken with a key of scope money or operate, refusals included',
  ],
  [
    'health and metrics',
    'Liveness and readiness probes (no key) and Prometheus metrics of the receiver itself',
  ],
];

const SIGNATURE =
  'sha256=<hex HMAC-SHA256 of the raw body> with one of SPORTAPI_WEBHOOK_SECRETS (the bare hex digest is accepted too)';

/** Text as rendered: whitespace runs (line breaks between blocks included) as one space. */
const visible = async (locator: Locator): Promise<string> =>
  (await locator.innerText()).replace(/\s+/g, ' ').trim();

describe('Swagger UI (/docs) in chromium', () => {
  const t = useTestApp();
  const b = useBrowser();

  /** Opens /docs and waits until Swagger UI has drawn the operations. */
  async function openDocs(page: Page): Promise<void> {
    await page.goto(`${t.url}/docs`);
    await page.locator('.opblock-tag-section').first().waitFor();
  }

  /** Expands the operation `method path` and returns its block. */
  async function operation(page: Page, method: string, path: string): Promise<Locator> {
    const block = page.locator(`.opblock-${method}`, {
      has: page.locator(`.opblock-summary-path[data-path="${path}"]`),
    });
    await block.locator('.opblock-summary').first().click();
    await block.locator('.opblock-body').waitFor();
    return block;
  }

  afterEach(() => {
    expect(b.errors.map(String)).toEqual([]);
  });

  it('GET / leads to Swagger UI', async () => {
    const answer = await b.page.goto(`${t.url}/`);
    expect([answer?.status(), new URL(b.page.url()).pathname]).toEqual([200, '/docs']);
    await b.page.locator('.opblock-tag-section').first().waitFor();
    expect(await visible(b.page.locator('.info .title'))).toMatch(/^SportAPI settlement receiver/);
  });

  it('every section shows its tag and one-line description; metrics and health are "health and metrics"', async () => {
    await openDocs(b.page);
    const sections = b.page.locator('h3.opblock-tag');
    const shown: [string, string][] = [];
    for (const section of await sections.all()) {
      shown.push([await visible(section.locator('a span')), await visible(section.locator('small'))]);
    }
    expect(shown).toEqual(TAGS);
  });

  it('the callback: X-Signature reads sha256=<hex …>, and Try it out is said not to sign', async () => {
    await openDocs(b.page);
    const callback = await operation(b.page, 'post', '/sportapi/callback');
    const signature = callback.locator(
      'tr[data-param-name="X-Signature"] .parameters-col_description .renderedMarkdown',
    );
    expect(await visible(signature)).toBe(SIGNATURE);
    const description = await visible(callback.locator('.opblock-description'));
    expect(description).toContain(
      'Body signed with HMAC-SHA256 over the exact bytes: X-Signature: sha256=<hex> (bare',
    );
    expect(description).toContain(
      'Try it out cannot sign the body: it sends the X-Signature typed into it, and a signature made for other ' +
        'bytes answers 401 invalid_signature. Sign the exact bytes and send those: ' +
        'openssl dgst -sha256 -hmac "$SECRET" -hex < batch.json, then curl --data-binary @batch.json ' +
        '(README, "Send a first batch by hand"; docs/api.md), or let the simulator sign and send: ' +
        'npm run sportapi -- send batch.json --url http://127.0.0.1:3000 --secret "$SECRET" (docs/simulator.md).',
    );
  });

  it('the Authorize dialog shows the signature format', async () => {
    await openDocs(b.page);
    await b.page.locator('.auth-wrapper .btn.authorize').click();
    const dialog = b.page.locator('.dialog-ux .modal-ux');
    await dialog.waitFor();
    const scheme = dialog.locator('.auth-container', { hasText: 'signature (apiKey)' });
    expect(await visible(scheme)).toContain(`signature (apiKey) ${SIGNATURE} Name: X-Signature In: header`);
  });

  it('reconcile and resolution show their key placeholders', async () => {
    await openDocs(b.page);
    const reconcile = await operation(b.page, 'post', '/coupons/{coupon_code}/reconcile');
    expect(await visible(reconcile.locator('.opblock-description'))).toContain(
      'then the read is decided again against its state now, as poll:<coupon_code>:<sha256>:<16 hex>. A read taken',
    );
    expect(await visible(reconcile.locator('.opblock-summary-description'))).toBe(
      'Read the coupon from SportAPI now and apply it as the synthetic batch poll:<coupon_code>:<sha256>',
    );
    expect(await visible(reconcile.locator('.response[data-code="200"] .headers'))).toContain(
      'Reconciliation-Batch-Id poll:<coupon_code>:<sha256 of the coupon JSON>, with :<16 hex of the previous batch> ' +
        'when the same JSON was read before',
    );
    const resolution = await operation(b.page, 'post', '/coupons/{coupon_code}/resolution');
    expect(await visible(resolution.locator('.opblock-description'))).toContain(
      'final_credit of realWin (keys <coupon_code>:<generation>:<type>).',
    );
  });

  it('limit parameters are integers', async () => {
    await openDocs(b.page);
    for (const path of [
      '/callbacks/quarantine',
      '/callbacks/inbox',
      '/wallet/outbox',
      '/callbacks/deliveries',
    ]) {
      const list = await operation(b.page, 'get', path);
      const limit = list.locator('tr[data-param-name="limit"]');
      expect({ path, type: await visible(limit.locator('.parameter__type')) }).toEqual({
        path,
        type: 'integer',
      });
    }
  });
});
