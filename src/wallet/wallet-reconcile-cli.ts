import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadCurrencyTable } from '../config/configuration.js';
import { runCli, withCliDatabase } from '../database/cli-database.js';
import {
  formatWalletReconciliation,
  pushedOperations,
  reconcileWallet,
  walletExport,
} from './wallet-reconciler.js';

/**
 * `npm run wallet:reconcile [-- --wallet-url URL] [--timeout-ms 10000]`: compares the ledger's
 * pushed operations with the wallet's export ({@link reconcileWallet}) and lists every difference;
 * exit code 0 none, 1 some, 2 when it cannot compare. Wallet: `--wallet-url`, else `WALLET_URL`.
 * Database: as `ledger:verify` (`DATABASE_URL`, else the embedded PostgreSQL).
 */
async function main(): Promise<number> {
  if (existsSync('.env')) process.loadEnvFile('.env');
  const { values } = parseArgs({
    options: { 'wallet-url': { type: 'string' }, 'timeout-ms': { type: 'string', default: '10000' } },
  });
  const url = (values['wallet-url'] ?? process.env.WALLET_URL)?.replace(/\/+$/, '');
  const timeoutMs = Number(values['timeout-ms']);
  if (!url || !Number.isInteger(timeoutMs) || timeoutMs < 1) {
    console.error(
      'usage: npm run wallet:reconcile -- [--wallet-url URL (default WALLET_URL)] [--timeout-ms 10000]',
    );
    return 2;
  }
  const currencies = loadCurrencyTable(process.env);
  const ledger = await withCliDatabase((client) => pushedOperations(client));
  const wallet = await walletExport(url, timeoutMs);
  const report = reconcileWallet(ledger, wallet.transactions, wallet.balances, (amount, currency) =>
    currencies.format(amount.toFixed(), currency),
  );
  process.stdout.write(`${formatWalletReconciliation(report)}\n`);
  return report.differences.length ? 1 : 0;
}

runCli('wallet reconciliation', main);
