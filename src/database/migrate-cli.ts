import { existsSync } from 'node:fs';
import { DataSource } from 'typeorm';
import { buildDataSourceOptions } from './data-source-options.js';
import { EmbeddedPostgresServer } from './embedded-postgres.js';
import { runMigrationsLocked } from './migrator.js';

/**
 * `npm run migration:run`: applies pending migrations (under the same advisory lock as the app's
 * start-up) to `DATABASE_URL`, or to the embedded server under `EMBEDDED_PG_DATA_DIR` when unset.
 */
async function main(): Promise<void> {
  if (existsSync('.env')) process.loadEnvFile('.env');
  let url = process.env.DATABASE_URL || undefined;
  let embedded: EmbeddedPostgresServer | undefined;
  if (!url) {
    embedded = new EmbeddedPostgresServer(
      {
        dataDir: process.env.EMBEDDED_PG_DATA_DIR || '.data/postgres',
        clustersDir: process.env.EMBEDDED_PG_CLUSTERS_DIR || undefined,
        port: Number(process.env.EMBEDDED_PG_PORT || 54329),
        database: 'settlement',
      },
      { log: (m) => console.warn(m), warn: (m) => console.warn(m) },
    );
    url = await embedded.start();
  }
  const dataSource = await new DataSource(buildDataSourceOptions(url)).initialize();
  try {
    const applied = await runMigrationsLocked(dataSource);
    console.warn(applied.length ? `applied: ${applied.join(', ')}` : 'no pending migrations');
  } finally {
    await dataSource.destroy();
    await embedded?.stop();
  }
}

main().catch((err: unknown) => {
  console.error('migration failed:', err instanceof Error ? err.message : err);
  process.exit(1);
});
