import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { chromium } from 'playwright-core';
import type { BrowserContext, Page } from 'playwright-core';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from './chromium.js';

/** Where each test's screenshot goes: `<this folder>/<spec file>/<test name>.png` (gitignored). */
export const SCREENSHOT_DIR = resolve(process.env.BROWSER_SCREENSHOT_DIR || 'test/browser/screenshots');

/** A running chromium: one context on a fresh profile, removed by `close`. */
export interface Chromium {
  context: BrowserContext;
  close: () => Promise<void>;
}

/**
 * Launches Debian's chromium ({@link CHROMIUM_PATH}, {@link CHROMIUM_ARGS}) through playwright-core
 * with a fresh user-data-dir under the temp folder. Requests leave only for the loopback (the test
 * app) and `data:`/`blob:` URLs: anything else is aborted, so a page cannot reach the internet.
 */
export async function launchChromium(): Promise<Chromium> {
  const profile = mkdtempSync(join(tmpdir(), 'receiver-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1280, height: 900 },
  });
  await context.route(
    (url) =>
      !['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname) && !/^(data|blob):/.test(url.protocol),
    (route) => route.abort('blockedbyclient'),
  );
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** The browser of a spec file and the page of the running test ({@link useBrowser}). */
export interface BrowserHandle {
  /** A new page for each test, closed after it. */
  page: Page;
  context: BrowserContext;
  /** Uncaught errors of the test's page (`pageerror`), for tests to assert none. */
  errors: Error[];
}

/** File-name form of a test's name. */
const fileName = (name: string) =>
  name
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 150);

/**
 * The chromium of the enclosing `describe`: launched in `beforeAll`, closed in `afterAll`; each
 * test gets a new page, and after it (passed or failed) a full-page screenshot is written to
 * `SCREENSHOT_DIR/<spec file>/<test name>.png` (the file's folder is emptied when it starts).
 * Fields are there from the first test on.
 */
export function useBrowser(): BrowserHandle {
  const handle = { errors: [] as Error[] } as BrowserHandle;
  let browser: Chromium | undefined;
  let folder = '';
  beforeAll(async () => {
    folder = join(SCREENSHOT_DIR, basename(expect.getState().testPath ?? 'unknown', '.ts'));
    rmSync(folder, { recursive: true, force: true });
    mkdirSync(folder, { recursive: true });
    browser = await launchChromium();
    handle.context = browser.context;
  }, 60_000);
  beforeEach(async () => {
    handle.errors = [];
    handle.page = await handle.context.newPage();
    handle.page.on('pageerror', (err) => handle.errors.push(err));
  });
  afterEach(async () => {
    const name = fileName(expect.getState().currentTestName ?? 'test');
    await handle.page
      ?.screenshot({ path: join(folder, `${name}.png`), fullPage: true })
      .catch(() => undefined);
    await handle.page?.close();
  });
  afterAll(async () => {
    await browser?.close();
  });
  return handle;
}
