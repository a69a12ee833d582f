import { existsSync } from 'node:fs';
import { runCli, withCliDatabase } from '../../platform/database/cli-database.js';
import { archiverOf, DirectoryArchiveConnector, verifyArchives } from './archive.js';
import { loadRetentionConfig } from './retention.config.js';
import { RETENTION_LOCK_KEY, RetentionEngine } from './retention-engine.js';
import { ensurePartitions } from './retention-partitions.js';
import { formatRetentionReport } from './retention-report.js';

const USAGE = 'npm run retention [-- --apply] [-- --json] | npm run retention -- --verify-archive DIR';

/**
 * `npm run retention`: prints per data class what the retention policy would remove now
 * (partitions, rows, bytes) and what it keeps and why; `-- --apply` creates the partitions ahead
 * and removes it (after the job's advisory lock: one run at a time), archiving the classes of
 * `RETENTION_ARCHIVE` to `RETENTION_ARCHIVE_DIR` first; `-- --json` prints the report as JSON;
 * `-- --verify-archive DIR` checks every archive under DIR (exit code 1 when one is incomplete).
 * Exit code 0, 2 when it cannot run (docs/retention.md). Database and `RETENTION_*` as the
 * receiver reads them.
 */
async function main(): Promise<number> {
  if (existsSync('.env')) process.loadEnvFile('.env');
  const args = process.argv.slice(2);
  const verifyAt = args.indexOf('--verify-archive');
  if (verifyAt >= 0) {
    const dir = args[verifyAt + 1];
    if (!dir || args.length !== 2) {
      console.error(`usage: ${USAGE}`);
      return 2;
    }
    const checks = await verifyArchives(dir);
    const lines = checks.map(
      (c) =>
        `${c.ok ? 'ok' : 'INCOMPLETE'} ${c.manifest}: ${c.rows} rows` +
        (c.bodiesVerified ? `, ${c.bodiesVerified} raw bodies match their payload hash` : '') +
        c.problems.map((p) => `\n  - ${p}`).join(''),
    );
    lines.push(`${checks.length} archives, ${checks.filter((c) => !c.ok).length} incomplete`);
    process.stdout.write(`${lines.join('\n')}\n`);
    return checks.every((c) => c.ok) ? 0 : 1;
  }
  const unknown = args.filter((a) => !['--apply', '--json'].includes(a));
  if (unknown.length) {
    console.error(`unknown argument ${unknown[0]}: ${USAGE}`);
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
    // The CLI archives with the directory connector (a module's connector runs in the receiver's job).
    const archiver =
      config.archiveClasses.length && config.archiveDir
        ? archiverOf(new DirectoryArchiveConnector(config.archiveDir))
        : undefined;
    if (config.archiveClasses.length && config.archiveConnector !== 'directory') {
      console.error(
        `RETENTION_ARCHIVE_CONNECTOR=${config.archiveConnector}: npm run retention archives to a directory only; let the receiver's job apply the policy`,
      );
      return undefined;
    }
    const engine = new RetentionEngine(client, config, { archiver, log: (line) => console.error(line) });
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
  if (!report) return 2;
  process.stdout.write(
    `${args.includes('--json') ? JSON.stringify(report, null, 2) : formatRetentionReport(report)}\n`,
  );
  return 0;
}

runCli('retention', main);
