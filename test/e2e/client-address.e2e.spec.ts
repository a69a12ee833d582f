import request from 'supertest';
import {
  createTestApp,
  expectError,
  OPS_KEY,
  SCOPED_KEYS,
  ScopedKeyName,
  TestContext,
} from '../support/test-app.js';

// The client address (issues 38 item 7 and 39; docs/configuration.md#client-address): the TCP peer,
// or X-Forwarded-For when the peer is one of TRUSTED_PROXIES (Express `trust proxy`), for the
// failed-authentication limit, the request's log line and the operator actions log. On a shared
// address a known key passes whatever the others' failures; only unknown keys are refused 429.
// One log destination for both apps of this file (nestjs-pino keeps one pino-http per process).

const lines: string[] = [];
const logDestination = { write: (s: string) => void lines.push(...s.split('\n').filter(Boolean)) };

interface LogLine {
  requestId?: string;
  msg: string;
  req?: { method: string; url: string; remoteAddress: string };
}

/** The "request completed" line of the request sent with X-Request-Id `requestId`. */
const logLineOf = (requestId: string) =>
  lines
    .map((l) => JSON.parse(l) as LogLine)
    .filter((l) => l.requestId === requestId && l.msg === 'request completed')
    .map((l) => ({ remoteAddress: l.req?.remoteAddress, url: l.req?.url }));

const bearer = (key: ScopedKeyName | 'legacy') =>
  `Bearer ${key === 'legacy' ? OPS_KEY : SCOPED_KEYS[key].secret}`;

/** `status code` of a whoami with `authorization`, sent with `forwardedFor` when given. */
async function whoami(t: TestContext, authorization: string, forwardedFor?: string): Promise<string> {
  const req = request(t.app.getHttpServer()).get('/auth/whoami').set('authorization', authorization);
  const res = await (forwardedFor === undefined ? req : req.set('x-forwarded-for', forwardedFor));
  if (res.status === 200) return `200 ${res.body.name}`;
  if (res.status === 429)
    expect(res.body.error.message).toBe(
      `too many failed authentications from this address; retry in ${res.headers['retry-after']} s`,
    );
  return `${res.status} ${res.body.error.code}`;
}

/** A cashier's deposit sent with `forwardedFor` and X-Request-Id `requestId`; its operator action's address. */
async function depositFrom(t: TestContext, requestId: string, forwardedFor?: string) {
  const req = request(t.app.getHttpServer())
    .post(`/accounts/${requestId}/adjustments`)
    .set('authorization', bearer('cashier'))
    .set('idempotency-key', requestId)
    .set('x-request-id', requestId);
  const res = await (forwardedFor === undefined ? req : req.set('x-forwarded-for', forwardedFor)).send({
    amount: '10.00',
    currency: 'EUR',
    reason: 'client address',
  });
  expect(res.status).toBe(201);
  const { rows } = await t.db.query<{ actor: string; client_address: string | null }>(
    `SELECT actor, client_address FROM operator_actions WHERE request_id = $1`,
    [requestId],
  );
  const listed = await request(t.app.getHttpServer())
    .get('/operator-actions?actor=cashier&limit=1')
    .set('authorization', bearer('reader'));
  return { rows, listed: listed.body.items.map((a: { clientAddress: string }) => a.clientAddress) };
}

describe('a shared address (no TRUSTED_PROXIES): every client behind one balancer or NAT', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp(
      { AUTH_FAILURE_LIMIT: '3', AUTH_FAILURE_WINDOW: '10m', LOG_LEVEL: 'info' },
      { logDestination },
    );
  });
  afterAll(async () => {
    await t.close();
  });

  it('after the limit of wrong keys a known key still gets 200, a further wrong key 429', async () => {
    const answers = [
      await whoami(t, 'Bearer guess-1-0000000000'),
      await whoami(t, 'Bearer guess-2-0000000000'),
      await whoami(t, 'Bearer guess-3-0000000000'),
      await whoami(t, bearer('reader')),
      await whoami(t, bearer('operator')),
      await whoami(t, 'Bearer guess-4-0000000000'),
      await whoami(t, 'Basic none'),
      await whoami(t, bearer('legacy')),
    ];
    expect(answers).toEqual([
      '401 unauthorized',
      '401 unauthorized',
      '401 unauthorized',
      '200 reader',
      '200 operator',
      '429 too_many_auth_failures',
      '429 too_many_auth_failures',
      '200 key-1',
    ]);
    // The console signs in with whoami; an action by a known key goes through too.
    const adj = await request(t.app.getHttpServer())
      .post('/accounts/shared-1/adjustments')
      .set('authorization', bearer('cashier'))
      .set('idempotency-key', 'shared-1')
      .send({ amount: '10.00', currency: 'EUR', reason: 'shared address' });
    expect({ status: adj.status, actor: adj.body.actor, balance: adj.body.balance }).toEqual({
      status: 201,
      actor: 'cashier',
      balance: '10.00',
    });
    const limited = await request(t.app.getHttpServer())
      .get('/auth/whoami')
      .set('authorization', 'Bearer guess-5-0000000000');
    expectError(limited, 429, 'too_many_auth_failures');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(599);
  });

  it('a forged X-Forwarded-For is ignored: the limit, the log line and the operator action use the socket address', async () => {
    // The address is still limited (the test above): another "client" in the header changes nothing.
    expect(await whoami(t, 'Bearer guess-6-0000000000', '198.51.100.23')).toBe('429 too_many_auth_failures');
    expect(await depositFrom(t, 'forged-xff-1', '198.51.100.23')).toEqual({
      rows: [{ actor: 'cashier', client_address: '127.0.0.1' }],
      listed: ['127.0.0.1'],
    });
    expect(logLineOf('forged-xff-1')).toEqual([
      { remoteAddress: '127.0.0.1', url: '/accounts/forged-xff-1/adjustments' },
    ]);
  });
});

describe('behind a balancer at 127.0.0.1 (TRUSTED_PROXIES=127.0.0.1)', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp(
      {
        AUTH_FAILURE_LIMIT: '3',
        AUTH_FAILURE_WINDOW: '10m',
        LOG_LEVEL: 'info',
        TRUSTED_PROXIES: '127.0.0.1',
        METRICS_ALLOWED_NETWORKS: '127.0.0.1',
      },
      { logDestination },
    );
  });
  afterAll(async () => {
    await t.close();
  });

  it('two X-Forwarded-For clients are limited separately; a prepended address does not escape', async () => {
    const answers = [
      await whoami(t, 'Bearer guess-1-0000000000', '203.0.113.1'),
      await whoami(t, 'Bearer guess-2-0000000000', '203.0.113.1'),
      await whoami(t, 'Bearer guess-3-0000000000', '203.0.113.1'),
      await whoami(t, 'Bearer guess-4-0000000000', '203.0.113.1'),
      // The balancer appends the address it saw: what the client wrote before it is not its address.
      await whoami(t, 'Bearer guess-5-0000000000', '192.0.2.99, 203.0.113.1'),
      await whoami(t, bearer('reader'), '203.0.113.1'),
      await whoami(t, 'Bearer guess-1-0000000000', '203.0.113.2'),
      await whoami(t, 'Bearer guess-2-0000000000', '203.0.113.2'),
      await whoami(t, bearer('operator'), '203.0.113.2'),
      // The balancer's own requests (no header) are a third client.
      await whoami(t, 'Bearer guess-1-0000000000'),
    ];
    expect(answers).toEqual([
      '401 unauthorized',
      '401 unauthorized',
      '401 unauthorized',
      '429 too_many_auth_failures',
      '429 too_many_auth_failures',
      '200 reader',
      '401 unauthorized',
      '401 unauthorized',
      '200 operator',
      '401 unauthorized',
    ]);
  });

  it('the operator action and the log line record the forwarded address', async () => {
    expect(await depositFrom(t, 'via-balancer-1', '203.0.113.7')).toEqual({
      rows: [{ actor: 'cashier', client_address: '203.0.113.7' }],
      listed: ['203.0.113.7'],
    });
    expect(logLineOf('via-balancer-1')).toEqual([
      { remoteAddress: '203.0.113.7', url: '/accounts/via-balancer-1/adjustments' },
    ]);
    expect(await depositFrom(t, 'via-balancer-2', '192.0.2.99, 2001:db8::7')).toEqual({
      rows: [{ actor: 'cashier', client_address: '2001:db8::7' }],
      listed: ['2001:db8::7'],
    });
    // A refused action is logged with the address too (in its own transaction after the rollback).
    const refused = await request(t.app.getHttpServer())
      .post('/accounts/via-balancer-3/adjustments')
      .set('authorization', bearer('cashier'))
      .set('idempotency-key', 'via-balancer-3')
      .set('x-request-id', 'via-balancer-3')
      .set('x-forwarded-for', '203.0.113.9')
      .send({ amount: '-5.00', currency: 'EUR', reason: 'overdraw' });
    expectError(refused, 422, 'insufficient_funds');
    const { rows } = await t.db.query(
      `SELECT outcome, client_address FROM operator_actions WHERE request_id = 'via-balancer-3'`,
    );
    expect(rows).toEqual([{ outcome: 'insufficient_funds', client_address: '203.0.113.9' }]);
  });

  it('METRICS_ALLOWED_NETWORKS is checked against the forwarded client, not the balancer', async () => {
    const metrics = (forwardedFor?: string) => {
      const req = request(t.app.getHttpServer()).get('/metrics');
      return forwardedFor === undefined ? req : req.set('x-forwarded-for', forwardedFor);
    };
    expect((await metrics()).status).toBe(200);
    expectError(await metrics('203.0.113.8'), 401, 'unauthorized');
    expect((await metrics('127.0.0.1')).status).toBe(200);
  });
});
