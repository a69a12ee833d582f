import { ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import pg from 'pg';
import type { CurrencyTable } from '../../../src/platform/common/currency.js';
import { LedgerReport, LedgerVerifier } from '../../../src/core/ledger/ledger-verifier.js';
import { createTestDatabase } from '../../support/database.js';
import { fetchRead } from '../../support/http.js';
import { OPS_KEY, SECRET, sign } from '../../support/test-app.js';
import { sleep } from '../../support/wait.js';

/** The built receiver (`npm run test:reliability` builds first). */
export const MAIN_JS = resolve(process.cwd(), 'dist/src/main.js');

/** Ports of this suite: 5300-5409 (one range per test file, see {@link portRange}). */
const PORT_BASE = Number(process.env.RELIABILITY_PORT_BASE || 5300);

/** `count` ports of the suite, at `offset` inside its range; test files use disjoint offsets. */
export function portRange(offset: number, count = 1): number[] {
  return Array.from({ length: count }, (_, i) => PORT_BASE + offset + i);
}

/** Fails the file early with a clear message when the build is missing. */
export function requireBuild(): void {
  if (!existsSync(MAIN_JS))
    throw new Error(`${MAIN_JS} missing: run npm run build (npm run test:reliability does)`);
}

/** Every receiver process this test file spawned, killed when the Jest worker exits. */
const spawned = new Set<ChildProcess>();
process.once('exit', () => {
  for (const p of spawned) p.kill('SIGKILL');
});

/** A receiver running as its own process (`node dist/src/main.js`), its output captured. */
export interface Receiver {
  port: number;
  url: string;
  proc: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output: () => string;
  /** Resolves with the exit code/signal once the process has ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sends a signal (no-op when already ended). */
  kill: (signal: NodeJS.Signals) => void;
}

/**
 * Spawns `node dist/src/main.js` on `port` against `databaseUrl` with the test secrets, and
 * waits until it answers HTTP (`/docs-json`). `env` adds or overrides variables; `cwd` is its
 * working directory (the checkout it runs in; default this one); `entry` the file node runs (a
 * bookmaker's own entry point; default `dist/src/main.js`).
 * @throws when it exits or does not answer within `timeoutMs`.
 */
export async function startReceiver(
  port: number,
  databaseUrl: string,
  env: Record<string, string> = {},
  timeoutMs = 30_000,
  cwd?: string,
  entry = MAIN_JS,
): Promise<Receiver> {
  requireBuild();
  let out = '';
  const proc = spawn(process.execPath, [entry], {
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      NODE_ENV: 'production',
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      SPORTAPI_WEBHOOK_SECRETS: SECRET,
      OPS_API_KEYS: OPS_KEY,
      DB_POOL_SIZE: '8',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd,
  });
  spawned.add(proc);
  proc.once('exit', () => spawned.delete(proc));
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    proc.once('exit', (code, signal) => done({ code, signal })),
  );
  let ended = false;
  void exited.then(() => (ended = true));
  const receiver: Receiver = {
    port,
    url: `http://127.0.0.1:${port}`,
    proc,
    output: () => out,
    exited,
    kill: (signal) => {
      if (!ended) proc.kill(signal);
    },
  };
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (ended) throw new Error(`receiver on ${port} exited during start-up:\n${out}`);
    try {
      if ((await fetchRead(`${receiver.url}/docs-json`)).status === 200) return receiver;
    } catch {
      // not listening yet
    }
    await sleep(200);
  }
  receiver.kill('SIGKILL');
  throw new Error(`receiver on ${port} did not answer within ${timeoutMs} ms:\n${out}`);
}

/** Stops a receiver: SIGTERM, then SIGKILL after `graceMs`. */
export async function stopReceiver(r: Receiver | undefined, graceMs = 10_000): Promise<void> {
  if (!r) return;
  r.kill('SIGTERM');
  const timer = setTimeout(() => r.kill('SIGKILL'), graceMs);
  await r.exited;
  clearTimeout(timer);
}

/** Answer of one delivery: HTTP status (0 = transport error, e.g. connection refused/reset) and body. */
export interface DeliveryAnswer {
  status: number;
  body: unknown;
  text: string;
}

/** `{status, code}` of an answer, `code` being its body's `error.code` (undefined without one). */
export function statusAndCode(answer: DeliveryAnswer): { status: number; code: string | undefined } {
  return { status: answer.status, code: (answer.body as { error?: { code?: string } })?.error?.code };
}

/** POSTs a signed batch to a running receiver with `fetch`; a transport error is status 0. */
export async function post(
  baseUrl: string,
  batch: unknown,
  opts: { timeoutMs?: number; headers?: Record<string, string> } = {},
): Promise<DeliveryAnswer> {
  const body = typeof batch === 'string' ? batch : JSON.stringify(batch);
  try {
    const res = await fetch(`${baseUrl}/sportapi/callback`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-signature': sign(body), ...opts.headers },
      body,
      signal: AbortSignal.timeout(opts.timeoutMs ?? 15_000),
    });
    const text = await res.text();
    let parsed: unknown = undefined;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    return { status: res.status, body: parsed, text };
  } catch (err) {
    return { status: 0, body: undefined, text: String((err as Error).message) };
  }
}

/** Partner API call with the test bearer key; returns status and parsed body. */
export async function partner(
  baseUrl: string,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${OPS_KEY}`, 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

/** A database of one reliability test file, with a pg pool on it for the test's own queries. */
export interface SuiteDatabase {
  url: string;
  pool: pg.Pool;
  /** Ends the pool and drops the database. */
  close: () => Promise<void>;
}

/**
 * Fails early without the build ({@link requireBuild}), then creates a database cloned from the
 * migrated template and a pool of at most `poolSize` connections on it (opened when used).
 */
export async function suiteDatabase(poolSize: number): Promise<SuiteDatabase> {
  requireBuild();
  const db = await createTestDatabase();
  const pool = new pg.Pool({ connectionString: db.url, max: poolSize });
  return {
    url: db.url,
    pool,
    close: async () => {
      await pool.end();
      await db.drop();
    },
  };
}

/** The database and the receiver processes of a reliability test file, set up by {@link useReceivers}. */
export class ReceiverSuite {
  db!: SuiteDatabase;
  /** The receivers running, one per port; a test that restarts one puts the new one in its place. */
  readonly receivers: Receiver[] = [];

  /** The first receiver (the only one in most files); assigning replaces it, e.g. after a restart. */
  get receiver(): Receiver {
    return this.receivers[0];
  }

  set receiver(replacement: Receiver) {
    this.receivers[0] = replacement;
  }
}

/**
 * Registers the hooks of a reliability test file: `beforeAll` creates a {@link suiteDatabase} with a
 * pool of `poolSize` and starts a receiver on each of `ports` with `env` ({@link startReceiver});
 * `afterAll` stops the receivers then in `receivers` and only then drops the database. Further
 * set-up goes in later `beforeAll` hooks. @returns the suite, filled in once `beforeAll` has run.
 */
export function useReceivers(
  ports: number[],
  { env = {}, poolSize = 2 }: { env?: Record<string, string>; poolSize?: number } = {},
): ReceiverSuite {
  const suite = new ReceiverSuite();
  beforeAll(async () => {
    suite.db = await suiteDatabase(poolSize);
    suite.receivers.push(...(await Promise.all(ports.map((port) => startReceiver(port, suite.db.url, env)))));
  }, 120_000);
  afterAll(async () => {
    await Promise.all(suite.receivers.map((r) => stopReceiver(r)));
    await suite.db?.close();
  });
  return suite;
}

/**
 * Through the partner API (CONTRACT §10): deposits `deposit.amount` EUR into account `deposit.id`
 * (Idempotency-Key `deposit.key`) on `urls[0]`, then registers each of `coupons` for it with `stake`
 * EUR, coupon i on `urls[i % urls.length]`. Asserts a 201 for every call.
 */
export async function fundCoupons(
  urls: string | string[],
  deposit: { id: string; amount: string; key: string; reason: string },
  coupons: string[],
  stake: string,
): Promise<void> {
  const receivers = typeof urls === 'string' ? [urls] : urls;
  const dep = await partner(
    receivers[0],
    'POST',
    `/accounts/${deposit.id}/adjustments`,
    { amount: deposit.amount, currency: 'EUR', reason: deposit.reason },
    { 'idempotency-key': deposit.key },
  );
  expect(dep.status).toBe(201);
  for (const [i, code] of coupons.entries()) {
    const res = await partner(receivers[i % receivers.length], 'POST', '/coupons', {
      coupon_code: code,
      accountId: deposit.id,
      stake,
      currency: 'EUR',
    });
    expect(res.status).toBe(201);
  }
}

/** Runs {@link LedgerVerifier} on a fresh connection to `url`. */
export async function verifyLedger(url: string, currencies?: CurrencyTable): Promise<LedgerReport> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await new LedgerVerifier(client, currencies).verify();
  } finally {
    await client.end();
  }
}

/** `check subject` of every violation, for readable assertions. */
export function violationsOf(report: LedgerReport): string[] {
  return report.violations.map((v) => `${v.check} ${v.subject}`);
}
