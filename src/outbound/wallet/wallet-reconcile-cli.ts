import { existsSync } from 'node:fs';
import { runCli } from '../../platform/database/cli-database.js';
import { walletReconcileCommand } from './wallet-reconciler.js';

/**
 * `npm run wallet:reconcile [-- --wallet-url URL] [--timeout-ms 10000]`: compares the ledger's
 * pushed operations with the wallet's export by transaction id ({@link walletReconcileCommand});
 * exit code 0 no difference, 1 some, 2 when it cannot compare. Variables from `.env` too.
 */
async function main(): Promise<number> {
  if (existsSync('.env')) process.loadEnvFile('.env');
  const { code, stdout, stderr } = await walletReconcileCommand(process.argv.slice(2), process.env);
  process.stdout.write(stdout);
  process.stderr.write(stderr);
  return code;
}

runCli('wallet reconciliation', main);
