import pg from 'pg';
import { EmbeddedPostgresServer } from './embedded-postgres.js';

/** A command-line tool cannot reach a database: its message is printed, exit code 2. */
export class NoDatabaseError extends Error {}

/**
 * Runs `work` with a client of the receiver's database for a command-line tool (`ledger:verify`,
 * `wallet:reconcile`): `DATABASE_URL`, else the embedded PostgreSQL of `npm start` (running, or
 * started and stopped around `work`).
 * @throws NoDatabaseError when `DATABASE_URL` is unset and the embedded data folder is empty.
 */
export async function withCliDatabase<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  let url = process.env.DATABASE_URL || undefined;
  let embedded: EmbeddedPostgresServer | undefined;
  if (!url) {
    const server = new EmbeddedPostgresServer(
      {
        dataDir: process.env.EMBEDDED_PG_DATA_DIR || '.data/postgres',
        clustersDir: process.env.EMBEDDED_PG_CLUSTERS_DIR || undefined,
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
      throw new NoDatabaseError(
        'no database: DATABASE_URL is unset and the embedded data folder is empty (run npm start once)',
      );
    } else {
      embedded = server;
      url = await server.start();
    }
  }
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    return await work(client);
  } finally {
    await client.end().catch(() => undefined);
    await embedded?.stop();
  }
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
