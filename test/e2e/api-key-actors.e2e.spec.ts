import { createHash } from 'node:crypto';
import request from 'supertest';
import { FakeSportApi, startFakeSportApi } from '../support/fake-sportapi.js';
import {
  batchOf,
  createTestApp,
  deliver,
  deposit,
  OPS_KEY,
  ops,
  quarantinedConflict,
  register,
  SCOPED_KEYS,
  TestContext,
} from '../support/test-app.js';

// Who did it (CONTRACT §8, §10, issue 16): the name of the partner API key is recorded with every
// adjustment, registration, resolution, reconcile and quarantine replay, shown by the read
// endpoints and the delivery audit, and written in the request's log line; its secret never is.
// The only app of this file, so its log lines reach `lines` (nestjs-pino keeps one pino-http
// instance per process, made by the first app).

const sha256Hex = (s: string) => createHash('sha256').update(s).digest('hex');

describe('who did it: the key name on every action kind, in the log line, never the secret (CONTRACT §8, §10)', () => {
  let t: TestContext;
  let api: FakeSportApi;
  const lines: string[] = [];
  beforeAll(async () => {
    api = await startFakeSportApi();
    t = await createTestApp(
      { SPORTAPI_BASE_URL: api.url, RECONCILE_INTERVAL: 'off', LOG_LEVEL: 'info' },
      { logDestination: { write: (s: string) => void lines.push(...s.split('\n').filter(Boolean)) } },
    );
  });
  afterAll(async () => {
    await t.close();
    await api.close();
  });

  const batchAudit = async (batchId: string) =>
    (await ops(t.app, 'reader').get(`/callbacks/batches/${encodeURIComponent(batchId)}`)).body;

  it('the bare key of OPS_API_KEYS is warned about once at start-up, by name, never by secret', () => {
    const warnings = lines
      .map((l) => JSON.parse(l) as { level: number; context?: string; msg: string })
      .filter((l) => l.context === 'Auth');
    expect(warnings).toEqual([
      expect.objectContaining({
        level: 40,
        msg:
          'OPS_API_KEYS has 1 bare key(s) with every scope (read, register, money, operate), named key-1: ' +
          'give each key a name and only the scopes it needs, as name:scopes:secret (docs/api.md#keys-and-scopes)',
      }),
    ]);
  });

  it('adjustment (money) and registration (register) carry their key name; SportAPI’s batches none', async () => {
    const adj = await ops(t.app, 'cashier').post(
      '/accounts/who-1/adjustments',
      { amount: '100.00', currency: 'EUR', reason: 'cashier deposit' },
      { 'idempotency-key': 'who-dep-1' },
    );
    expect({ status: adj.status, actor: adj.body.actor }).toEqual({ status: 201, actor: 'cashier' });
    const reg = await ops(t.app, 'placement').post('/coupons', {
      coupon_code: 'WHO-1',
      accountId: 'who-1',
      stake: '10.00',
      currency: 'EUR',
    });
    expect({ status: reg.status, registeredBy: reg.body.registeredBy }).toEqual({
      status: 201,
      registeredBy: 'placement',
    });
    expect((await ops(t.app, 'reader').get('/coupons/WHO-1')).body.registeredBy).toBe('placement');
    expect(
      (await deliver(t.app, batchOf('who-b1', { code: 'WHO-1', status: 2, realWin: '20.00' }))).status,
    ).toBe(200);
    const audit = await batchAudit('who-b1');
    expect({
      actor: audit.actor,
      deliveries: audit.deliveries.map((d: { actor: unknown }) => d.actor),
    }).toEqual({
      actor: null,
      deliveries: [null],
    });
    const rows = await t.db.query(
      `SELECT (SELECT actor FROM account_adjustments WHERE idempotency_key = 'who-dep-1') AS adjustment,
              (SELECT registered_by FROM coupons WHERE coupon_code = 'WHO-1') AS registration,
              (SELECT actor FROM callback_batches WHERE batch_id = 'who-b1') AS batch`,
    );
    expect(rows.rows).toEqual([{ adjustment: 'cashier', registration: 'placement', batch: null }]);
  });

  it('resolution (operate): the key name next to the free-text resolvedBy, on the resolution and its batch', async () => {
    await deposit(t.app, 'who-2', '100.00');
    await register(t.app, 'WHO-2', 'who-2', '10.00');
    await deliver(t.app, batchOf('who-b2a', { code: 'WHO-2', status: 2, realWin: '25.00' }));
    await deliver(t.app, batchOf('who-b2b', { code: 'WHO-2', status: 2, realWin: '40.00' }));
    const res = await ops(t.app, 'operator').post(
      '/coupons/WHO-2/resolution',
      { realWin: '12.50', reason: 'ticket 4711', resolvedBy: 'jane.doe' },
      { 'idempotency-key': 'who-res-1' },
    );
    expect(res.status).toBe(201);
    expect({ resolvedBy: res.body.resolution.resolvedBy, actor: res.body.resolution.actor }).toEqual({
      resolvedBy: 'jane.doe',
      actor: 'operator',
    });
    const batchId = `resolution:WHO-2:${sha256Hex('who-res-1')}`;
    expect((await batchAudit(batchId)).actor).toBe('operator');
    const { rows } = await t.db.query(`SELECT resolved_by, actor FROM coupon_resolutions`);
    expect(rows).toEqual([{ resolved_by: 'jane.doe', actor: 'operator' }]);
  });

  it('reconcile (operate, hashed key): the poll batch carries the key name', async () => {
    api.serve({ coupon_code: 'WHO-3', status: 4, realWin: '0.00', events: [{ uuid: 'w3-e1', status: 4 }] });
    const res = await ops(t.app, 'hashedOperator').post('/coupons/WHO-3/reconcile', {});
    expect({ status: res.status, outcome: res.headers['reconciliation-outcome'] }).toEqual({
      status: 200,
      outcome: 'applied',
    });
    const batchId = res.headers['reconciliation-batch-id'] as string;
    expect(batchId).toMatch(/^poll:WHO-3:[0-9a-f]{64}$/);
    expect((await batchAudit(batchId)).actor).toBe('hashedOperator');
  });

  it('quarantine replay (operate): the entry, the replay attempt and the batch it applies', async () => {
    const id = await quarantinedConflict(t, batchOf('who-b4', { code: 'WHO-4', status: 1 }));
    const replay = await ops(t.app, 'operator').post(`/callbacks/quarantine/${id}/replay`, {});
    expect({ status: replay.status, outcome: replay.body.outcome, by: replay.body.entry.replayedBy }).toEqual(
      {
        status: 200,
        outcome: 'processed',
        by: 'operator',
      },
    );
    expect((await ops(t.app, 'reader').get(`/callbacks/quarantine/${id}`)).body.replayedBy).toBe('operator');
    const audit = await batchAudit('who-b4');
    expect({
      actor: audit.actor,
      deliveries: audit.deliveries.map((d: { outcome: string; requestId: string; actor: unknown }) => [
        d.outcome,
        d.requestId.startsWith('quarantine-replay:') ? 'replay' : 'sportapi',
        d.actor,
      ]),
    }).toEqual({
      actor: 'operator',
      deliveries: [
        ['conflict', 'sportapi', null],
        ['processed', 'replay', 'operator'],
      ],
    });
    const page = await ops(t.app, 'reader').get('/callbacks/deliveries?batchId=who-b4&outcome=processed');
    expect(page.body.items.map((d: { actor: unknown }) => d.actor)).toEqual(['operator']);
  });

  it('the request log line names the key, 403 included', async () => {
    const from = lines.length;
    await ops(t.app, 'reader').get('/accounts/who-1');
    await ops(t.app, 'reader').post('/coupons', {
      coupon_code: 'WHO-5',
      accountId: 'who-1',
      stake: '1.00',
      currency: 'EUR',
    });
    const wrong = 'Bearer wrong-key-9c2e7f1a';
    await request(t.app.getHttpServer()).get('/accounts/who-1').set('authorization', wrong);
    await new Promise((r) => setTimeout(r, 50));
    const completed = lines
      .slice(from)
      .map(
        (l) =>
          JSON.parse(l) as {
            msg: string;
            actor?: string;
            req?: { method: string; url: string };
            res?: { statusCode: number };
          },
      )
      .filter((l) => l.msg === 'request completed')
      .map((l) => [l.req?.method, l.req?.url, l.res?.statusCode, l.actor ?? null]);
    expect(completed).toEqual([
      ['GET', '/accounts/who-1', 200, 'reader'],
      ['POST', '/coupons', 403, 'reader'],
      ['GET', '/accounts/who-1', 401, null],
    ]);
  });

  it('no secret in any log line of this file (captured and searched)', () => {
    const text = lines.join('\n');
    const secrets = [
      OPS_KEY,
      ...Object.values(SCOPED_KEYS).map((k) => k.secret),
      ...Object.values(SCOPED_KEYS).map((k) => sha256Hex(k.secret)),
      'wrong-key-9c2e7f1a',
    ];
    expect(secrets.filter((s) => text.includes(s))).toEqual([]);
  });
});
