import request from 'supertest';
import { whileDatabaseDown } from '../support/database-faults.js';
import { increase, sample, scrape } from '../support/metrics.js';
import {
  batchOf,
  createTestApp,
  deliver,
  deposit,
  expectError,
  OPS_KEY,
  ops,
  OTHER_SECRET,
  register,
  SECRET,
  sign,
  useTestApp,
  attemptsWritten,
} from '../support/test-app.js';

// Operations (issue 6): Prometheus metrics, JSON logs with request id and batchId and without
// secrets, and the delivery audit endpoints showing that a redelivery moved no money (CONTRACT §8).

const CALLBACK_METRICS = [
  'settlement_callback_deliveries_total',
  'settlement_callback_duration_seconds',
  'settlement_callback_batch_coupons',
  'settlement_ledger_operations_total',
  'settlement_coupons_needing_review',
  'settlement_coupons_unallocated',
];

/**
 * The components that log outside any request, so without a request id (docs/operating.md#logs):
 * the pool noticing its idle connections were terminated, the writer of failed delivery attempts
 * (after the answer; a retried write names the request ids it holds), and the background-work
 * governor, whose back-off and recovery lines follow the callback's answer times and the event
 * loop's delay: on a loaded machine they come at any moment. Every other line must carry one.
 */
const BACKGROUND_CONTEXTS = new Set(['Database', 'DeliveryAudit', 'BackgroundGovernor']);

describe('operations: metrics, logs, delivery audit', () => {
  const lines: string[] = [];
  const logs = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  const t = useTestApp(
    { LOG_LEVEL: 'info' },
    { logDestination: { write: (s: string) => void lines.push(...s.split('\n').filter(Boolean)) } },
  );

  it('GET /metrics → 401 without a bearer key from a network not allowed; 200 text with every metric name with one', async () => {
    expectError(await request(t.app.getHttpServer()).get('/metrics'), 401, 'unauthorized');
    expectError(
      await request(t.app.getHttpServer()).get('/metrics').set('authorization', 'Bearer wrong'),
      401,
      'unauthorized',
    );
    const res = await request(t.app.getHttpServer())
      .get('/metrics')
      .set('authorization', `Bearer ${OPS_KEY}`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    for (const name of CALLBACK_METRICS) expect(res.text).toContain(`# TYPE ${name} `);
    expect(res.text).toContain('# TYPE settlement_callback_deliveries_total counter');
    expect(res.text).toContain('# TYPE settlement_callback_duration_seconds histogram');
    expect(res.text).toContain('# TYPE settlement_callback_batch_coupons histogram');
    expect(res.text).toContain('# TYPE settlement_coupons_needing_review gauge');
    // Default process metrics.
    expect(res.text).toContain('# TYPE process_cpu_user_seconds_total counter');
    expect(res.text).toContain('# TYPE nodejs_eventloop_lag_seconds gauge');
    for (const outcome of ['processed', 'duplicate', 'conflict', 'rejected', 'unauthorized', 'failed'])
      expect(sample(res.text, `settlement_callback_deliveries_total{outcome="${outcome}"}`)).toBe(0);
    expect(sample(res.text, 'settlement_coupons_needing_review')).toBe(0);
    expect(sample(res.text, 'settlement_coupons_unallocated')).toBe(0);
  });

  it('a processed then a duplicate delivery: each counter +1, operations counted once after COMMIT, gauges from the database', async () => {
    await deposit(t.app, 'm-1', '100.00');
    await register(t.app, 'M-1', 'm-1', '10.00');
    const before = await scrape(t.app);
    const body = batchOf('m-batch-1', { code: 'M-1', status: 2, realWin: '30.00' });
    expect((await deliver(t.app, body)).body).toStrictEqual({ success: true, processed: 1 });
    expect((await deliver(t.app, body)).body).toStrictEqual({ success: true, processed: 1, duplicate: true });
    expectError(await deliver(t.app, body, { secret: 'not-the-secret' }), 401, 'invalid_signature');
    expectError(
      await deliver(t.app, { ...body, coupons: [{ ...body.coupons[0], realWin: '31.00' }] }),
      409,
      'batch_conflict',
    );
    // An unregistered coupon settled by a callback is unallocated.
    await deliver(t.app, batchOf('m-batch-2', { code: 'M-UNREG', status: 4, realWin: '0' }));
    const after = await scrape(t.app);
    const delta = (series: string) => increase(before, after, series);
    expect({
      processed: delta('settlement_callback_deliveries_total{outcome="processed"}'),
      duplicate: delta('settlement_callback_deliveries_total{outcome="duplicate"}'),
      unauthorized: delta('settlement_callback_deliveries_total{outcome="unauthorized"}'),
      conflict: delta('settlement_callback_deliveries_total{outcome="conflict"}'),
      rejected: delta('settlement_callback_deliveries_total{outcome="rejected"}'),
      failed: delta('settlement_callback_deliveries_total{outcome="failed"}'),
      durations: delta('settlement_callback_duration_seconds_count{outcome="duplicate"}'),
      batches: delta('settlement_callback_batch_coupons_count'),
      couponsSum: delta('settlement_callback_batch_coupons_sum'),
      finalCredits: delta('settlement_ledger_operations_total{type="final_credit"}'),
      stakeDebits: delta('settlement_ledger_operations_total{type="stake_debit"}'),
    }).toEqual({
      processed: 2,
      duplicate: 1,
      unauthorized: 1,
      conflict: 1,
      rejected: 0,
      failed: 0,
      durations: 1,
      batches: 4, // processed ×2, duplicate, conflict (the 401 was never parsed)
      couponsSum: 4,
      finalCredits: 1,
      stakeDebits: 0,
    });
    expect(sample(before, 'settlement_ledger_operations_total{type="deposit"}')).toBe(1);
    expect(sample(before, 'settlement_ledger_operations_total{type="stake_debit"}')).toBe(1);
    expect(sample(after, 'settlement_coupons_unallocated')).toBe(1);
    expect(sample(after, 'settlement_coupons_needing_review')).toBe(0);
  });

  it('GET /metrics from an allowed network needs no key', async () => {
    const open = await createTestApp({ METRICS_ALLOWED_NETWORKS: '10.0.0.0/8, 127.0.0.0/8' });
    try {
      const res = await request(open.app.getHttpServer()).get('/metrics');
      expect(res.status).toBe(200);
      expect(res.text).toContain('# TYPE settlement_callback_deliveries_total counter');
    } finally {
      await open.close();
    }
  });

  it('logs: JSON lines; every line of a callback carries its request id and batchId; one summary line per delivery; no secret, signature or bearer key', async () => {
    lines.length = 0;
    const body = JSON.stringify(batchOf('log-batch-1', { code: 'LOG-1', status: 1 }));
    const signature = sign(body);
    const first = await deliver(t.app, body, { headers: { 'x-request-id': 'log-req-1' } });
    expect(first.status).toBe(200);
    expect(first.headers['x-request-id']).toBe('log-req-1');
    const again = await deliver(t.app, body, { headers: { 'x-request-id': 'log-req-2' } });
    expect(again.body.duplicate).toBe(true);
    const forged = await deliver(t.app, body, { secret: 'forged', headers: { 'x-request-id': 'log-req-3' } });
    expect(forged.status).toBe(401);
    const read = await ops(t.app).get('/accounts/m-1').set('x-request-id', 'log-req-4');
    expect(read.status).toBe(200);
    expect(read.headers['x-request-id']).toBe('log-req-4');

    const parsed = logs();
    for (const line of parsed) {
      expect(typeof line.level).toBe('number');
      expect(typeof line.time).toBe('number');
    }
    const of = (id: string) => parsed.filter((l) => l.requestId === id);
    for (const id of ['log-req-1', 'log-req-2']) {
      expect(of(id).length).toBeGreaterThanOrEqual(1);
      for (const line of of(id)) expect(line.batchId).toBe('log-batch-1');
    }
    const summaries = parsed.filter((l) => typeof l.outcome === 'string');
    expect(
      summaries.map(({ requestId, batchId, outcome, status, coupons }) => ({
        requestId,
        batchId,
        outcome,
        status,
        coupons,
      })),
    ).toEqual([
      { requestId: 'log-req-1', batchId: 'log-batch-1', outcome: 'processed', status: 200, coupons: 1 },
      { requestId: 'log-req-2', batchId: 'log-batch-1', outcome: 'duplicate', status: 200, coupons: 1 },
      // The body of a forged delivery is never parsed: no batchId, no coupon count.
      { requestId: 'log-req-3', batchId: undefined, outcome: 'unauthorized', status: 401, coupons: null },
    ]);
    for (const s of summaries) expect(typeof s.durationMs).toBe('number');
    // The partner API request got pino-http's completion line, without headers.
    const completed = of('log-req-4');
    expect(completed).toHaveLength(1);
    expect(completed[0]).toMatchObject({ msg: 'request completed', res: { statusCode: 200 } });
    expect((completed[0].req as Record<string, unknown>).headers).toBeUndefined();

    const text = lines.join('\n');
    for (const secret of [
      SECRET,
      OTHER_SECRET,
      OPS_KEY,
      signature,
      signature.slice(7),
      'forged',
      'LOG-1',
      '"events"',
    ])
      expect(text).not.toContain(secret);
  });

  it('logs of a delivery failing on a database outage: every line (errors included) carries its request id and batchId, one failed summary', async () => {
    lines.length = 0;
    const res = await whileDatabaseDown(t.config.database.databaseUrl as string, () =>
      deliver(t.app, batchOf('log-batch-503', { code: 'LOG-503', status: 1 }), {
        headers: { 'x-request-id': 'log-req-503' },
      }),
    );
    expectError(res, 503, 'transient_failure');
    // The failed attempt is written after the answer (CONTRACT §5: the database never delays it).
    await attemptsWritten(t);
    const mine = logs().filter((l) => l.requestId === 'log-req-503');
    // The exception and the summary; a retried attempt write names the request ids it holds.
    expect(mine.filter((l) => l.context !== 'DeliveryAudit').map((l) => l.context)).toEqual([
      'Exceptions',
      'Delivery',
    ]);
    for (const line of mine) expect(line.batchId).toBe('log-batch-503');
    expect(
      mine
        .filter((l) => l.outcome !== undefined)
        .map(({ outcome, status, level }) => ({ outcome, status, level })),
    ).toEqual([{ outcome: 'failed', status: 503, level: 50 }]);
    const stored = await t.db.query(
      `SELECT batch_id, outcome, http_status, error_code FROM delivery_attempts WHERE request_id = 'log-req-503'`,
    );
    expect(stored.rows).toEqual([
      { batch_id: 'log-batch-503', outcome: 'failed', http_status: 503, error_code: 'transient_failure' },
    ]);
    // Lines outside any request come from the background components only.
    expect(
      logs().filter((l) => l.requestId === undefined && !BACKGROUND_CONTEXTS.has(l.context as string)),
    ).toEqual([]);
    const text = lines.join('\n');
    for (const secret of [SECRET, OTHER_SECRET, OPS_KEY, 'LOG-503', '"events"'])
      expect(text).not.toContain(secret);
  }, 15_000);

  it('GET /callbacks/batches/{batchId}: a redelivered batch shows both deliveries answered 200 (same payload hash) and its operation once', async () => {
    const res = await ops(t.app).get('/callbacks/batches/m-batch-1');
    expect(res.status).toBe(200);
    const { payloadHash } = res.body;
    expect(payloadHash).toMatch(/^[0-9a-f]{64}$/);
    expect(res.body).toMatchObject({
      batchId: 'm-batch-1',
      committed: true,
      couponCount: 1,
      coupons: [
        {
          coupon_code: 'M-1',
          status: 2,
          realWin: '30.00',
          applied: true,
          transition: 'settled',
          generation: 0,
        },
      ],
      operations: [
        {
          key: 'M-1:0:final_credit',
          type: 'final_credit',
          couponCode: 'M-1',
          accountId: 'm-1',
          amount: '30.00',
          currency: 'EUR',
        },
      ],
      quarantined: 1,
    });
    expect(
      (res.body.deliveries as Record<string, unknown>[]).map(
        ({ outcome, httpStatus, errorCode, couponCount, payloadHash: hash }) => ({
          outcome,
          httpStatus,
          errorCode,
          couponCount,
          sameBody: hash === payloadHash,
        }),
      ),
    ).toEqual([
      { outcome: 'processed', httpStatus: 200, errorCode: null, couponCount: 1, sameBody: true },
      { outcome: 'duplicate', httpStatus: 200, errorCode: null, couponCount: 1, sameBody: true },
      { outcome: 'conflict', httpStatus: 409, errorCode: 'batch_conflict', couponCount: 1, sameBody: false },
    ]);
    for (const d of res.body.deliveries) {
      expect(new Date(d.receivedAt).toISOString()).toBe(d.receivedAt);
      expect(typeof d.durationMs).toBe('number');
    }
  });

  it('GET /callbacks/batches/{batchId}: 404 for a batch never delivered, 401 without a key', async () => {
    expectError(await ops(t.app).get('/callbacks/batches/never-seen'), 404, 'not_found');
    expectError(
      await request(t.app.getHttpServer()).get('/callbacks/batches/m-batch-1'),
      401,
      'unauthorized',
    );
  });

  it('GET /callbacks/deliveries: filters by outcome, batch and time, paginated newest first', async () => {
    const dupes = await ops(t.app).get('/callbacks/deliveries?outcome=duplicate');
    expect(dupes.status).toBe(200);
    expect(
      (dupes.body.items as { batchId: string; outcome: string }[]).map((d) => `${d.batchId}:${d.outcome}`),
    ).toEqual(['log-batch-1:duplicate', 'm-batch-1:duplicate']);
    expect(dupes.body.nextCursor).toBeNull();

    const all: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await ops(t.app).get(
        `/callbacks/deliveries?batchId=m-batch-1&limit=2${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(page.status).toBe(200);
      all.push(...(page.body.items as { outcome: string }[]).map((d) => d.outcome));
      cursor = page.body.nextCursor;
      pages++;
    } while (cursor);
    expect({ pages, all }).toEqual({ pages: 2, all: ['conflict', 'duplicate', 'processed'] });
    // A forged delivery's body is never read: its attempt has no batch id (CONTRACT §8).
    const forged = await ops(t.app).get('/callbacks/deliveries?outcome=unauthorized');
    expect(
      (forged.body.items as Record<string, unknown>[]).map(
        ({ batchId, httpStatus, errorCode, payloadHash }) => ({
          batchId,
          httpStatus,
          errorCode,
          payloadHash,
        }),
      ),
    ).toEqual([
      { batchId: null, httpStatus: 401, errorCode: 'invalid_signature', payloadHash: null },
      { batchId: null, httpStatus: 401, errorCode: 'invalid_signature', payloadHash: null },
    ]);

    const future = await ops(t.app).get('/callbacks/deliveries?from=2999-01-01T00:00:00Z');
    expect(future.body).toEqual({ items: [], nextCursor: null });
    const past = await ops(t.app).get('/callbacks/deliveries?to=2000-01-01T00:00:00Z');
    expect(past.body).toEqual({ items: [], nextCursor: null });

    expectError(await ops(t.app).get('/callbacks/deliveries?outcome=paid'), 400, 'validation_failed');
    expectError(await ops(t.app).get('/callbacks/deliveries?limit=0'), 400, 'validation_failed');
    expectError(await ops(t.app).get('/callbacks/deliveries?from=yesterday'), 400, 'validation_failed');
    expectError(await request(t.app.getHttpServer()).get('/callbacks/deliveries'), 401, 'unauthorized');
  });

  it('logs: a designed 5xx answer (reconcile with polling off → 501) is a warning without a stack; nothing at error level', async () => {
    lines.length = 0;
    const res = await ops(t.app).post('/coupons/000000000272/reconcile', undefined);
    expect(res.status).toBe(501);
    const completed = logs().filter((l) =>
      (l.req as { url?: string } | undefined)?.url?.endsWith('/reconcile'),
    );
    expect(
      completed.map((l) => ({ level: l.level, status: (l.res as { statusCode: number }).statusCode })),
    ).toEqual([{ level: 40, status: 501 }]);
    expect(JSON.stringify(completed)).not.toContain('stack');
    expect(logs().filter((l) => (l.level as number) >= 50)).toEqual([]);
  });

  it('GET /callbacks/deliveries: ids past 9 page in numeric order (newest first, none skipped)', async () => {
    for (let i = 0; i < 12; i++) {
      const res = await deliver(t.app, batchOf(`order-batch-${i}`, { code: `order-${i}`, status: 1 }));
      expect(res.status).toBe(200);
    }
    const ids: number[] = [];
    let cursor: string | null = null;
    do {
      const page = await ops(t.app).get(`/callbacks/deliveries?limit=5${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      ids.push(...(page.body.items as { id: string }[]).map((d) => Number(d.id)));
      cursor = page.body.nextCursor;
    } while (cursor);
    const { rows } = await t.db.query<{ n: number; max: string }>(
      'SELECT count(*)::int AS n, max(id)::text AS max FROM delivery_attempts',
    );
    expect(ids.length).toBe(rows[0].n);
    expect(ids[0]).toBe(Number(rows[0].max));
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
  });
});
