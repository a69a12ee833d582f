import { existsSync } from 'node:fs';
import { loadCurrencyTable } from './money.config.js';
import { runCli, withCliDatabase } from '../../platform/database/cli-database.js';
import { formatLedgerReport, LedgerVerifier } from './ledger-verifier.js';

/**
 * `npm run ledger:verify`: checks the whole database with {@link LedgerVerifier}; exit code 0
 * clean, 1 with the violations, 2 when it cannot check. Database: `DATABASE_URL`, else the
 * embedded PostgreSQL of `npm start` (running, or started and stopped for the check). Minor
 * units: `CURRENCY_MINOR_UNITS` and `CURRENCIES` as the receiver reads them.
 */
async function main(): Promise<number> {
  if (existsSync('.env')) process.loadEnvFile('.env');
  let currencies;
  try {
    currencies = loadCurrencyTable(process.env);
  } catch (err) {
    console.error((err as Error).message);
    return 2;
  }
  const report = await withCliDatabase((client) => new LedgerVerifier(client, currencies).verify());
  process.stdout.write(`${formatLedgerReport(report)}\n`);
  return report.ok ? 0 : 1;
}

runCli('ledger verification', main);
