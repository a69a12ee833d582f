import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

type Chromium = typeof import('./chromium.js');

/**
 * Global set-up of the `browser` project, run before the database set-up of every run: without
 * Debian's chromium the run stops at once with one line saying how to install it, never a skip.
 * Then the operator console is built from `console/` with Vite into a folder of this run
 * (`CONSOLE_DIR` of the test apps, removed when the run ends), so the tests drive the sources as
 * they are, not a stale `dist/`. Jest loads this file outside its module system, so
 * `chromium.ts` is required by its path.
 */
export default function browserGlobalSetup(globalConfig: { rootDir: string }): void {
  const { chromiumInstalled, NO_CHROMIUM } = createRequire(resolve(globalConfig.rootDir, 'package.json'))(
    './test/browser/support/chromium.ts',
  ) as Chromium;
  if (!chromiumInstalled()) {
    console.error(NO_CHROMIUM);
    process.exit(1);
  }
  const out = mkdtempSync(join(tmpdir(), 'receiver-console-'));
  const vite = resolve(globalConfig.rootDir, 'node_modules/vite/bin/vite.js');
  const build = spawnSync(
    process.execPath,
    [
      vite,
      'build',
      '--config',
      'console/vite.config.ts',
      '--outDir',
      out,
      '--emptyOutDir',
      '--logLevel',
      'warn',
    ],
    { cwd: globalConfig.rootDir, encoding: 'utf8', timeout: 120_000 },
  );
  if (build.status !== 0) {
    console.error(`browser tests: the console's build failed:\n${build.stdout}${build.stderr}`);
    process.exit(1);
  }
  process.env.CONSOLE_DIR = out;
  process.once('exit', () => rmSync(out, { recursive: true, force: true }));
}
