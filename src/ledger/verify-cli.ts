import { existsSync } from 'node:fs';
import pg from 'pg';
import { loadCurrencyTable } from '../config/configuration.js';
import { EmbeddedPostgresServer } from '../database/embedded-postgres.js';
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
  let url = process.env.DATABASE_URL || undefined;
  let embedded: EmbeddedPostgresServer | undefined;
  if (!url) {
    const server = new EmbeddedPostgresServer(
      {
        dataDir: process.env.EMBEDDED_PG_DATA_DIR || '.data/postgres',
        port: Number(process.env.EMBEDDED_PG_PORT || 54329),
        database: 'settlement',
      },
      { log: () => undefined, warn: (m) => console.warn(m) },
    );
    const running = server.runningUrl();
    if (running || (await server.isPortInUse())) {
      url = running ?? server.url;
      console.warn(`using the running embedded PostgreSQL at ${new URL(url).host}`);
    } else if (!server.hasCluster()) {
      console.error(
        'no database to verify: DATABASE_URL is unset and the embedded data folder is empty (run npm start once)',
      );
      return 2;
    } else {
      embedded = server;
      url = await server.start();
    }
  }
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    const report = await new LedgerVerifier(client, currencies).verify();
    process.stdout.write(`${formatLedgerReport(report)}\n`);
    return report.ok ? 0 : 1;
  } finally {
    await client.end().catch(() => undefined);
    await embedded?.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error('ledger verification failed:', err instanceof Error ? err.message : err);
    process.exit(2);
  },
);
