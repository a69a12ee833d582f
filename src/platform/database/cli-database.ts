import pg from 'pg';
import { DataSource } from 'typeorm';
import { buildDataSourceOptions } from './data-source-options.js';
import { EmbeddedPostgresServer } from './embedded-postgres.js';
import { extensionSchema, loadExtensionEntries } from './extension-schema.js';
import { MIGRATIONS } from '../../../migrations/index.js';
import { runMigrationsLocked } from './migrator.js';

/** A command-line tool cannot reach a database: its message is printed, exit code 2. */
export class NoDatabaseError extends Error {}

/**
 * Runs `work` with the URL of the receiver's database for a command-line tool (`migration:run`,
 * `ledger:verify`, `wallet:reconcile`, `retention`): `DATABASE_DIRECT_URL` (docs/production.md#pgbouncer),
 * else `DATABASE_URL`, else the embedded PostgreSQL of `npm start`
 * (a running one is used as it is, with the line `using the running embedded PostgreSQL at …` on
 * stderr; else it is started, and stopped after `work`).
 * @param initialise true: an empty embedded data folder is initialised (migration:run).
 * @throws NoDatabaseError when `DATABASE_URL` is unset, the embedded data folder is empty and
 *   `initialise` is false.
 */
export async function withCliDatabaseUrl<T>(
  work: (url: string) => Promise<T>,
  { initialise = false }: { initialise?: boolean } = {},
): Promise<T> {
  // The server itself: the tools hold sessions (locks, SET) a transaction-mode pooler would not keep.
  let url = process.env.DATABASE_DIRECT_URL || process.env.DATABASE_URL || undefined;
  let embedded: EmbeddedPostgresServer | undefined;
  if (!url) {
    const server = new EmbeddedPostgresServer(
      {
        dataDir: process.env.EMBEDDED_PG_DATA_DIR || '.data/postgres',
        clustersDir: process.env.EMBEDDED_PG_CLUSTERS_DIR || undefined,
        port: Number(process.env.EMBEDDED_PG_PORT || 54329),
        database: 'settlement',
      },
      // migration:run tells what it starts and initialises, as it always did; the checks do not.
      { log: initialise ? (m) => console.warn(m) : () => undefined, warn: (m) => console.warn(m) },
    );
    const running = server.runningUrl();
    if (running || (await server.isPortInUse())) {
      url = running ?? server.url;
      console.warn(`using the running embedded PostgreSQL at ${new URL(url).host}`);
    } else if (!initialise && !server.hasCluster()) {
      throw new NoDatabaseError(
        'no database: DATABASE_URL is unset and the embedded data folder is empty (run npm start once)',
      );
    } else {
      embedded = server;
      url = await server.start();
    }
  }
  try {
    return await work(url);
  } finally {
    await embedded?.stop();
  }
}

/** {@link withCliDatabaseUrl} with a connected client, ended after `work`. */
export function withCliDatabase<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  return withCliDatabaseUrl(async (url) => {
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      return await work(client);
    } finally {
      await client.end().catch(() => undefined);
    }
  });
}

/**
 * Applies the pending migrations (under the start-up's advisory lock) to the database of
 * {@link withCliDatabaseUrl}, initialising an empty embedded data folder: `npm run migration:run`.
 * The extensions' migrations too, with `RECEIVER_EXTENSIONS` naming their module
 * (docs/extending.md#schema).
 * @returns the names of the migrations applied, in order.
 */
export async function migrateCliDatabase(): Promise<string[]> {
  const extensions = extensionSchema(await loadExtensionEntries(), MIGRATIONS);
  return withCliDatabaseUrl(
    async (url) => {
      const dataSource = await new DataSource(
        buildDataSourceOptions(url, undefined, undefined, extensions),
      ).initialize();
      try {
        return await runMigrationsLocked(dataSource);
      } finally {
        await dataSource.destroy();
      }
    },
    { initialise: true },
  );
}

/**
 * Runs a command-line tool's `main` and exits with the code it returns; exit code 2 when it
 * reached no database ({@link NoDatabaseError}: its message) or failed (`<what> failed: …`).
 */
export function runCli(what: string, main: () => Promise<number>): void {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      if (err instanceof NoDatabaseError) console.error(err.message);
      else console.error(`${what} failed:`, err instanceof Error ? err.message : err);
      process.exit(2);
    },
  );
}
