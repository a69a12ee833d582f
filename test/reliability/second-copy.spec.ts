import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fetchRead } from '../support/http.js';
import { OPS_KEY, SECRET } from '../support/secrets.js';
import { portRange, startReceiver, stopReceiver, suiteDatabase } from './support/receiver.js';
import type { Receiver, SuiteDatabase } from './support/receiver.js';

// Issue 38, item 5 (README: a second copy `PORT=3001 … npm start`; docs/development.md): a
// build next to a copy running from the same checkout leaves that copy serving: its /ops page
// and the assets the page names answer 200 all through `npm run build` (which `npm start` runs
// first). Before, the build deleted dist/ and the console answered 404 for about a minute. And a
// start on a port in use says so before it builds anything (before: after a 69 s build).

const ROOT = process.cwd();
const [PORT] = portRange(56, 1);

/** Runs `npm <args>` in the checkout; resolves with its exit code and everything it printed. */
function npm(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; output: string }> {
  const proc = spawn('npm', args, {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      npm_config_update_notifier: 'false',
      npm_config_fund: 'false',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  proc.stdout.on('data', (c: Buffer) => (output += c.toString()));
  proc.stderr.on('data', (c: Buffer) => (output += c.toString()));
  return new Promise((done) => proc.once('exit', (code) => done({ code, output })));
}

describe('a second copy next to a running one', () => {
  let db: SuiteDatabase;
  let receiver: Receiver | undefined;
  beforeAll(async () => {
    db = await suiteDatabase(2);
    receiver = await startReceiver(PORT, db.url);
  }, 60_000);
  afterAll(async () => {
    await stopReceiver(receiver);
    await db?.close();
  });

  it('npm start on the busy port: exit 1 naming PORT, before any build', async () => {
    const { code, output } = await npm(['start'], {
      PORT: String(PORT),
      HOST: '127.0.0.1',
      SPORTAPI_WEBHOOK_SECRETS: SECRET,
      OPS_API_KEYS: OPS_KEY,
    });
    expect(code).toBe(1);
    expect(output).toContain(
      `start-up failed: PORT ${PORT} on 127.0.0.1 is in use by another process; set PORT`,
    );
    // npm's banner of the build script (`> sportapi-settlement-receiver@0.1.0 build`): not run.
    expect(output).not.toMatch(/^> \S+ build$/m);
  }, 600_000);

  it('npm run build while it runs: /ops and the assets it names keep answering 200; stale files go', async () => {
    const url = receiver!.url;
    const assetsOf = (html: string) => [...new Set(html.match(/\/ops\/assets\/[^"']+/g) ?? [])];
    const before = await fetchRead(`${url}/ops`);
    expect(before.status).toBe(200);
    expect(assetsOf(before.text).length).toBeGreaterThan(0);
    // A file of an older build that this one no longer makes.
    mkdirSync(join(ROOT, 'dist/src/gone'), { recursive: true });
    writeFileSync(join(ROOT, 'dist/src/gone/old-module.js'), 'export {};\n');

    const build = npm(['run', 'build']);
    let done = false;
    void build.then(() => (done = true));
    const failures: string[] = [];
    let rounds = 0;
    while (!done) {
      // The page, a client-side route, and the assets the page names at this moment.
      const page = await fetchRead(`${url}/ops`);
      const route = await fetchRead(`${url}/ops/coupons`);
      if (page.status !== 200) failures.push(`/ops ${page.status}`);
      if (route.status !== 200) failures.push(`/ops/coupons ${route.status}`);
      for (const asset of assetsOf(page.text)) {
        const answer = await fetchRead(`${url}${asset}`);
        if (answer.status !== 200) failures.push(`${asset} ${answer.status}`);
      }
      rounds++;
      await new Promise((r) => setTimeout(r, 20));
    }
    const { code } = await build;
    expect({ code, failures }).toEqual({ code: 0, failures: [] });
    expect(rounds).toBeGreaterThan(10);
    expect(existsSync(join(ROOT, 'dist/src/gone'))).toBe(false);
    expect(existsSync(join(ROOT, 'dist/src/main.js'))).toBe(true);
    const after = await fetchRead(`${url}/ops`);
    for (const asset of assetsOf(after.text)) expect((await fetchRead(`${url}${asset}`)).status).toBe(200);
  }, 600_000);
});
