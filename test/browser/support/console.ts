import type { ConsoleMessage, Dialog, Page } from 'playwright-core';
import type { BrowserHandle } from './browser.js';
import { OPS_KEY, SCOPED_KEYS } from '../../support/test-app.js';
import type { ScopedKeyName } from '../../support/test-app.js';

/**
 * What a console page did that it must not: browser console errors and warnings (a CSP
 * violation is one), JavaScript dialogs (an injected `alert`), failed requests other than the
 * ones a test provokes. Collected from {@link watch} on; `dialogs` are dismissed.
 */
export interface PageTrouble {
  messages: string[];
  dialogs: string[];
}

/** Starts collecting a page's {@link PageTrouble} (into `trouble`, emptied first). */
export function watch(page: Page, trouble: PageTrouble = { messages: [], dialogs: [] }): PageTrouble {
  trouble.messages = [];
  trouble.dialogs = [];
  page.on('console', (m: ConsoleMessage) => {
    if (m.type() === 'error' || m.type() === 'warning') trouble.messages.push(`${m.type()}: ${m.text()}`);
  });
  page.on('dialog', (d: Dialog) => {
    trouble.dialogs.push(`${d.type()}: ${d.message()}`);
    void d.dismiss();
  });
  return trouble;
}

/**
 * For the enclosing `describe` (after {@link useBrowser}): watches each test's page and, after
 * the test, expects no uncaught error, console error or warning, nor dialog. A test that provokes
 * one on purpose removes it from the returned {@link PageTrouble}.
 */
export function useCleanPages(b: BrowserHandle): PageTrouble {
  const trouble: PageTrouble = { messages: [], dialogs: [] };
  beforeEach(() => {
    watch(b.page, trouble);
  });
  afterEach(() => {
    expect({ errors: b.errors.map(String), ...trouble }).toEqual({ errors: [], messages: [], dialogs: [] });
  });
  return trouble;
}

/** The secret of a test key: the bare key (every scope, `key-1`) or a scoped one. */
export const secretOf = (key: ScopedKeyName | 'legacy'): string =>
  key === 'legacy' ? OPS_KEY : SCOPED_KEYS[key].secret;

/**
 * Opens the console at `path` (default the overview) and signs in with `key` as an operator
 * would: pastes it and presses Sign in; resolves once the key's name is shown.
 */
export async function signIn(
  page: Page,
  baseUrl: string,
  key: ScopedKeyName | 'legacy',
  path = '/ops',
): Promise<void> {
  await page.goto(`${baseUrl}${path}`);
  await page.getByLabel('API key').fill(secretOf(key));
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
}

/** Text as rendered: whitespace runs as one space. */
export const text = async (page: Page, selector: string): Promise<string> =>
  (await page.locator(selector).innerText()).replace(/\s+/g, ' ').trim();

/** The rows of a table (by its aria-label) as arrays of cell texts. */
export async function rows(page: Page, table: string): Promise<string[][]> {
  return page
    .getByRole('table', { name: table, exact: true })
    .locator('tbody tr')
    .evaluateAll((trs: { querySelectorAll(selector: string): ArrayLike<{ textContent: string | null }> }[]) =>
      trs.map((tr) =>
        Array.from(tr.querySelectorAll('td'), (td) => (td.textContent ?? '').replace(/\s+/g, ' ').trim()),
      ),
    );
}
