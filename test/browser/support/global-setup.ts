import { createRequire } from 'node:module';
import { resolve } from 'node:path';

type Chromium = typeof import('./chromium.js');

/**
 * Global set-up of the `browser` project, run before the database set-up of every run: without
 * Debian's chromium the run stops at once with one line saying how to install it, never a skip.
 * Jest loads this file outside its module system, so `chromium.ts` is required by its path.
 */
export default function browserGlobalSetup(globalConfig: { rootDir: string }): void {
  const { chromiumInstalled, NO_CHROMIUM } = createRequire(resolve(globalConfig.rootDir, 'package.json'))(
    './test/browser/support/chromium.ts',
  ) as Chromium;
  if (chromiumInstalled()) return;
  console.error(NO_CHROMIUM);
  process.exit(1);
}
