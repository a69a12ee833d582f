import { walletReconcileCommand } from '../../src/outbound/wallet/wallet-reconciler.js';

// Issue 29, item 8: `npm run wallet:reconcile` that cannot compare says why (exit code 2) before it
// touches the database or the network.

const USAGE =
  'usage: npm run wallet:reconcile -- [--wallet-url URL (default WALLET_URL)] [--timeout-ms 10000]';

describe('wallet:reconcile arguments', () => {
  const noDatabase = () => Promise.reject(new Error('the database must not be read'));

  it('no WALLET_URL and no --wallet-url: says that WALLET_URL is unset, then the usage; exit code 2', async () => {
    expect(await walletReconcileCommand([], {}, noDatabase)).toEqual({
      code: 2,
      stdout: '',
      stderr: `wallet:reconcile: WALLET_URL is unset and no --wallet-url was given: no wallet export to compare with\n${USAGE}\n`,
    });
    expect((await walletReconcileCommand(['--wallet-url', ''], { WALLET_URL: '' }, noDatabase)).code).toBe(2);
  });

  it('an unknown option or a bad timeout: named, then the usage; exit code 2', async () => {
    expect(await walletReconcileCommand(['--walet-url', 'http://w'], {}, noDatabase)).toEqual({
      code: 2,
      stdout: '',
      stderr: expect.stringMatching(/^wallet:reconcile: Unknown option '--walet-url'/),
    });
    expect(
      await walletReconcileCommand(['--timeout-ms', '0'], { WALLET_URL: 'http://127.0.0.1:1' }, noDatabase),
    ).toEqual({
      code: 2,
      stdout: '',
      stderr: `wallet:reconcile: --timeout-ms must be a whole number of milliseconds above 0\n${USAGE}\n`,
    });
  });
});
