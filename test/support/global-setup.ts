import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { tmpdir, userInfo } from 'node:os';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import ts from 'typescript';

// Jest loads this file outside its module system, where `.js` imports of the project's
// TypeScript do not resolve: the embedded PostgreSQL launcher is transpiled by TypeScript into a
// folder of its own and imported from there instead ({@link loadLauncher}; it imports packages
// and its own files only). The template database is migrated by the first test file that needs it
// (test/support/database.ts), with the real migrations.
type Launcher = typeof import('../../src/platform/database/embedded-postgres.js');

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
// reach (as root the server runs as that user), in a folder per user: another user's runs
// (root's, say) must not make it unwritable.
const DATA_ROOT = resolve(tmpdir(), `settlement-receiver-tests-${userInfo().uid}`);

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
  if (statSync(DATA_ROOT).uid !== userInfo().uid)
    throw new Error(`${DATA_ROOT} belongs to another user: remove it, or set TMPDIR to a folder of yours`);
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
 * The embedded PostgreSQL launcher (src/platform/database/embedded-postgres.ts and the
 * embedded-postgres-*.ts beside it), outside Jest's module system: each file transpiled by
 * TypeScript alone (it imports Node's modules, packages and its own files only) into a folder of
 * its own under node_modules/.cache, whence its `.js` imports of its own files and of packages
 * resolve, then imported; the folder is removed once loaded.
 */
async function loadLauncher(rootDir: string): Promise<Launcher> {
  const source = resolve(rootDir, 'src', 'platform', 'database');
  const out = resolve(rootDir, 'node_modules', '.cache', 'test-launcher', String(process.pid));
  mkdirSync(out, { recursive: true });
  try {
    for (const file of readdirSync(source).filter((f) => /^embedded-postgres[\w-]*\.ts$/.test(f))) {
      const { outputText } = ts.transpileModule(readFileSync(resolve(source, file), 'utf8'), {
        fileName: file,
        compilerOptions: {
          module: ts.ModuleKind.ESNext,
          target: ts.ScriptTarget.ES2023,
          esModuleInterop: true,
          isolatedModules: true,
        },
      });
      writeFileSync(resolve(out, file.replace(/\.ts$/, '.js')), outputText);
    }
    return (await import(pathToFileURL(resolve(out, 'embedded-postgres.js')).href)) as Launcher;
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

/**
 * Prepares PostgreSQL for the whole run: the server at `TEST_DATABASE_URL` (or `DATABASE_URL`),
 * whose database is created when missing, else a throw-away embedded server (the app's launcher)
 * under `<tmp>/settlement-receiver-tests-<uid>/test-postgres-<pid>` on a free port (parallel runs do
 * not meet); then an empty template database for the test files to migrate and clone; with
 * `TEST_PGBOUNCER_PORT`, PgBouncer (transaction mode, pool of 2) on that port in front of it,
 * through which the test apps connect (`TEST_POOLED_URL`, test-app.ts). A failure
 * ends the run with one line (`test set-up failed: …`) and exit code 1.
 */
export default async function globalSetup(globalConfig: { rootDir: string }): Promise<void> {
  try {
    await prepare(globalConfig.rootDir);
  } catch (err) {
    console.error(`test set-up failed: ${(err as Error).message}`);
    process.exit(1);
  }
}

async function prepare(rootDir: string): Promise<void> {
  let adminUrl = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL;
  if (!adminUrl) {
    removeStaleDataDirs();
    const { EmbeddedPostgresServer } = await loadLauncher(rootDir);
    const port = process.env.TEST_EMBEDDED_PG_PORT
      ? Number(process.env.TEST_EMBEDDED_PG_PORT)
      : await freePort();
    const server = new EmbeddedPostgresServer({
      dataDir: resolve(DATA_ROOT, `test-postgres-${process.pid}`),
      port,
      database: 'postgres',
      persistent: false,
      settings: ['fsync=off', 'max_connections=300'],
    });
    adminUrl = await server.start();
    (globalThis as { __embeddedPg?: { stop(): Promise<void> } }).__embeddedPg = server;
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
  if (process.env.TEST_PGBOUNCER_PORT) {
    // Test apps connect through PgBouncer in transaction mode (test-app.ts); databases are still
    // created and dropped on the server itself (TEST_ADMIN_URL).
    const { startPgBouncer } = (await import(
      pathToFileURL(resolve(rootDir, 'test/support/pgbouncer.mjs')).href
    )) as typeof import('./pgbouncer.mjs');
    const bouncer = await startPgBouncer({
      port: Number(process.env.TEST_PGBOUNCER_PORT),
      upstream: adminUrl,
    });
    (globalThis as { __pgBouncer?: { stop(): Promise<void> } }).__pgBouncer = bouncer;
    process.env.TEST_POOLED_URL = bouncer.url();
  }
}
