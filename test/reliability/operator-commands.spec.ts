import { execFile } from 'node:child_process';
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { RunningWallet, startWallet } from '../../sim/wallet.js';
import { batchOf } from '../support/test-app.js';
import { eventually } from '../support/wait.js';
import {
  fundCoupons,
  portRange,
  post,
  startReceiver,
  stopReceiver,
  useReceivers,
} from './support/receiver.js';
import { pendingRows } from './support/wallet.js';

// Issue 29 (docs/operating.md, "Operator commands"; docs/wallet.md): what an operator runs next
// to a live receiver and reads from it. `npm run ledger:verify` and `npm run wallet:reconcile`
// run the built code and leave dist/ as it is (item 5); wallet:reconcile without a wallet URL
// says that WALLET_URL is unset (item 8); the start line names the wallet connector, never its
// secret (item 8).

const WALLET_SECRET = 'reliability-operator-wallet-secret';
const [PORT, WALLET_PORT, BARE_PORT] = portRange(94, 3);
const WALLET_URL = `http://127.0.0.1:${WALLET_PORT}`;

/** `npm run -s <script> -- args` in the checkout with only `env` (plus PATH and HOME); never throws. */
async function npmRun(
  script: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)('npm', ['run', '-s', script, '--', ...args], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** Inode and modification time of dist/ and of the receiver's entry file: a build changes both. */
function buildIdentity(): string[] {
  return ['dist', 'dist/src/main.js'].map((p) => {
    const s = statSync(resolve(process.cwd(), p));
    return `${p} ${s.ino} ${s.mtimeMs}`;
  });
}

describe('operator commands next to a live receiver (issue 29)', () => {
  let wallet: RunningWallet;
  beforeAll(async () => {
    wallet = await startWallet({ port: WALLET_PORT, secret: WALLET_SECRET });
  });
  afterAll(() => wallet?.close());
  const suite = useReceivers([PORT], { env: { WALLET_URL, WALLET_SECRET, WALLET_POLL_INTERVAL_MS: '50' } });

  it('the start line names the wallet connector and its URL, or none; never WALLET_SECRET', async () => {
    const started = suite.receiver.output();
    expect(started).toContain(`; wallet connector: http → ${WALLET_URL}"`);
    expect(started).not.toContain(WALLET_SECRET);
    const bare = await startReceiver(BARE_PORT, suite.db.url);
    try {
      expect(bare.output()).toContain('; wallet connector: none"');
    } finally {
      await stopReceiver(bare);
    }
  }, 60_000);

  it('npm run ledger:verify and wallet:reconcile check the live database and leave dist/ as it is', async () => {
    await fundCoupons(
      suite.receiver.url,
      { id: 'op-1', amount: '50.00', key: 'op-dep-1', reason: 'test' },
      ['OP1'],
      '10.00',
    );
    expect(
      (await post(suite.receiver.url, batchOf('op-b1', { code: 'OP1', status: 2, realWin: '12.50' }))).status,
    ).toBe(200);
    await eventually(async () => (await pendingRows(suite.db.pool)) === 0, 'the credit delivered');
    const before = buildIdentity();

    const verified = await npmRun('ledger:verify', [], { DATABASE_URL: suite.db.url });
    expect({ code: verified.code, stderr: verified.stderr }).toEqual({ code: 0, stderr: '' });
    expect(verified.stdout).toMatch(/ledger OK: \d+ checks, no violation\n$/);

    const reconciled = await npmRun('wallet:reconcile', ['--wallet-url', WALLET_URL], {
      DATABASE_URL: suite.db.url,
    });
    expect(reconciled).toEqual({
      code: 0,
      stdout:
        'wallet reconciliation: 1 pushed operations (1 delivered, 0 pending of which 0 applied by the wallet already, 0 parked, 0 skipped); the wallet lists 1 transactions; compared by transaction id (balances are not compared: they hold money the receiver did not push)\n' +
        'no difference\n',
      stderr: '',
    });
    expect(buildIdentity()).toEqual(before);
  }, 120_000);

  it('npm run wallet:reconcile without a wallet URL says that WALLET_URL is unset; exit code 2', async () => {
    expect(await npmRun('wallet:reconcile', [], { DATABASE_URL: suite.db.url })).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'wallet:reconcile: WALLET_URL is unset and no --wallet-url was given: no wallet export to compare with\n' +
        'usage: npm run wallet:reconcile -- [--wallet-url URL (default WALLET_URL)] [--timeout-ms 10000]\n',
    });
  }, 60_000);
});
