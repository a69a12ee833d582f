import { existsSync } from 'node:fs';
import { runCli, withCliDatabase } from '../database/cli-database.js';
import { loadRetentionConfig } from './retention.config.js';
import {
  ensurePartitions,
  formatRetentionReport,
  RETENTION_LOCK_KEY,
  RetentionEngine,
} from './retention-engine.js';

/**
 * `npm run retention`: prints per data class what the retention policy would remove now
 * (partitions, rows, bytes) and what it keeps and why; `-- --apply` creates the partitions ahead
 * and removes it (after the job's advisory lock: one run at a time); `-- --json` prints the
 * report as JSON. Exit code 0, 2 when it cannot run (docs/retention.md). Database and
 * `RETENTION_*` as the receiver reads them.
 */
async function main(): Promise<number> {
  if (existsSync('.env')) process.loadEnvFile('.env');
  const args = process.argv.slice(2);
  const unknown = args.filter((a) => !['--apply', '--json'].includes(a));
  if (unknown.length) {
    console.error(`unknown argument ${unknown[0]}: npm run retention [-- --apply] [-- --json]`);
    return 2;
  }
  let config;
  try {
    config = loadRetentionConfig(process.env);
  } catch (err) {
    console.error((err as Error).message);
    return 2;
  }
  const apply = args.includes('--apply');
  const report = await withCliDatabase(async (client) => {
    await client.query('SET statement_timeout = 0');
    const engine = new RetentionEngine(client, config, { log: (line) => console.error(line) });
    if (!apply) return engine.report();
    const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [
      RETENTION_LOCK_KEY,
    ]);
    if (!rows[0].locked) {
      console.error('another retention run holds the lock: waiting for it');
      await client.query('SELECT pg_advisory_lock($1)', [RETENTION_LOCK_KEY]);
    }
    await ensurePartitions(client, new Date(), config.partitionsAhead);
    return engine.apply();
  });
  process.stdout.write(
    `${args.includes('--json') ? JSON.stringify(report, null, 2) : formatRetentionReport(report)}\n`,
  );
  return 0;
}

runCli('retention', main);
