import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../migrations/index.js';
import { buildDataSourceOptions } from '../../src/platform/database/data-source-options.js';
import { EmbeddedPostgresServer } from '../../src/platform/database/embedded-postgres.js';
import { EmbeddedPostgresError } from '../../src/platform/database/embedded-postgres-process.js';
import { trustedCopyOf } from '../../src/platform/database/embedded-postgres-root.js';
import { runMigrationsLocked } from '../../src/platform/database/migrator.js';
import { MAIN_JS, Receiver, portRange, post, startReceiver, stopReceiver } from './support/receiver.js';
import { OPS_KEY, SECRET } from '../support/test-app.js';

// The embedded PostgreSQL launcher (README's first command without DATABASE_URL). As root the
// server runs as the `postgres` system user, which cannot enter a checkout under /root (mode
// 700): its binaries are run from a verified copy under the system temp folder, and a data
// folder in such a checkout's .data is a link to a cluster of its own in the clusters folder
// (/var/lib/settlement-receiver; here one under the test's folder). Every start failure is an
// EmbeddedPostgresError with one line naming the cause and what to set, never an unhandled
// 'error' event.

const [PG_PORT, TAKEN_PORT, HTTP_FIRST, HTTP_SECOND, PG_FIRST, PG_SECOND] = portRange(60, 6);
const isRoot = userInfo().uid === 0;

/** The installed distribution (bin/, lib/, share/) of the platform package. */
async function installedNative(): Promise<string> {
  const pkg = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as {
    postgres: string;
  };
  return resolve(pkg.postgres, '..', '..');
}

/** Rows of `sql` on the database at `url`. */
async function rows(url: string, sql: string): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows as unknown[];
  } finally {
    await client.end();
  }
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

  (isRoot ? describe : describe.skip)(
    'as root, a checkout the postgres user cannot reach (like one under /root)',
    () => {
      const clusters = join(work, 'clusters');
      const postgresUid = () => Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }));

      /** An empty checkout folder at `path` (replacing what was there), private like /root (mode 700). */
      function newCheckout(path: string): string {
        rmSync(path, { recursive: true, force: true });
        mkdirSync(path, { mode: 0o700 });
        chmodSync(path, 0o700);
        return path;
      }

      /** A launcher of `checkout`'s cluster (the default `.data/postgres`) whose lines go to `logged`. */
      function launcher(checkout: string, logged: string[] = [], dataDir = '.data/postgres', port = PG_PORT) {
        return new EmbeddedPostgresServer(
          { dataDir, checkoutDir: checkout, clustersDir: clusters, port, database: 'settlement' },
          { log: (m) => logged.push(m), warn: (m) => logged.push(m) },
        );
      }

      /** Starts `checkout`'s cluster, runs `check` with the database's URL, stops it; resolves with its data folder and lines. */
      async function startOnce(
        checkout: string,
        check: (url: string) => Promise<void> = async () => undefined,
      ): Promise<{ dataDir: string; logged: string[] }> {
        const logged: string[] = [];
        const server = launcher(checkout, logged);
        const url = await server.start();
        try {
          await check(url);
        } finally {
          await server.stop();
        }
        return { dataDir: server.dataDirectory, logged };
      }

      const listening = (dataDir: string) =>
        `embedded PostgreSQL listening on 127.0.0.1:${PG_PORT} (data: ${dataDir})`;
      const asRoot = expect.stringMatching(/^as root: PostgreSQL runs as the postgres user from \//);
      const hasMarker = async (url: string) =>
        rows(url, `SELECT to_regclass('marker') IS NOT NULL AS present`);

      it('a new checkout gets a new cluster kept in the clusters folder; the same checkout finds it again; deleting .data or cloning anew starts a new one and removes the old', async () => {
        const checkout = newCheckout(join(work, 'clone'));
        const link = join(checkout, '.data', 'postgres');

        // First start: a cluster under a random id, linked from .data/postgres, the lines saying where.
        const first = await startOnce(checkout, async (url) => {
          await rows(url, `CREATE TABLE marker (v text); INSERT INTO marker VALUES ('first')`);
        });
        const firstId = basename(dirname(first.dataDir));
        expect(firstId).toMatch(/^[0-9a-f]{16}$/);
        expect(first.dataDir).toBe(join(clusters, firstId, 'postgres'));
        expect(readlinkSync(link)).toBe(first.dataDir);
        expect(first.logged).toEqual([
          `the postgres user cannot reach ${link} (${checkout} is private): its cluster is kept in ${first.dataDir}, ` +
            `and ${link} links there (delete the link, or ${checkout}/.data, to start on a new database)`,
          asRoot,
          `initialising a new cluster in ${first.dataDir}`,
          listening(first.dataDir),
        ]);
        expect(statSync(first.dataDir)).toMatchObject({ uid: postgresUid() });
        expect(statSync(first.dataDir).mode & 0o777).toBe(0o700);
        expect(statSync(dirname(first.dataDir))).toMatchObject({ uid: 0 });
        expect(statSync(dirname(first.dataDir)).mode & 0o777).toBe(0o755);
        expect(JSON.parse(readFileSync(join(clusters, firstId, 'cluster.json'), 'utf8'))).toEqual({
          link,
          checkout,
          created: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        });

        // The same checkout again: the same cluster and its data.
        const again = await startOnce(checkout, async (url) => {
          expect(await rows(url, 'SELECT v FROM marker')).toEqual([{ v: 'first' }]);
        });
        expect(again.dataDir).toBe(first.dataDir);
        expect(again.logged).toEqual([asRoot, listening(first.dataDir)]);

        // .data deleted (the README's reset): a new, empty cluster; the old one is removed.
        rmSync(join(checkout, '.data'), { recursive: true });
        const reset = await startOnce(checkout, async (url) => {
          expect(await hasMarker(url)).toEqual([{ present: false }]);
          await rows(url, `CREATE TABLE marker (v text)`);
        });
        expect(reset.dataDir).not.toBe(first.dataDir);
        expect(reset.logged).toContain(
          `removed the embedded cluster ${join(clusters, firstId)}: ${link} no longer links to it (${checkout} was reset or replaced)`,
        );
        expect(existsSync(join(clusters, firstId))).toBe(false);

        // The checkout deleted and cloned again at the same path: a new, empty cluster again.
        newCheckout(checkout);
        const clone = await startOnce(checkout, async (url) => {
          expect(await hasMarker(url)).toEqual([{ present: false }]);
        });
        expect(clone.dataDir).not.toBe(reset.dataDir);
        expect(clone.logged).toContain(
          `removed the embedded cluster ${dirname(reset.dataDir)}: ${link} no longer links to it (${checkout} was reset or replaced)`,
        );
        // Nothing piles up: the clusters folder holds the one cluster in use.
        expect(readdirSync(clusters)).toEqual([basename(dirname(clone.dataDir))]);
      }, 240_000);

      it('a moved checkout is reported, not removed, and takes its cluster back when started; a running cluster is left alone', async () => {
        const before = newCheckout(join(work, 'before-move'));
        const moved = join(work, 'after-move');
        rmSync(moved, { recursive: true, force: true });
        const first = await startOnce(before, async (url) => {
          await rows(url, `CREATE TABLE marker (v text); INSERT INTO marker VALUES ('moved')`);
        });
        renameSync(before, moved);

        // A cluster whose link was deleted while its server runs.
        const busy = newCheckout(join(work, 'busy'));
        const busyServer = launcher(busy, [], '.data/postgres', TAKEN_PORT);
        await busyServer.start();
        try {
          rmSync(join(busy, '.data'), { recursive: true });
          const other = await startOnce(newCheckout(join(work, 'other')));
          const folder = dirname(first.dataDir);
          expect(other.logged).toContain(
            `the embedded cluster ${folder} belongs to ${join(before, '.data', 'postgres')}, whose checkout is gone: ` +
              `if it moved, start it once to take the cluster back; else remove ${folder}`,
          );
          expect(existsSync(join(first.dataDir, 'PG_VERSION'))).toBe(true);
          expect(existsSync(join(busyServer.dataDirectory, 'PG_VERSION'))).toBe(true);
        } finally {
          await busyServer.stop();
        }

        const back = await startOnce(moved, async (url) => {
          expect(await rows(url, 'SELECT v FROM marker')).toEqual([{ v: 'moved' }]);
        });
        expect(back.dataDir).toBe(first.dataDir);
        expect(back.logged).toContain(
          `${dirname(first.dataDir)} now belongs to ${join(moved, '.data', 'postgres')} (it was ${join(before, '.data', 'postgres')})`,
        );
      }, 240_000);

      it('a data folder outside .data that the postgres user cannot reach, or one in .data holding files: refused with one line naming it', async () => {
        const checkout = newCheckout(join(work, 'explicit'));
        const explicit = join(checkout, 'pgdata');
        await expect(launcher(checkout, [], explicit).start()).rejects.toThrow(
          new EmbeddedPostgresError(
            `the postgres user (PostgreSQL's user as root) cannot reach the data folder ${explicit} (${checkout} is private); ` +
              `set EMBEDDED_PG_DATA_DIR to a folder it can reach, or to one inside ${checkout}/.data`,
          ),
        );
        expect(existsSync(explicit)).toBe(false);

        const holding = join(checkout, '.data', 'postgres');
        mkdirSync(holding, { recursive: true });
        writeFileSync(join(holding, 'PG_VERSION'), '17\n');
        await expect(launcher(checkout).start()).rejects.toThrow(
          new EmbeddedPostgresError(
            `the postgres user (PostgreSQL's user as root) cannot reach the data folder ${holding} (${checkout} is private); ` +
              'it holds files: move them to a folder that user can reach and set EMBEDDED_PG_DATA_DIR there, or remove it to start on a new database',
          ),
        );
        expect(readdirSync(holding)).toEqual(['PG_VERSION']);

        // The receiver given that EMBEDDED_PG_DATA_DIR stops with the same line.
        const run = spawnSync(process.execPath, [MAIN_JS], {
          cwd: checkout,
          env: {
            PATH: process.env.PATH,
            SPORTAPI_WEBHOOK_SECRETS: SECRET,
            OPS_API_KEYS: OPS_KEY,
            HOST: '127.0.0.1',
            PORT: String(HTTP_FIRST),
            EMBEDDED_PG_PORT: String(PG_FIRST),
            EMBEDDED_PG_DATA_DIR: 'pgdata',
            EMBEDDED_PG_CLUSTERS_DIR: clusters,
          },
          encoding: 'utf8',
          timeout: 60_000,
        });
        expect({ status: run.status, stderr: run.stderr }).toEqual({
          status: 1,
          stderr:
            `start-up failed: the postgres user (PostgreSQL's user as root) cannot reach the data folder ${explicit} (${checkout} is private); ` +
            `set EMBEDDED_PG_DATA_DIR to a folder it can reach, or to one inside ${checkout}/.data\n`,
        });
      }, 90_000);

      it("the README's second copy starts beside the first on its own cluster; each start line names its data", async () => {
        // "(`PORT=3001 EMBEDDED_PG_PORT=54330 … npm start` runs a second copy beside the first)"
        const command = /`((?:[A-Z_]+=\S+ )+)npm start` runs a second copy/.exec(
          readFileSync('README.md', 'utf8').replace(/\s+/g, ' '),
        );
        expect(command).not.toBeNull();
        const readmeEnv = Object.fromEntries(
          command![1]
            .trim()
            .split(' ')
            .map((assignment) => assignment.split('=') as [string, string]),
        );
        expect(readmeEnv).toMatchObject({ PORT: expect.any(String), EMBEDDED_PG_PORT: expect.any(String) });
        const checkout = newCheckout(join(work, 'two-copies'));
        const env = { EMBEDDED_PG_CLUSTERS_DIR: clusters };
        let first: Receiver | undefined;
        let second: Receiver | undefined;
        try {
          first = await startReceiver(
            HTTP_FIRST,
            '',
            { ...env, EMBEDDED_PG_PORT: String(PG_FIRST) },
            120_000,
            checkout,
          );
          // The README's variables, on this suite's ports.
          second = await startReceiver(
            HTTP_SECOND,
            '',
            { ...env, ...readmeEnv, PORT: String(HTTP_SECOND), EMBEDDED_PG_PORT: String(PG_SECOND) },
            120_000,
            checkout,
          );
          const firstData = readlinkSync(join(checkout, '.data', 'postgres'));
          const secondData = readlinkSync(
            resolve(checkout, readmeEnv.EMBEDDED_PG_DATA_DIR ?? '.data/postgres'),
          );
          expect(secondData).not.toBe(firstData);
          for (const [receiver, dataDir] of [
            [first, firstData],
            [second, secondData],
          ] as const) {
            expect(receiver.output()).toContain(
              `listening on http://127.0.0.1:${receiver.port} (callback POST /sportapi/callback, Swagger UI /docs) on the embedded PostgreSQL (data ${dataDir})`,
            );
            const batch = {
              batchId: 'copy-1',
              couponCount: 1,
              coupons: [{ coupon_code: 'C1', status: 1, events: [{ uuid: 'C1-e1', status: 0 }] }],
            };
            const answer = await post(receiver.url, batch);
            expect({ status: answer.status, body: answer.body }).toEqual({
              status: 200,
              body: { success: true, processed: 1 },
            });
            expect((await post(receiver.url, batch)).body).toEqual({
              success: true,
              processed: 1,
              duplicate: true,
            });
          }
          // ledger:verify from the checkout finds the first copy's running server through the link.
          const verify = spawnSync(process.execPath, [resolve('dist/src/core/ledger/verify-cli.js')], {
            cwd: checkout,
            env: { PATH: process.env.PATH },
            encoding: 'utf8',
          });
          expect({ status: verify.status, stderr: verify.stderr.trim() }).toEqual({
            status: 0,
            stderr: `using the running embedded PostgreSQL at 127.0.0.1:${PG_FIRST}`,
          });
        } finally {
          await stopReceiver(second);
          await stopReceiver(first);
        }
      }, 300_000);
    },
  );
});
