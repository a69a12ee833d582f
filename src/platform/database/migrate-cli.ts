import { existsSync } from 'node:fs';
import { migrateCliDatabase } from './cli-database.js';

/**
 * `npm run migration:run`: applies pending migrations (under the same advisory lock as the app's
 * start-up) to `DATABASE_URL`, else to the embedded server under `EMBEDDED_PG_DATA_DIR`: the
 * running one (a live receiver's), or started for the run (initialised when empty), as
 * `ledger:verify` and `wallet:reconcile` do. Exit code 0, or 1 with `migration failed: …`.
 */
async function main(): Promise<void> {
  if (existsSync('.env')) process.loadEnvFile('.env');
  const applied = await migrateCliDatabase();
  console.warn(applied.length ? `applied: ${applied.join(', ')}` : 'no pending migrations');
}

main().catch((err: unknown) => {
  console.error('migration failed:', err instanceof Error ? err.message : err);
  process.exit(1);
});
