import { spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { createServer, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import { MAIN_JS, portRange, requireBuild } from './support/receiver.js';
import { OPS_KEY, SECRET } from '../support/test-app.js';

// A second copy started on an HTTP port in use stops at once with a message naming PORT, before
// it starts an embedded PostgreSQL or migrates anything (README: "a second copy ... needs its own
// PORT").

const [PORT, EMBEDDED_PG_PORT] = portRange(50, 2);
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
    const proc = spawn(process.execPath, [MAIN_JS], {
      env: {
        PATH: process.env.PATH,
        SPORTAPI_WEBHOOK_SECRETS: SECRET,
        OPS_API_KEYS: OPS_KEY,
        HOST: '127.0.0.1',
        PORT: String(PORT),
        EMBEDDED_PG_PORT: String(EMBEDDED_PG_PORT),
        EMBEDDED_PG_DATA_DIR: DATA_DIR,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    proc.stdout.on('data', (c: Buffer) => (output += c.toString()));
    proc.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const code = await new Promise<number | null>((done) => proc.once('exit', (c) => done(c)));
    expect(code).toBe(1);
    expect(output).toContain(
      `start-up failed: PORT ${PORT} on 127.0.0.1 is in use by another process; set PORT`,
    );
    expect(existsSync(DATA_DIR)).toBe(false);
  }, 20_000);
});
