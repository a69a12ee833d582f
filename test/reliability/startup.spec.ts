import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import { MAIN_JS, portRange, requireBuild } from './support/receiver.js';
import { testServer, withDatabase } from '../support/database.js';
import { OPS_KEY, SECRET } from '../support/test-app.js';

// A second copy started on an HTTP port in use stops at once with a message naming PORT, before
// it starts an embedded PostgreSQL or migrates anything (README: "a second copy ... needs its own
// PORT").

const [PORT, EMBEDDED_PG_PORT, FREE_PORT, UNUSED_PG_PORT] = portRange(50, 4);
const DATA_DIR = resolve(tmpdir(), `settlement-startup-test-${process.pid}`);

describe('start-up', () => {
  let holder: Server;

  beforeAll(async () => {
    requireBuild();
    holder = createServer();
    await new Promise<void>((done) => holder.listen(PORT, '127.0.0.1', done));
  });
  afterAll(async () => {
    await new Promise((done) => holder.close(done));
    rmSync(DATA_DIR, { recursive: true, force: true });
  });

  it('HTTP port in use → exit 1 with "PORT … in use; set PORT", no embedded cluster created', async () => {
    const { code, output } = await run({
      PORT: String(PORT),
      EMBEDDED_PG_PORT: String(EMBEDDED_PG_PORT),
      EMBEDDED_PG_DATA_DIR: DATA_DIR,
    });
    expect(code).toBe(1);
    expect(output).toContain(
      `start-up failed: PORT ${PORT} on 127.0.0.1 is in use by another process; set PORT`,
    );
    expect(existsSync(DATA_DIR)).toBe(false);
  }, 20_000);

  /** Starts main.js with `env`; resolves with its exit code, everything it printed and its stderr. */
  async function run(
    env: Record<string, string>,
  ): Promise<{ code: number | null; output: string; stderr: string }> {
    const proc = spawn(process.execPath, [MAIN_JS], {
      env: {
        PATH: process.env.PATH,
        SPORTAPI_WEBHOOK_SECRETS: SECRET,
        OPS_API_KEYS: OPS_KEY,
        HOST: '127.0.0.1',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    proc.stdout.on('data', (c: Buffer) => (output += c.toString()));
    let stderr = '';
    proc.stderr.on('data', (c: Buffer) => {
      output += c.toString();
      stderr += c.toString();
    });
    const code = await new Promise<number | null>((done) => proc.once('exit', (c) => done(c)));
    return { code, output, stderr };
  }

  it('DATABASE_URL that cannot be used → exit 1 with one line naming it, no framework stack traces', async () => {
    const refused = await run({
      PORT: String(FREE_PORT),
      DATABASE_URL: `postgres://postgres@127.0.0.1:${UNUSED_PG_PORT}/settlement`,
    });
    expect({ code: refused.code, output: refused.output }).toEqual({
      code: 1,
      output: `start-up failed: cannot use DATABASE_URL (127.0.0.1:${UNUSED_PG_PORT}/settlement): connect ECONNREFUSED 127.0.0.1:${UNUSED_PG_PORT}\n`,
    });
    // A server that answers, without the database.
    const url = withDatabase(testServer().adminUrl, 'settlement_startup_missing_db');
    const missing = await run({ PORT: String(FREE_PORT), DATABASE_URL: url });
    expect(missing.code).toBe(1);
    expect(missing.output).toMatch(
      /^start-up failed: cannot use DATABASE_URL \(.+\/settlement_startup_missing_db\): database "settlement_startup_missing_db" does not exist\n$/,
    );
  }, 30_000);

  it('embedded PostgreSQL port taken → exit 1 with one line naming EMBEDDED_PG_PORT', async () => {
    const { code, output, stderr } = await run({
      PORT: String(FREE_PORT),
      EMBEDDED_PG_PORT: String(PORT),
      EMBEDDED_PG_DATA_DIR: DATA_DIR,
    });
    expect(code).toBe(1);
    expect(stderr).toBe(
      `start-up failed: port ${PORT} for the embedded PostgreSQL is taken by another process; set EMBEDDED_PG_PORT\n`,
    );
    expect(output).not.toMatch(/\n\s+at |Unhandled 'error' event/);
  }, 30_000);

  it('embedded data folder not empty and no cluster → exit 1 with one line naming EMBEDDED_PG_DATA_DIR', async () => {
    const dataDir = resolve(tmpdir(), `settlement-startup-notempty-${process.pid}`);
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(resolve(dataDir, 'something.txt'), 'not a cluster');
    try {
      const { code, output, stderr } = await run({
        PORT: String(FREE_PORT),
        EMBEDDED_PG_PORT: String(UNUSED_PG_PORT),
        EMBEDDED_PG_DATA_DIR: dataDir,
      });
      expect(code).toBe(1);
      expect(stderr).toMatch(
        /^start-up failed: the embedded PostgreSQL could not initialise \S+ \(the folder is not empty and holds no cluster\); set EMBEDDED_PG_DATA_DIR to an empty or new folder\n$/,
      );
      expect(output).not.toMatch(/\n\s+at |Unhandled 'error' event/);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
