import { jest } from '@jest/globals';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { migrateCliDatabase } from '../../src/platform/database/cli-database.js';
import { EmbeddedPostgresServer } from '../../src/platform/database/embedded-postgres.js';
import { MIGRATIONS } from '../../migrations/index.js';

// New-user report 2, finding 5 (docs/operating.md, "Operator commands"): `npm run migration:run`
// uses the embedded PostgreSQL a live receiver runs, as ledger:verify and wallet:reconcile do,
// instead of refusing the data folder as in use.

/** A TCP port free on the loopback right now. */
function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => done(port));
    });
  });
}

describe('npm run migration:run next to a running embedded PostgreSQL', () => {
  let live: EmbeddedPostgresServer;
  let port: number;
  const saved = { ...process.env };
  beforeAll(async () => {
    port = await freePort();
    // The receiver's server: its data folder, its port, its database `settlement`.
    live = new EmbeddedPostgresServer(
      {
        dataDir: join(tmpdir(), `settlement-receiver-migration-run-${process.pid}`),
        port,
        database: 'settlement',
        persistent: false,
        settings: ['fsync=off'],
      },
      { log: () => undefined, warn: () => undefined },
    );
    await live.start();
    delete process.env.DATABASE_URL;
    process.env.EMBEDDED_PG_DATA_DIR = live.dataDirectory;
    process.env.EMBEDDED_PG_PORT = String(port);
  }, 120_000);
  afterAll(async () => {
    process.env = saved;
    await live?.stop();
  });

  it('migrates the running server, says so, and leaves it running', async () => {
    const warn = jest.spyOn(console, 'warn').mockImplementation(() => undefined);
    let applied: string[];
    let again: string[];
    let said: unknown[][];
    try {
      applied = await migrateCliDatabase();
      again = await migrateCliDatabase();
    } finally {
      said = [...warn.mock.calls];
      warn.mockRestore();
    }
    expect(said).toEqual([
      [`using the running embedded PostgreSQL at 127.0.0.1:${port}`],
      [`using the running embedded PostgreSQL at 127.0.0.1:${port}`],
    ]);
    expect(applied).toEqual(MIGRATIONS.map((m) => m.name));
    expect(again).toEqual([]);
    const client = new pg.Client({ connectionString: live.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY id');
      expect(rows.map((r) => r.name)).toEqual(applied);
    } finally {
      await client.end();
    }
  }, 120_000);
});
