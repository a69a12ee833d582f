import pg from 'pg';
import request from 'supertest';
import { DeliveryAttemptWriter } from '../../src/platform/deliveries/delivery-attempt.writer.js';
import { MetricsRegistry } from '../../src/platform/observability/metrics-registry.js';
import { ScheduledReconciliation } from '../../src/intake/reconciliation/scheduled-reconciliation.js';
import { createTestDatabase, testServer } from '../support/database.js';
import { FakeSportApi, startFakeSportApi } from '../support/fake-sportapi.js';
import { batchOf, createTestApp, deliver, sign, TestContext } from '../support/test-app.js';
import {
  DeliveryAnswer,
  partner,
  portRange,
  post,
  Receiver,
  requireBuild,
  startReceiver,
  stopReceiver,
  verifyLedger,
  violationsOf,
} from './support/receiver.js';
import { TcpProxy } from '../../sim/tcp-proxy.js';
import { eventually, sleep } from '../support/wait.js';
import { fetchRead } from '../support/http.js';

// CONTRACT §5: the callback answers within its own deadline whatever the database does. A TCP
// proxy between the receiver and PostgreSQL makes the database hang (bytes held, connections
// open) at idle, in the middle of a batch, at COMMIT (the server commits, the answer is lost),
// while the pool is full; makes it slow; resets its connections mid-transaction. Every answer
// must be 200 or 503 within the deadline plus 0.5 s, the pool must recover, and once the fault is
// gone every batch is applied exactly once (ledger:verify clean). In inline and inbox mode.

const DEADLINE_MS = 3000;
const LIMIT_MS = DEADLINE_MS + 500;
const ENV = {
  CALLBACK_DEADLINE_MS: String(DEADLINE_MS),
  DB_STATEMENT_TIMEOUT_MS: '2000',
  DB_LOCK_TIMEOUT_MS: '1500',
  DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: '2500',
  DB_POOL_SIZE: '6',
  INBOX_POLL_INTERVAL_MS: '50',
  INBOX_RETRY_BASE_MS: '100',
  INBOX_RETRY_MAX_MS: '500',
  LOG_LEVEL: 'warn',
};
const STAKE = '1.00';
const WIN = '2.50';

/** The slowest answer and the number of deliveries of each fault, printed for the closing note. */
const figures: { mode: string; fault: string; deliveries: number; slowestMs: number; statuses: string }[] =
  [];
afterAll(() => {
  for (const f of figures) console.log(`database hang: ${JSON.stringify(f)}`);
});

describe.each([
  ['inline', portRange(70)[0]],
  ['inbox', portRange(71)[0]],
])('a database that hangs, %s mode (CONTRACT §5)', (mode, port) => {
  let db: { url: string; drop: () => Promise<void> };
  let pool: pg.Pool;
  let proxy: TcpProxy;
  let receiver: Receiver | undefined;
  let next = 0;
  /** Every batch sent so far: coupon code → batch (each settles its own coupon once). */
  const sent = new Map<string, ReturnType<typeof batchOf>>();

  beforeAll(async () => {
    requireBuild();
    db = await createTestDatabase();
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
    const target = new URL(db.url);
    proxy = await TcpProxy.start({ host: target.hostname, port: Number(target.port || 5432) });
    const viaProxy = new URL(db.url);
    viaProxy.host = `127.0.0.1:${proxy.port}`;
    receiver = await startReceiver(port, viaProxy.toString(), { ...ENV, CALLBACK_MODE: mode });
    const dep = await partner(
      receiver.url,
      'POST',
      '/accounts/hang-p/adjustments',
      { amount: '1000.00', currency: 'EUR', reason: 'hang' },
      { 'idempotency-key': `hang-dep-${mode}` },
    );
    expect(dep.status).toBe(201);
  }, 60_000);

  afterEach(() => {
    proxy.release();
    proxy.latency(0);
  });

  afterAll(async () => {
    if (process.env.HANG_DEBUG) console.log(receiver?.output());
    proxy?.release();
    await stopReceiver(receiver);
    await proxy?.close();
    await pool?.end();
    await db?.drop();
  }, 30_000);

  /** `n` new batches, each settling a newly registered coupon as a WIN of 2.50. */
  async function newBatches(n: number): Promise<ReturnType<typeof batchOf>[]> {
    const batches: ReturnType<typeof batchOf>[] = [];
    for (let i = 0; i < n; i++) {
      const code = `H${mode[1]}${String(next++).padStart(4, '0')}`;
      const reg = await partner((receiver as Receiver).url, 'POST', '/coupons', {
        coupon_code: code,
        accountId: 'hang-p',
        stake: STAKE,
        currency: 'EUR',
      });
      expect(reg.status).toBe(201);
      const batch = batchOf(`hang-${code}`, { code, status: 2, realWin: WIN });
      sent.set(code, batch);
      batches.push(batch);
    }
    return batches;
  }

  /** Delivers `batches` at once; each answer with its time from sending to the last byte. */
  async function deliverAll(batches: unknown[]): Promise<{ answer: DeliveryAnswer; ms: number }[]> {
    return Promise.all(
      batches.map(async (b) => {
        const started = Date.now();
        const answer = await post((receiver as Receiver).url, b, { timeoutMs: 20_000 });
        return { answer, ms: Date.now() - started };
      }),
    );
  }

  /** Every answer 200 or 503 within the deadline plus 0.5 s; records the fault's figures. */
  function expectInsideDeadline(
    fault: string,
    answers: { answer: DeliveryAnswer; ms: number }[],
    want: number[],
  ) {
    figures.push({
      mode,
      fault,
      deliveries: answers.length,
      slowestMs: Math.max(...answers.map((a) => a.ms)),
      statuses: [...new Set(answers.map((a) => a.answer.status))].sort().join('/'),
    });
    for (const { answer, ms } of answers) {
      expect(want).toContain(answer.status);
      if (answer.status === 503)
        expect((answer.body as { error: { code: string } }).error.code).toBe('transient_failure');
      expect(ms).toBeLessThanOrEqual(LIMIT_MS);
    }
  }

  /**
   * After the fault: every batch sent so far is delivered again until answered 200 (as SportAPI
   * would), fresh deliveries are answered 200 within the deadline (the pool recovered), readiness
   * is 200, and each coupon was paid exactly once: ledger:verify clean.
   */
  async function expectRecovered(): Promise<void> {
    proxy.release();
    proxy.latency(0);
    const r = receiver as Receiver;
    for (const batch of sent.values()) {
      let answer: DeliveryAnswer | undefined;
      for (let attempt = 0; attempt < 20 && answer?.status !== 200; attempt++) {
        if (attempt) await sleep(250);
        answer = await post(r.url, batch, { timeoutMs: 20_000 });
      }
      expect(answer?.status).toBe(200);
    }
    const fresh = await deliverAll(await newBatches(3));
    for (const { answer, ms } of fresh) {
      expect(answer.status).toBe(200);
      expect(ms).toBeLessThanOrEqual(DEADLINE_MS);
    }
    expect((await fetchRead(`${r.url}/health/ready`)).status).toBe(200);
    // Inbox mode applies after the 200: wait for the workers.
    await eventually(
      async () =>
        (await pool.query(`SELECT count(*)::int AS n FROM callback_inbox WHERE status = 'pending'`)).rows[0]
          .n === 0,
      'the inbox drained',
    );
    const { rows } = await pool.query(
      `SELECT c.coupon_code AS code,
              count(o.*) FILTER (WHERE o.type = 'final_credit')::int AS credits,
              coalesce(sum(o.amount) FILTER (WHERE o.type = 'final_credit'), 0)::text AS credited
         FROM coupons c LEFT JOIN financial_operations o ON o.coupon_code = c.coupon_code
        WHERE c.coupon_code = ANY($1::text[]) GROUP BY c.coupon_code`,
      [[...sent.keys()]],
    );
    expect(rows).toHaveLength(sent.size);
    // numeric(26,8): every amount is stored with 8 fraction digits.
    expect(rows.filter((x) => x.credits !== 1 || x.credited !== `${WIN}000000`)).toEqual([]);
    const balance = await partner(r.url, 'GET', '/accounts/hang-p');
    expect(balance.body.balance).toBe((1000 + sent.size * (Number(WIN) - Number(STAKE))).toFixed(2));
    expect(violationsOf(await verifyLedger(db.url))).toEqual([]);
  }

  it('hung at idle: every delivery 503 inside the deadline, readiness 503 inside its budget', async () => {
    const batches = await newBatches(4);
    proxy.hold();
    const started = Date.now();
    const [answers, ready] = await Promise.all([
      deliverAll(batches),
      fetchRead(`${(receiver as Receiver).url}/health/ready`),
    ]);
    expect(ready.status).toBe(503);
    expect(Date.now() - started).toBeLessThanOrEqual(LIMIT_MS + 1000);
    expectInsideDeadline('hung at idle', answers, [503]);
    await expectRecovered();
  }, 90_000);

  it('hung in the middle of a batch: 503 inside the deadline; its redelivery applies it once', async () => {
    const batches = await newBatches(2);
    proxy.arm({ marker: mode === 'inline' ? 'cp_apply' : 'inbox_append', then: 'hold' });
    const answers = await deliverAll(batches);
    expect(proxy.fired).toBeGreaterThan(0);
    expectInsideDeadline('hung mid-batch', answers, [200, 503]);
    await expectRecovered();
  }, 90_000);

  it('hung at COMMIT (the server commits, the answer is lost): 503 inside the deadline; the redelivery is a duplicate', async () => {
    const [batch] = await newBatches(1);
    const firedBefore = proxy.fired;
    proxy.arm({
      after: mode === 'inline' ? 'cp_apply' : 'inbox_append',
      marker: 'COMMIT',
      then: 'answerLost',
    });
    const answers = await deliverAll([batch]);
    expect(proxy.fired).toBe(firedBefore + 1);
    expectInsideDeadline('hung at COMMIT', answers, [503]);
    // The connection is given up after the answer: the warning follows it.
    await eventually(
      async () => (receiver as Receiver).output().includes('COMMIT outcome unknown'),
      'the COMMIT outcome unknown warning',
    );
    proxy.release();
    const again = await post((receiver as Receiver).url, batch, { timeoutMs: 20_000 });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ success: true, processed: 1, duplicate: true });
    await expectRecovered();
  }, 90_000);

  it('hung while the pool is full: every delivery 503 inside the deadline, the pool recovers', async () => {
    const batches = await newBatches(10);
    proxy.hold();
    const answers = await deliverAll(batches);
    expectInsideDeadline('hung with the pool full', answers, [503]);
    await expectRecovered();
  }, 120_000);

  it('slow: latency just under the deadline → 200, over it → 503 inside the deadline', async () => {
    // A delivery makes two round trips to the database (START TRANSACTION travels with the first
    // group, COMMIT with the last): 150 ms each way stays under 3 s, 1000 ms goes over it.
    const [first, ...others] = await newBatches(3);
    proxy.latency(150);
    const under = await deliverAll([first]);
    expectInsideDeadline('slow, under the deadline', under, [200]);
    proxy.latency(1000);
    const over = await deliverAll(others);
    expectInsideDeadline('slow, over the deadline', over, [200, 503]);
    expect(over.some((a) => a.answer.status === 503)).toBe(true);
    await expectRecovered();
  }, 120_000);

  it('connections reset in the middle of a transaction: 503 at once, the redelivery applies it once', async () => {
    const batches = await newBatches(2);
    proxy.arm({ marker: mode === 'inline' ? 'cp_apply' : 'inbox_append', then: 'reset' });
    const answers = await deliverAll(batches);
    expectInsideDeadline('reset mid-transaction', answers, [200, 503]);
    expect(answers.some((a) => a.answer.status === 503)).toBe(true);
    await expectRecovered();
  }, 90_000);
});

describe('a database that hangs during a scheduled reconciliation run (CONTRACT §9)', () => {
  let proxy: TcpProxy;
  let api: FakeSportApi;
  let t: TestContext;

  beforeAll(async () => {
    api = await startFakeSportApi();
    const server = new URL(testServer().adminUrl);
    proxy = await TcpProxy.start({ host: server.hostname, port: Number(server.port || 5432) });
    t = await createTestApp(
      {
        ...ENV,
        SPORTAPI_BASE_URL: api.url,
        SPORTAPI_RETRIES: '0',
        RECONCILE_INTERVAL: '0',
        RECONCILE_AFTER: '1',
        LOG_LEVEL: 'fatal',
      },
      {
        via: (url) => {
          const through = new URL(url);
          through.host = `127.0.0.1:${proxy.port}`;
          return through.toString();
        },
      },
    );
    for (const code of ['RC-H1', 'RC-H2', 'RC-H3']) {
      expect((await deliver(t.app, batchOf(`rc-${code}`, { code, status: 1 }))).status).toBe(200);
      api.serve({
        coupon_code: code,
        status: 2,
        realWin: '4.00',
        events: [{ uuid: `${code}-ev-1`, status: 2 }],
      });
    }
    await sleep(5);
  }, 60_000);

  afterAll(async () => {
    proxy?.release();
    await t?.close();
    await proxy?.close();
    await api?.close();
  }, 30_000);

  it('gives the run up at its first hung transaction and releases its lock; the next run reads the rest', async () => {
    const scheduled = t.app.get(ScheduledReconciliation);
    proxy.arm({ marker: 'cp_lock', then: 'hold' });
    const started = Date.now();
    const hung = await scheduled.runOnce();
    const elapsed = Date.now() - started;
    expect(proxy.fired).toBe(1);
    expect(hung).toMatchObject({ skipped: false, candidates: 3, applied: 0, failed: 1 });
    expect(elapsed).toBeLessThan(DEADLINE_MS + 2000);
    proxy.release();
    const next = await scheduled.runOnce();
    expect(next).toMatchObject({ skipped: false, candidates: 3, applied: 3, settled: 3, failed: 0 });
    const { rows } = await t.db.query(
      `SELECT count(*)::int AS n FROM coupons WHERE coupon_code LIKE 'RC-H%' AND generation_settled AND real_win = 4`,
    );
    expect(rows[0].n).toBe(3);
  }, 60_000);
});

describe('failed deliveries while the database hangs (CONTRACT §5, §8)', () => {
  let proxy: TcpProxy;
  let t: TestContext;

  beforeAll(async () => {
    const server = new URL(testServer().adminUrl);
    proxy = await TcpProxy.start({ host: server.hostname, port: Number(server.port || 5432) });
    t = await createTestApp(
      { ...ENV, LOG_LEVEL: 'fatal' },
      {
        via: (url) => {
          const through = new URL(url);
          through.host = `127.0.0.1:${proxy.port}`;
          return through.toString();
        },
      },
    );
  }, 60_000);

  afterAll(async () => {
    proxy?.release();
    await t?.close();
    await proxy?.close();
  }, 30_000);

  const unrecorded = async () =>
    Number(
      (
        await t.app
          .get(MetricsRegistry)
          .registry.getSingleMetric('settlement_delivery_attempts_unrecorded_total')
          ?.get()
      )?.values[0]?.value ?? 0,
    );

  it('a refused delivery is answered at once; its attempt is written once the database answers again', async () => {
    proxy.hold();
    const started = Date.now();
    const res = await request(t.app.getHttpServer())
      .post('/sportapi/callback')
      .set('content-type', 'application/json')
      .set('x-request-id', 'hang-unsigned-1')
      .send('{"batchId":"x"}');
    expect(res.status).toBe(401);
    expect(Date.now() - started).toBeLessThan(500);
    const writer = t.app.get(DeliveryAttemptWriter);
    await sleep(100);
    expect(writer.pending).toBe(1);
    proxy.release();
    await writer.flushed();
    expect(writer.pending).toBe(0);
    const { rows } = await t.db.query(
      `SELECT outcome, http_status, error_code FROM delivery_attempts WHERE request_id = 'hang-unsigned-1'`,
    );
    expect(rows).toEqual([{ outcome: 'unauthorized', http_status: 401, error_code: 'invalid_signature' }]);
    expect(await unrecorded()).toBe(0);
  }, 30_000);

  it('a signed body to quarantine that cannot be kept in time is answered 503 inside the deadline', async () => {
    proxy.hold();
    const body = '{"batchId":"hang-q-1","couponCount":2,"coupons":[]}';
    const started = Date.now();
    const res = await request(t.app.getHttpServer())
      .post('/sportapi/callback')
      .set('content-type', 'application/json')
      .set('x-signature', sign(body))
      .set('x-request-id', 'hang-quarantine-1')
      .send(body);
    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe('transient_failure');
    expect(Date.now() - started).toBeLessThanOrEqual(LIMIT_MS);
    proxy.release();
    await t.app.get(DeliveryAttemptWriter).flushed();
    const { rows } = await t.db.query(
      `SELECT outcome, http_status FROM delivery_attempts WHERE request_id = 'hang-quarantine-1'`,
    );
    expect(rows).toEqual([{ outcome: 'failed', http_status: 503 }]);
    const kept = await t.db.query(
      `SELECT count(*)::int AS n FROM quarantined_bodies WHERE batch_id = 'hang-q-1'`,
    );
    expect(kept.rows[0].n).toBe(0);
  }, 30_000);

  it('attempts still unwritten at shutdown are counted as unrecorded and logged, never dropped silently', async () => {
    proxy.hold();
    for (const id of ['hang-down-1', 'hang-down-2']) {
      const res = await request(t.app.getHttpServer())
        .post('/sportapi/callback')
        .set('content-type', 'application/json')
        .set('x-request-id', id)
        .send('{}');
      expect(res.status).toBe(401);
    }
    const before = await unrecorded();
    await sleep(100);
    await t.app.get(DeliveryAttemptWriter).beforeApplicationShutdown();
    expect((await unrecorded()) - before).toBe(2);
    proxy.release();
  }, 30_000);
});
