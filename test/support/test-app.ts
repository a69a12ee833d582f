import { INestApplication } from '@nestjs/common';
import { Test, TestingModuleBuilder } from '@nestjs/testing';
import { createHash, createHmac } from 'node:crypto';
import pg from 'pg';
import type { DestinationStream } from 'pino';
import request from 'supertest';
import { AppModule } from '../../src/app.module.js';
import type { AppOptions } from '../../src/app.module.js';
import { DeliveryAttemptWriter } from '../../src/platform/deliveries/delivery-attempt.writer.js';
import { configureApp } from '../../src/app.setup.js';
import { AppConfig, loadConfig } from '../../src/app.config.js';
import { createTestDatabase } from './database.js';

import { OPS_KEY, OTHER_SECRET, SECRET } from './secrets.js';

export { OPS_KEY, OTHER_SECRET, SECRET };
/**
 * Scoped keys of every test app next to {@link OPS_KEY} (a least-privilege set, CONTRACT §10):
 * name → secret; `hashedOperator` is configured as the SHA-256 of its secret.
 */
export const SCOPED_KEYS = {
  reader: { scopes: 'read', secret: 'test-reader-key-5f0c2a91' },
  placement: { scopes: 'register', secret: 'test-placement-key-8d1e7b33' },
  cashier: { scopes: 'read+money', secret: 'test-cashier-key-2b9a4c70' },
  operator: { scopes: 'read+operate', secret: 'test-operator-key-e61d0f58' },
  hashedOperator: { scopes: 'operate', secret: 'test-hashed-operator-key-a3c47e19' },
} as const;
export type ScopedKeyName = keyof typeof SCOPED_KEYS;

/** `OPS_API_KEYS` of the test apps: {@link OPS_KEY} bare, then {@link SCOPED_KEYS}. */
export const TEST_OPS_API_KEYS = [
  OPS_KEY,
  ...Object.entries(SCOPED_KEYS).map(([name, k]) =>
    name === 'hashedOperator'
      ? `${name}:${k.scopes}:sha256:${createHash('sha256').update(k.secret).digest('hex')}`
      : `${name}:${k.scopes}:${k.secret}`,
  ),
].join(',');

/** A running app on its own database, with a pg pool for assertions and helpers for requests. */
export interface TestContext {
  app: INestApplication;
  config: AppConfig;
  db: pg.Pool;
  url: string;
  close: () => Promise<void>;
}

/**
 * Boots the real application (same module and `configureApp` as `main.ts`) on a fresh database
 * cloned from the migrated template. `env` overrides configuration variables (`LOG_LEVEL` is
 * `fatal` unless set: tests that provoke failures on purpose would fill the output;
 * `AUTH_FAILURE_LIMIT` is 1000 unless set: tests send wrong keys on purpose; `HOUSE_SUB_ACCOUNTS`
 * is 1 unless set, so every house entry is on `house:<currency>` where a test names it;
 * `DELIVERY_ROLLUP_INTERVAL`, `BULK_ACTION_POLL_INTERVAL` and `RETENTION_INTERVAL` are `off` unless set: their background
 * transactions would take connections a test counts on, so the tests of the overview, of bulk
 * actions and of retention run them by hand, or set them);
 * `options.logDestination` receives the JSON log lines instead of stdout; `options.via` maps the
 * database URL the app uses (e.g. through a TCP proxy; `db` and `url` stay direct); without it, the
 * app goes through PgBouncer when the run has one ({@link pooled});
 * `options.override` replaces providers ({@link startApp}); `options.extensions` are the
 * bookmaker's modules given to `AppModule.forRoot` (docs/extending.md).
 */
export async function createTestApp(
  env: Record<string, string> = {},
  options: {
    logDestination?: DestinationStream;
    via?: (databaseUrl: string) => string;
    override?: (builder: TestingModuleBuilder) => TestingModuleBuilder;
    extensions?: AppOptions['extensions'];
  } = {},
): Promise<TestContext> {
  const database = await createTestDatabase();
  const config = loadConfig(
    {
      DATABASE_URL: options.via ? options.via(database.url) : database.url,
      ...(!options.via && pooled(database.url)),
      SPORTAPI_WEBHOOK_SECRETS: `${SECRET},${OTHER_SECRET}`,
      OPS_API_KEYS: TEST_OPS_API_KEYS,
      AUTH_FAILURE_LIMIT: '1000',
      HOUSE_SUB_ACCOUNTS: '1',
      DELIVERY_ROLLUP_INTERVAL: 'off',
      BULK_ACTION_POLL_INTERVAL: 'off',
      RETENTION_INTERVAL: 'off',
      RUN_MIGRATIONS_ON_START: '1',
      DB_POOL_SIZE: '12',
      LOG_LEVEL: 'fatal',
      // The console built for this run by the browser tests' global set-up (else dist/console).
      ...(process.env.CONSOLE_DIR && { CONSOLE_DIR: process.env.CONSOLE_DIR }),
      ...env,
    },
    options.extensions,
  );
  const app = await startApp(config, options);
  await app.listen(0, '127.0.0.1');
  const db = new pg.Pool({ connectionString: database.url, max: 4 });
  return {
    app,
    config,
    db,
    url: await app.getUrl(),
    close: async () => {
      await db.end();
      await app.close();
      await database.drop();
    },
  };
}

/**
 * With `TEST_POOLED_URL` (PgBouncer of the global set-up, `TEST_PGBOUNCER_PORT`): the app's
 * `DATABASE_URL` through it, `DATABASE_POOLED=1` and `DATABASE_DIRECT_URL` the database itself
 * (docs/production.md#pgbouncer); else nothing.
 */
export function pooled(directUrl: string): Record<string, string> {
  const via = process.env.TEST_POOLED_URL;
  if (!via) return {};
  const url = new URL(via);
  url.pathname = new URL(directUrl).pathname;
  return { DATABASE_URL: url.toString(), DATABASE_POOLED: '1', DATABASE_DIRECT_URL: directUrl };
}

/**
 * Initialises the real application (same module and `configureApp` as `main.ts`) on `config`, without
 * listening: also a second replica on the database of a {@link TestContext}. `options.override`
 * replaces providers (e.g. `b => b.overrideProvider(WalletConnector).useValue(fake)`). The caller
 * closes it.
 */
export async function startApp(
  config: AppConfig,
  options: {
    logDestination?: DestinationStream;
    override?: (builder: TestingModuleBuilder) => TestingModuleBuilder;
    extensions?: AppOptions['extensions'];
  } = {},
): Promise<INestApplication> {
  const builder = Test.createTestingModule({
    imports: [
      AppModule.forRoot(config, { logDestination: options.logDestination, extensions: options.extensions }),
    ],
  });
  const moduleRef = await (options.override ? options.override(builder) : builder).compile();
  const app = moduleRef.createNestApplication({ bodyParser: false, logger: ['error'] });
  configureApp(app, config);
  await app.init();
  return app;
}

/**
 * The test app of the enclosing `describe`: registers a `beforeAll` that boots it with
 * {@link createTestApp}`(env, options)` into the returned object and an `afterAll` that closes it.
 * Its fields are there from the first test (and later `beforeAll` hooks) on.
 */
export function useTestApp(
  env: Record<string, string> = {},
  options: { logDestination?: DestinationStream; extensions?: AppOptions['extensions'] } = {},
): TestContext {
  const t = {} as TestContext;
  beforeAll(async () => {
    Object.assign(t, await createTestApp(env, options));
  }, 60_000);
  afterAll(async () => {
    await t.close?.();
  });
  return t;
}

/** Lowercase hex SHA-256 of `data`: the payload hash the receiver stores for these bytes. */
export function sha256Hex(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** `sha256=<hex>` signature of `body` with `secret`. */
export function sign(body: string | Buffer, secret = SECRET): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/**
 * POSTs a signed batch to the callback: an object is serialised once, a string or Buffer is sent
 * byte for byte, and the signature is over exactly those bytes with `secret` unless `signature` gives
 * the header's value. `path` replaces `/sportapi/callback`; `headers` are set last (they may override).
 */
export function deliver(
  app: INestApplication,
  batch: unknown,
  opts: { secret?: string; signature?: string; path?: string; headers?: Record<string, string> } = {},
) {
  const body = typeof batch === 'string' || Buffer.isBuffer(batch) ? batch : JSON.stringify(batch);
  let req = request(app.getHttpServer())
    .post(opts.path ?? '/sportapi/callback')
    .set('content-type', 'application/json')
    .set('x-signature', opts.signature ?? sign(body, opts.secret));
  for (const [k, v] of Object.entries(opts.headers ?? {})) req = req.set(k, v);
  // The bytes go out as they are: superagent would otherwise JSON-serialise a Buffer.
  return req.serialize((b: unknown) => b as string).send(body as string);
}

/** An authorised partner API request builder: {@link OPS_KEY}, or the secret of a scoped key. */
export function ops(app: INestApplication, key: ScopedKeyName | 'legacy' = 'legacy') {
  const agent = request(app.getHttpServer());
  const auth = { authorization: `Bearer ${key === 'legacy' ? OPS_KEY : SCOPED_KEYS[key].secret}` };
  return {
    get: (path: string) => agent.get(path).set(auth),
    post: (path: string, body: unknown, headers: Record<string, string> = {}) =>
      agent
        .post(path)
        .set(auth)
        .set(headers)
        .send(body as object),
  };
}

/** Deposits `amount` into `account` through the partner API. */
export async function deposit(
  app: INestApplication,
  account: string,
  amount: string,
  key = `dep-${account}-${amount}`,
) {
  const res = await ops(app).post(
    `/accounts/${account}/adjustments`,
    { amount, currency: 'EUR', reason: 'test deposit' },
    { 'idempotency-key': key },
  );
  if (res.status !== 201) throw new Error(`deposit failed: ${res.status} ${res.text}`);
}

/** Registers a coupon through the partner API. */
export async function register(app: INestApplication, couponCode: string, accountId: string, stake: string) {
  const res = await ops(app).post('/coupons', { coupon_code: couponCode, accountId, stake, currency: 'EUR' });
  if (res.status !== 201 && res.status !== 200) throw new Error(`register failed: ${res.status} ${res.text}`);
  return res;
}

/**
 * Waits until the delivery attempts of failed deliveries answered so far are written: they are
 * recorded after the answer (DeliveryAttemptWriter, CONTRACT §8), not before it.
 */
export async function attemptsWritten(t: TestContext): Promise<void> {
  await t.app.get(DeliveryAttemptWriter).flushed();
}

/** Balance of an account as the partner API shows it. */
export async function balance(app: INestApplication, account: string): Promise<string> {
  const res = await ops(app).get(`/accounts/${account}`);
  return res.body.balance;
}

/** `key=amount` of every operation of a coupon, sorted. */
export async function operations(app: INestApplication, couponCode: string): Promise<string[]> {
  const res = await ops(app).get(`/coupons/${couponCode}`);
  return (res.body.operations as { key: string; amount: string }[]).map((o) => `${o.key}=${o.amount}`).sort();
}

/** A one-coupon batch. */
export function batchOf(
  batchId: string,
  coupon: {
    code: string;
    status: number;
    realWin?: string | number | null;
    events?: { uuid: string; status: number }[];
  },
) {
  return {
    batchId,
    couponCount: 1,
    coupons: [
      {
        coupon_code: coupon.code,
        status: coupon.status,
        realWin: coupon.realWin === undefined ? null : coupon.realWin,
        events: coupon.events ?? [{ uuid: `${coupon.code}-ev-1`, status: coupon.status }],
      },
    ],
  };
}

/**
 * Inserts a pending inbox row holding `body` (a batch's JSON text), as an inbox replica on the same
 * database leaves it when it has accepted the batch (CONTRACT §4, §5) and no worker has applied it
 * yet; its first attempt is due after `dueIn` (an SQL interval, default at once).
 */
export async function inboxRow(t: TestContext, body: string, dueIn = '0 seconds'): Promise<void> {
  const batch = JSON.parse(body) as { batchId: string; coupons: { coupon_code: string }[] };
  const codes = batch.coupons.map((c) => c.coupon_code);
  await t.db.query(
    `INSERT INTO callback_inbox (batch_id, payload_hash, coupon_count, coupon_codes, payload, next_attempt_at)
     VALUES ($1, encode(sha256($2), 'hex'), $3, $4, $2, now() + $5::interval)`,
    [batch.batchId, Buffer.from(body), codes.length, codes, dueIn],
  );
}

/**
 * Inserts a pending inbox row holding coupon `code` (a one-coupon WIN batch `batchId`) with
 * {@link inboxRow}, due in an hour, so no worker applies it during a test.
 */
export async function pendingInboxRow(t: TestContext, batchId: string, code: string): Promise<void> {
  await inboxRow(t, JSON.stringify(batchOf(batchId, { code, status: 2, realWin: '1.00' })), '1 hour');
}

/**
 * Delivers `batch` while a placeholder holds its batch id, so it is answered 409 `batch_conflict`
 * and quarantined, then removes the placeholder (an operator fixing the cause), so a replay can
 * apply it. @returns the quarantine entry's id.
 */
export async function quarantinedConflict(t: TestContext, batch: { batchId: string }): Promise<string> {
  await t.db.query(
    `INSERT INTO callback_batches (batch_id, payload_hash, coupon_count, payload) VALUES ($1, repeat('0', 64), 1, '\\x00')`,
    [batch.batchId],
  );
  expectError(await deliver(t.app, batch), 409, 'batch_conflict');
  await t.db.query(`DELETE FROM callback_batches WHERE batch_id = $1`, [batch.batchId]);
  const { rows } = await t.db.query<{ id: string }>(
    `SELECT id::text AS id FROM quarantined_bodies WHERE batch_id = $1 ORDER BY id DESC LIMIT 1`,
    [batch.batchId],
  );
  return rows[0].id;
}

/**
 * Quarantines a signed body that is still refused when replayed (its couponCount does not match:
 * 400 `validation_failed`). @returns the quarantine entry's id.
 */
export async function quarantinedInvalid(t: TestContext, batchId: string, code: string): Promise<string> {
  const body = { ...batchOf(batchId, { code, status: 2, realWin: '5.00' }), couponCount: 2 };
  expectError(await deliver(t.app, body), 400, 'validation_failed');
  const { rows } = await t.db.query<{ id: string }>(
    `SELECT id::text AS id FROM quarantined_bodies WHERE batch_id = $1 ORDER BY id DESC LIMIT 1`,
    [batchId],
  );
  return rows[0].id;
}

/** What no response body may contain: SQL, driver errors, stack frames, secrets, table names. */
export const LEAK =
  /SELECT|INSERT|UPDATE |QueryFailedError|driverError|\bat\s+[\w.<>$]+\s+\(|\bat (?:file|node):|\.[jt]s:\d+|test-secret|injected|coupon_snapshots|callback_batches/;

/** Asserts an error answer: exact status, `{success:false, error:{code, message[, fields]}}`, no internals (CONTRACT §5). */
export function expectError(res: request.Response, status: number, code: string): void {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(Object.keys(res.body).sort()).toEqual(['error', 'success']);
  expect(res.body.success).toBe(false);
  expect(typeof res.body.error.message).toBe('string');
  expect(Object.keys(res.body.error).filter((k) => !['code', 'message', 'fields'].includes(k))).toEqual([]);
  expect(res.text).not.toMatch(LEAK);
}

/** Distinct `error.fields[].path` of a 400 answer, sorted (none → []). */
export function fieldPaths(res: { body: { error?: { fields?: { path: string }[] } } }): string[] {
  return [...new Set((res.body.error?.fields ?? []).map((f) => f.path))].sort();
}
