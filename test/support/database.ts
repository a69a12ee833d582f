import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../migrations/index.js';
import { buildDataSourceOptions } from '../../src/platform/database/data-source-options.js';
import { runMigrationsLocked } from '../../src/platform/database/migrator.js';

const { Client } = pg;

/** What the row helpers need of a connection: a pg Pool, PoolClient or Client. */
export interface Queryable {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    text: string,
    values?: unknown[],
  ): Promise<pg.QueryResult<R>>;
}

/** Admin URL of the test server and the migrated template database, set by global setup. */
export function testServer(): { adminUrl: string; template: string } {
  const adminUrl = process.env.TEST_ADMIN_URL;
  const template = process.env.TEST_TEMPLATE_DB;
  if (!adminUrl || !template) throw new Error('test database not prepared: run through jest (global setup)');
  return { adminUrl, template };
}

/** The same URL with another database name. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/** Runs `fn` with a client connected to `url`. */
export async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * A new empty database migrated with the first `count` of MIGRATIONS only, for a test of the next
 * migration on a populated database of the schema before it.
 * @returns its URL and a function that drops it.
 */
export async function createDatabaseMigratedTo(
  count: number,
): Promise<{ url: string; drop: () => Promise<void> }> {
  const { adminUrl } = testServer();
  const name = `t_${randomBytes(6).toString('hex')}`;
  await withClient(adminUrl, (c) => c.query(`CREATE DATABASE ${name} TEMPLATE template0`));
  const url = withDatabase(adminUrl, name);
  const old = await new DataSource({
    ...buildDataSourceOptions(url, undefined, 2),
    migrations: MIGRATIONS.slice(0, count),
  } as ConstructorParameters<typeof DataSource>[0]).initialize();
  try {
    await old.runMigrations({ transaction: 'each' });
  } finally {
    await old.destroy();
  }
  return {
    url,
    drop: () =>
      withClient(adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(
        () => undefined,
      ),
  };
}

/**
 * A fresh database for one test file, cloned from the migrated template (immich style).
 * @returns its URL and a function that drops it.
 */
export async function createTestDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const { adminUrl, template } = testServer();
  await migrateTemplate(withDatabase(adminUrl, template));
  const name = `t_${randomBytes(6).toString('hex')}`;
  await withClient(adminUrl, (c) => c.query(`CREATE DATABASE ${name} TEMPLATE ${template}`));
  return {
    url: withDatabase(adminUrl, name),
    drop: () =>
      withClient(adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(
        () => undefined,
      ),
  };
}

/** Runs the real migrations on the template (under their advisory lock; a no-op once done). */
async function migrateTemplate(url: string): Promise<void> {
  const ds = await new DataSource(buildDataSourceOptions(url, undefined, 2)).initialize();
  try {
    await runMigrationsLocked(ds);
  } finally {
    await ds.destroy();
  }
}
