import { createHash } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import type { Scope } from '../../src/platform/auth/api-keys.js';
import {
  batchOf,
  createTestApp,
  deliver,
  deposit,
  expectError,
  OPS_KEY,
  ops,
  register,
  SCOPED_KEYS,
  TestContext,
} from '../support/test-app.js';

// Least privilege on the partner API (CONTRACT §10, issue 16): every route of the app needs its
// one scope (a table checked against the routes the app really serves, so a new route without a
// scope fails here), named keys with plain or hashed secrets, rotation, the legacy bare form, the
// key's name recorded with every action kind and in the request's log line, never its secret.

/** The scope of every route the app serves (docs/api.md#keys-and-scopes); `none`: no bearer key. */
const ROUTE_SCOPES: Record<string, Scope | 'none'> = {
  'GET /accounts/:id': 'read',
  'POST /accounts/:id/adjustments': 'money',
  'POST /coupons': 'register',
  'GET /coupons/:coupon_code': 'read',
  'POST /coupons/:coupon_code/reconcile': 'operate',
  'POST /coupons/:coupon_code/resolution': 'operate',
  'GET /callbacks/batches/:batchId': 'read',
  'GET /callbacks/deliveries': 'read',
  'GET /callbacks/quarantine': 'read',
  'GET /callbacks/quarantine/:id': 'read',
  'POST /callbacks/quarantine/:id/replay': 'operate',
  'GET /callbacks/inbox': 'read',
  'GET /events/status': 'read',
  'GET /events/:publisher/outbox': 'read',
  'GET /events/:publisher/outbox/:id': 'read',
  'POST /events/:publisher/outbox/:id/retry': 'operate',
  'POST /events/:publisher/outbox/:id/skip': 'operate',
  'POST /events/:publisher/pause': 'operate',
  'POST /events/:publisher/resume': 'operate',
  'GET /wallet/outbox': 'read',
  'GET /wallet/outbox/:id': 'read',
  'GET /wallet/status': 'read',
  'POST /wallet/outbox/:id/retry': 'operate',
  'POST /wallet/outbox/:id/skip': 'operate',
  'POST /wallet/pause': 'operate',
  'POST /wallet/resume': 'operate',
  'GET /metrics': 'read',
  // The operator console's API (issue 30).
  'GET /coupons': 'read',
  'GET /coupons/:coupon_code/history': 'read',
  'GET /accounts': 'read',
  'GET /accounts/:id/statement': 'read',
  'GET /search': 'read',
  'GET /overview': 'read',
  'GET /operator-actions': 'read',
  'POST /bulk-actions/plan': 'operate',
  'POST /bulk-actions': 'operate',
  'GET /bulk-actions': 'read',
  'GET /bulk-actions/:id': 'read',
  'POST /bulk-actions/:id/cancel': 'operate',
  // The key's own name and scopes, for the console's sign-in (issue 30).
  'GET /auth/whoami': 'read',
  // The callback has its signature (CONTRACT §4), the probes no credential (docs/operating.md#health).
  'POST /sportapi/callback': 'none',
  'GET /health/live': 'none',
  'GET /health/ready': 'none',
};

/** One key per scope, each with that scope only. */
const SINGLE: Record<Scope, string> = {
  read: 'single-read-key-7a31c0de',
  register: 'single-register-key-44b2e9f1',
  money: 'single-money-key-0d9c8a62',
  operate: 'single-operate-key-91fe3b07',
};

/** `METHOD /path/:param` of every route the Express router serves, Swagger's own pages aside. */
function servedRoutes(app: INestApplication): string[] {
  type Layer = { route?: { path: string; methods: Record<string, boolean> } };
  const { router } = app.getHttpAdapter().getInstance() as { router: { stack: Layer[] } };
  return router.stack.flatMap(({ route }) =>
    !route || route.path.includes('*') || /^\/docs(\/|-|$)/.test(route.path)
      ? []
      : Object.keys(route.methods).map((m) => `${m.toUpperCase()} ${route.path}`),
  );
}

const sha256Hex = (s: string) => createHash('sha256').update(s).digest('hex');

describe('scopes of every route (CONTRACT §10)', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({
      OPS_API_KEYS: Object.entries(SINGLE)
        .map(([scope, secret]) => `only-${scope}:${scope}:${secret}`)
        .join(','),
    });
  });
  afterAll(async () => {
    await t.close();
  });

  it('the table names exactly the routes the app serves, and Swagger shows the same scope on each', async () => {
    expect(servedRoutes(t.app).sort()).toEqual(Object.keys(ROUTE_SCOPES).sort());
    const doc = (await request(t.app.getHttpServer()).get('/docs-json')).body as {
      paths: Record<string, Record<string, { 'x-required-scope'?: string; security?: unknown }>>;
    };
    const documented = Object.fromEntries(
      Object.entries(doc.paths).flatMap(([path, methods]) =>
        Object.entries(methods).map(([method, op]) => [
          `${method.toUpperCase()} ${path.replace(/\{([^}]+)\}/g, ':$1')}`,
          op['x-required-scope'] ?? 'none',
        ]),
      ),
    );
    expect(documented).toEqual(ROUTE_SCOPES);
  });

  it.each(Object.entries(ROUTE_SCOPES))('%s: only a key with scope %s passes', async (route, scope) => {
    const [method, path] = route.split(' ');
    const url = path.replace(/:[A-Za-z_]+/g, 'X1');
    const send = (authorization?: string) => {
      let req = request(t.app.getHttpServer())[method === 'GET' ? 'get' : 'post'](url);
      if (authorization) req = req.set('authorization', authorization);
      return method === 'GET' ? req : req.set('content-type', 'application/json').send('{}');
    };
    const answers: Record<string, string> = {};
    for (const [keyScope, secret] of Object.entries(SINGLE)) {
      const res = await send(`Bearer ${secret}`);
      answers[keyScope] = `${res.status} ${res.body?.error?.code ?? ''}`.trim();
      if (res.status === 403)
        expect(res.body).toEqual({
          success: false,
          error: {
            code: 'insufficient_scope',
            message: `this route needs scope ${scope}; key only-${keyScope} has ${keyScope}`,
          },
        });
    }
    const anonymous = await send();
    if (scope === 'none') {
      // Never judged by a bearer key: the same answer with any key or none.
      expect(new Set(Object.values(answers))).toEqual(
        new Set([`${anonymous.status} ${anonymous.body?.error?.code ?? ''}`.trim()]),
      );
      expect(anonymous.status).not.toBe(403);
      return;
    }
    expectError(anonymous, 401, 'unauthorized');
    for (const [keyScope, answer] of Object.entries(answers)) {
      if (keyScope === scope) expect(answer).not.toMatch(/^(401|403|429)/);
      else expect({ keyScope, answer }).toEqual({ keyScope, answer: '403 insufficient_scope' });
    }
  });
});

describe('named keys: plain and hashed secrets, rotation, the legacy form (CONTRACT §10)', () => {
  let t: TestContext;
  const oldCashier = 'cashier-2025-secret-3c1f9a7e';
  const newCashier = 'cashier-2026-secret-b84d02c6';
  const start = (keys: string) => createTestApp({ OPS_API_KEYS: keys });
  afterEach(async () => {
    await t?.close();
  });

  const adjust = (secret: string, key: string) =>
    request(t.app.getHttpServer())
      .post('/accounts/rot-1/adjustments')
      .set('authorization', `Bearer ${secret}`)
      .set('idempotency-key', key)
      .send({ amount: '10.00', currency: 'EUR', reason: 'rotation' });

  it('rotation: both keys of one scope set work side by side, each recorded by name; the removed one is refused', async () => {
    t = await start(
      `cashier-2025:money+read:${oldCashier},cashier-2026:money+read:sha256:${sha256Hex(newCashier)}`,
    );
    expect((await adjust(oldCashier, 'rot-a')).body.actor).toBe('cashier-2025');
    expect((await adjust(newCashier, 'rot-b')).body.actor).toBe('cashier-2026');
    // A client retrying with the new key gets the first result, made by the old one.
    const again = await adjust(newCashier, 'rot-a');
    expect({
      status: again.status,
      replayed: again.headers['idempotent-replayed'],
      actor: again.body.actor,
    }).toEqual({
      status: 201,
      replayed: 'true',
      actor: 'cashier-2025',
    });
    const { rows } = await t.db.query(
      `SELECT idempotency_key, actor FROM account_adjustments ORDER BY idempotency_key`,
    );
    expect(rows).toEqual([
      { idempotency_key: 'rot-a', actor: 'cashier-2025' },
      { idempotency_key: 'rot-b', actor: 'cashier-2026' },
    ]);
    await t.close();
    // The old key removed: restarted with the new key only.
    t = await start(`cashier-2026:money+read:sha256:${sha256Hex(newCashier)}`);
    expectError(await adjust(oldCashier, 'rot-c'), 401, 'unauthorized');
    expect((await adjust(newCashier, 'rot-c')).status).toBe(201);
  });

  it('a hashed secret is matched by the key itself, never by its hash', async () => {
    t = await start(`auditor:read:sha256:${sha256Hex('auditor-secret-6f2a91d0')}`);
    const get = (secret: string) =>
      request(t.app.getHttpServer()).get('/callbacks/deliveries').set('authorization', `Bearer ${secret}`);
    expect((await get('auditor-secret-6f2a91d0')).status).toBe(200);
    expectError(await get(sha256Hex('auditor-secret-6f2a91d0')), 401, 'unauthorized');
    expectError(await get(`sha256:${sha256Hex('auditor-secret-6f2a91d0')}`), 401, 'unauthorized');
  });

  it('the legacy bare form keeps every scope under the name key-<n>, next to named keys', async () => {
    t = await start(`reader:read:${SINGLE.read},${OPS_KEY}`);
    await deposit(t.app, 'leg-1', '50.00');
    await register(t.app, 'LEG-1', 'leg-1', '5.00');
    expect((await ops(t.app).post('/coupons/LEG-1/reconcile', {})).status).toBe(501);
    expect((await ops(t.app).get('/coupons/LEG-1')).body.registeredBy).toBe('key-2');
    const { rows } = await t.db.query(`SELECT actor FROM account_adjustments`);
    expect(rows).toEqual([{ actor: 'key-2' }]);
    expectError(
      await request(t.app.getHttpServer())
        .post('/coupons')
        .set('authorization', `Bearer ${SINGLE.read}`)
        .send({ coupon_code: 'LEG-2', accountId: 'leg-1', stake: '1.00', currency: 'EUR' }),
      403,
      'insufficient_scope',
    );
  });
});

describe('failed authentications per client address (AUTH_FAILURE_LIMIT, AUTH_FAILURE_WINDOW)', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ AUTH_FAILURE_LIMIT: '3', AUTH_FAILURE_WINDOW: '10m' });
  });
  afterAll(async () => {
    await t.close();
  });
  const http = () => request(t.app.getHttpServer());

  it('a known key without the route’s scope is not a failed authentication', async () => {
    for (let i = 0; i < 5; i++)
      expectError(await ops(t.app, 'reader').post('/coupons', {}), 403, 'insufficient_scope');
    expect((await ops(t.app, 'reader').get('/callbacks/inbox')).status).toBe(200);
  });

  it('past the limit a missing or unknown key of the address is 429 with Retry-After, a known key passes; never the callback', async () => {
    // The key is checked before the body is parsed: a bad body does not escape the count.
    const failures = [
      await http().post('/coupons').set('content-type', 'application/json').send('{"coupon_code": '),
      await http()
        .post('/accounts/x/adjustments')
        .set('authorization', 'Bearer guess-1-0000000000')
        .set('content-type', 'text/plain')
        .send('x'),
      await http().get('/metrics').set('authorization', 'Bearer guess-2-0000000000'),
    ];
    expect(failures.map((r) => `${r.status} ${r.body.error.code}`)).toEqual(
      Array(3).fill('401 unauthorized'),
    );
    for (const res of [
      await http().get('/accounts/x'),
      await http().get('/metrics').set('authorization', 'Bearer guess-3-0000000000'),
      await http().get('/callbacks/deliveries').set('authorization', 'Bearer guess-4-0000000000'),
      await http()
        .post('/coupons')
        .set('authorization', 'Bearer guess-5-0000000000')
        .set('content-type', 'application/json')
        .send('{"coupon_code": '),
    ]) {
      expectError(res, 429, 'too_many_auth_failures');
      const retryAfter = Number(res.headers['retry-after']);
      expect({
        integer: Number.isInteger(retryAfter),
        inWindow: retryAfter >= 1 && retryAfter <= 600,
      }).toEqual({
        integer: true,
        inWindow: true,
      });
      expect(res.body.error.message).toBe(
        `too many failed authentications from this address; retry in ${retryAfter} s`,
      );
    }
    // Known keys of the same address are not locked out (issue 38): each gets its route's answer.
    const known = [
      await ops(t.app).get('/accounts/x'),
      await ops(t.app, 'cashier').post('/accounts/x/adjustments', {}, { 'idempotency-key': 'k' }),
      await http().get('/metrics').set('authorization', `Bearer ${SCOPED_KEYS.reader.secret}`),
      await http()
        .post('/coupons')
        .set('authorization', `Bearer ${SCOPED_KEYS.placement.secret}`)
        .set('content-type', 'application/json')
        .send('{"coupon_code": '),
    ];
    expect(known.map((r) => `${r.status} ${r.body?.error?.code ?? ''}`)).toEqual([
      '404 not_found',
      '400 validation_failed',
      '200 ',
      '400 malformed_json',
    ]);
    // The callback has its own rules (the signature), and the probes no credential.
    expect((await deliver(t.app, batchOf('lim-b1', { code: 'LIM-1', status: 1 }))).status).toBe(200);
    expectError(
      await deliver(t.app, batchOf('lim-b2', { code: 'LIM-1', status: 1 }), { secret: 'not-the-secret' }),
      401,
      'invalid_signature',
    );
    expect((await http().get('/health/live')).status).toBe(200);
  });
});
