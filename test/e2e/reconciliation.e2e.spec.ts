import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { startServe, RunningServe } from '../../sim/serve.js';
import { LedgerVerifier } from '../../src/core/ledger/ledger-verifier.js';
import {
  RECONCILIATION_LOCK_KEY,
  ScheduledReconciliation,
} from '../../src/intake/reconciliation/scheduled-reconciliation.js';
import { FakeSportApi, startFakeSportApi } from '../support/fake-sportapi.js';
import {
  balance,
  batchOf,
  createTestApp,
  deliver,
  deposit,
  expectError,
  operations,
  ops,
  pendingInboxRow,
  register,
  sha256Hex,
  TestContext,
  useTestApp,
} from '../support/test-app.js';
import { eventually, sleep } from '../support/wait.js';

// CONTRACT §9 (polling fallback and reconciliation) with §6/§7 (settlement generations, keys).
const SPORTAPI_KEY = 'sportapi-read-key';

const coupon = (code: string, status: number, realWin: string | number | null, extra = {}) => ({
  coupon_code: code,
  status,
  realWin,
  events: [{ uuid: `${code}-ev-1`, status }],
  ...extra,
});

/** `poll:<code>:<sha256 of the coupon JSON>` for a coupon served as JSON.stringify gives it. */
const pollBatchId = (c: object & { coupon_code: string }) =>
  `poll:${c.coupon_code}:${sha256Hex(JSON.stringify(c))}`;

async function ledgerSum(t: TestContext): Promise<string> {
  const { rows } = await t.db.query(
    `SELECT coalesce(sum(amount), 0)::numeric(20,2)::text AS s FROM ledger_entries`,
  );
  return rows[0].s;
}

describe('scheduled reconciliation with the simulator as SportAPI (CONTRACT §2, §9)', () => {
  let t: TestContext;
  let serve: RunningServe;
  let dir: string;
  const lost = coupon('SCHED-1', 2, '42.50');

  beforeAll(async () => {
    // The batch SportAPI tried five times and gave up on: it never reached the receiver.
    dir = await mkdtemp(join(tmpdir(), 'poll-sim-'));
    await writeFile(
      join(dir, '0001.json'),
      JSON.stringify({ batchId: 'b-sched-1', couponCount: 1, coupons: [lost] }),
    );
    serve = await startServe({ data: dir, apiKey: SPORTAPI_KEY });
    t = await createTestApp({
      SPORTAPI_BASE_URL: serve.url,
      SPORTAPI_API_KEY: SPORTAPI_KEY,
      RECONCILE_INTERVAL: '200',
      RECONCILE_AFTER: '1s',
    });
  });
  afterAll(async () => {
    await t.close();
    await serve.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('a coupon whose callbacks all failed is settled by the scheduled job, exactly once', async () => {
    await deposit(t.app, 'ps1', '100.00');
    await register(t.app, 'SCHED-1', 'ps1', '10.00');
    expect(await balance(t.app, 'ps1')).toBe('90.00');
    await eventually(
      async () => (await ops(t.app).get('/coupons/SCHED-1')).body.settled === true,
      'the scheduled job to settle SCHED-1',
      { timeoutMs: 15_000, intervalMs: 100 },
    );
    // Several more runs: the settled coupon is no candidate any more, nothing is read or paid again.
    await sleep(1500);
    expect(await operations(t.app, 'SCHED-1')).toEqual([
      'SCHED-1:0:final_credit=42.50',
      'SCHED-1:0:stake_debit=10.00',
    ]);
    expect(await balance(t.app, 'ps1')).toBe('132.50');
    expect(serve.stats.reads).toBe(1);
    const view = (await ops(t.app).get('/coupons/SCHED-1')).body;
    expect(view).toMatchObject({ status: 2, realWin: '42.50', settlementGeneration: 0, needsReview: false });
    expect(view.events).toEqual([{ uuid: 'SCHED-1-ev-1', status: 2 }]);
    const snapshots = await t.db.query(
      `SELECT batch_id, transition FROM coupon_snapshots WHERE coupon_code = 'SCHED-1'`,
    );
    expect(snapshots.rows).toEqual([{ batch_id: pollBatchId(lost), transition: 'settled' }]);
    // No delivery attempt is invented for a read.
    expect((await t.db.query(`SELECT count(*)::int AS n FROM delivery_attempts`)).rows[0].n).toBe(0);

    // The original batch arriving after all (late redelivery): same result, no money.
    const late = await deliver(t.app, { batchId: 'b-sched-1', couponCount: 1, coupons: [lost] });
    expect(late.body).toEqual({ success: true, processed: 1 });
    expect(await balance(t.app, 'ps1')).toBe('132.50');
    expect(await ledgerSum(t)).toBe('0.00');
  });
});

describe('manual reconcile and resolution (CONTRACT §9, §10)', () => {
  let t: TestContext;
  let api: FakeSportApi;

  beforeAll(async () => {
    api = await startFakeSportApi();
    t = await createTestApp({
      SPORTAPI_BASE_URL: api.url,
      SPORTAPI_API_KEY: SPORTAPI_KEY,
      RECONCILE_INTERVAL: 'off',
      SPORTAPI_RETRIES: '2',
      SPORTAPI_TIMEOUT_MS: '1000',
      // No allowed currency has 3 fraction digits: a read with 3 is not a valid coupon (issue 17).
      CURRENCIES: 'EUR,USD',
    });
  });
  afterAll(async () => {
    await t.close();
    await api.close();
  });

  const reconcile = (code: string) => ops(t.app).post(`/coupons/${code}/reconcile`, undefined);

  /**
   * Reconciles `code` while SportAPI answers a WIN of 10.00 slowly (900 ms, under
   * SPORTAPI_TIMEOUT_MS 1000) and, during that read, the callback `batchId` brings the recalculation
   * to 5.00, which SportAPI then answers too. Asserts the callback's 200, the reconcile's 200 and a
   * second read. @returns the reconcile's answer.
   */
  async function reconcileDuringRecalculation(code: string, batchId: string) {
    api.serve(coupon(code, 2, '10.00'), 900);
    const reads = api.reads(code);
    const pending = reconcile(code).then((r) => r); // supertest sends on then()
    await eventually(async () => api.reads(code) === reads + 1, 'the slow read to be in flight');
    expect((await deliver(t.app, batchOf(batchId, { code, status: 15, realWin: '5.00' }))).status).toBe(200);
    api.serve(coupon(code, 15, '5.00'));
    const res = await pending;
    expect(res.status).toBe(200);
    expect(api.reads(code)).toBe(reads + 2);
    return res;
  }

  it('reads the coupon (bearer credential) and applies it; a second call changes nothing', async () => {
    await deposit(t.app, 'pr1', '50.00');
    await register(t.app, 'REC-1', 'pr1', '10.00');
    const read = coupon('REC-1', 2, '30.00');
    api.serve(read);
    const first = await reconcile('REC-1');
    expect(first.status).toBe(200);
    expect(first.headers['reconciliation-outcome']).toBe('applied');
    expect(first.headers['reconciliation-batch-id']).toBe(pollBatchId(read));
    expect(first.body).toMatchObject({
      coupon_code: 'REC-1',
      accountId: 'pr1',
      status: 2,
      realWin: '30.00',
      settlementGeneration: 0,
      settled: true,
      needsReview: false,
      events: [{ uuid: 'REC-1-ev-1', status: 2 }],
    });
    expect(api.requests.at(-1)?.headers.authorization).toBe(`Bearer ${SPORTAPI_KEY}`);
    expect(await balance(t.app, 'pr1')).toBe('70.00');

    const second = await reconcile('REC-1');
    expect(second.status).toBe(200);
    expect(second.headers['reconciliation-outcome']).toBe('unchanged');
    expect(second.body).toEqual(first.body);
    expect(await operations(t.app, 'REC-1')).toEqual([
      'REC-1:0:final_credit=30.00',
      'REC-1:0:stake_debit=10.00',
    ]);
    expect(await balance(t.app, 'pr1')).toBe('70.00');
    const batches = await t.db.query(
      `SELECT batch_id FROM callback_batches WHERE batch_id LIKE 'poll:REC-1:%'`,
    );
    expect(batches.rows).toEqual([{ batch_id: pollBatchId(read) }]);
    expect(
      (await t.db.query(`SELECT count(*)::int AS n FROM coupon_snapshots WHERE coupon_code = 'REC-1'`))
        .rows[0].n,
    ).toBe(1);
  });

  it('the batch id hashes the coupon JSON, not its layout: the same coupon pretty-printed is unchanged', async () => {
    await deposit(t.app, 'pr5', '10.00');
    await register(t.app, 'REC-5', 'pr5', '10.00');
    // A number no double holds exactly: it must be stored with its digits.
    const text = JSON.stringify(coupon('REC-5', 2, '12.00', { big: 0 })).replace(
      '"big":0',
      '"big":12345678901234567890',
    );
    api.answers.set('REC-5', { status: 200, body: text });
    const first = await reconcile('REC-5');
    expect(first.headers['reconciliation-outcome']).toBe('applied');
    expect(first.headers['reconciliation-batch-id']).toBe(`poll:REC-5:${sha256Hex(text)}`);
    // Stored with every digit (lossless), as a callback's payload is.
    const stored = await t.db.query(
      `SELECT payload->>'big' AS big FROM coupon_snapshots WHERE coupon_code = 'REC-5'`,
    );
    expect(stored.rows).toEqual([{ big: '12345678901234567890' }]);
    api.answers.set('REC-5', {
      status: 200,
      body: text.replaceAll(',', ',\n  ').replace('{', '{\n  '),
    });
    const second = await reconcile('REC-5');
    expect(second.headers['reconciliation-outcome']).toBe('unchanged');
    expect(await operations(t.app, 'REC-5')).toEqual([
      'REC-5:0:final_credit=12.00',
      'REC-5:0:stake_debit=10.00',
    ]);
  });

  it('a needs_review coupon is re-settled from the read result as generation 1, once', async () => {
    await deposit(t.app, 'pr2', '100.00');
    await register(t.app, 'REC-2', 'pr2', '10.00');
    await deliver(t.app, batchOf('b-rec2-1', { code: 'REC-2', status: 2, realWin: '50.00' }));
    // A conflicting final result: not paid, flagged (CONTRACT §6).
    await deliver(t.app, batchOf('b-rec2-2', { code: 'REC-2', status: 2, realWin: '80.00' }));
    let view = (await ops(t.app).get('/coupons/REC-2')).body;
    expect(view).toMatchObject({ needsReview: true, reviewReason: 'conflicting_result', realWin: '50.00' });
    expect(await balance(t.app, 'pr2')).toBe('140.00');

    api.serve(coupon('REC-2', 2, 80));
    const res = await reconcile('REC-2');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 2,
      realWin: '80.00',
      settlementGeneration: 1,
      settled: true,
      needsReview: false,
      reviewReason: null,
    });
    const expected = [
      'REC-2:0:final_credit=50.00',
      'REC-2:0:stake_debit=10.00',
      'REC-2:1:final_credit=80.00',
      'REC-2:1:recalculation_debit=50.00',
    ];
    expect(await operations(t.app, 'REC-2')).toEqual(expected);
    expect(await balance(t.app, 'pr2')).toBe('170.00');

    // Read again, and the same result by callback in a new batch: nothing moves.
    expect((await reconcile('REC-2')).headers['reconciliation-outcome']).toBe('unchanged');
    const again = await deliver(t.app, batchOf('b-rec2-3', { code: 'REC-2', status: 2, realWin: '80.00' }));
    expect(again.status).toBe(200);
    view = (await ops(t.app).get('/coupons/REC-2')).body;
    expect(view).toMatchObject({ settlementGeneration: 1, needsReview: false });
    expect(await operations(t.app, 'REC-2')).toEqual(expected);
    expect(await balance(t.app, 'pr2')).toBe('170.00');
    const transitions = await t.db.query(
      `SELECT transition FROM coupon_snapshots WHERE coupon_code = 'REC-2' ORDER BY id`,
    );
    expect(transitions.rows.map((r) => r.transition)).toEqual([
      'settled',
      'conflicting_result',
      'resettled',
      'same_result',
    ]);
    expect(await ledgerSum(t)).toBe('0.00');
  });

  it('the same read after a callback changed the coupon is decided again (suffixed batch id): the flag it raised is cleared, no money moves', async () => {
    await deposit(t.app, 'pr6', '10.00');
    await register(t.app, 'REC-6', 'pr6', '10.00');
    const read = coupon('REC-6', 2, '30.00');
    api.serve(read);
    const first = await reconcile('REC-6');
    expect(first.headers['reconciliation-batch-id']).toBe(pollBatchId(read));
    expect(await balance(t.app, 'pr6')).toBe('30.00');

    // A late callback with another final result: not paid, flagged (CONTRACT §6).
    await deliver(t.app, batchOf('b-rec6-1', { code: 'REC-6', status: 2, realWin: '45.00' }));
    expect((await ops(t.app).get('/coupons/REC-6')).body).toMatchObject({
      needsReview: true,
      reviewReason: 'conflicting_result',
    });

    // SportAPI answers the very same coupon JSON: decided again against the coupon's state now.
    const suffixed = `${pollBatchId(read)}:${sha256Hex('b-rec6-1').slice(0, 16)}`;
    const second = await reconcile('REC-6');
    expect(second.status).toBe(200);
    expect(second.headers).toMatchObject({
      'reconciliation-outcome': 'applied',
      'reconciliation-batch-id': suffixed,
    });
    expect(second.body).toMatchObject({
      status: 2,
      realWin: '30.00',
      settlementGeneration: 0,
      needsReview: false,
      reviewReason: null,
    });
    // Nothing happened since: unchanged, nothing written.
    const third = await reconcile('REC-6');
    expect(third.headers).toMatchObject({
      'reconciliation-outcome': 'unchanged',
      'reconciliation-batch-id': suffixed,
    });
    expect(await operations(t.app, 'REC-6')).toEqual([
      'REC-6:0:final_credit=30.00',
      'REC-6:0:stake_debit=10.00',
    ]);
    expect(await balance(t.app, 'pr6')).toBe('30.00');
    const history = await t.db.query(
      `SELECT batch_id, transition FROM coupon_snapshots WHERE coupon_code = 'REC-6' ORDER BY id`,
    );
    expect(history.rows).toEqual([
      { batch_id: pollBatchId(read), transition: 'settled' },
      { batch_id: 'b-rec6-1', transition: 'conflicting_result' },
      { batch_id: suffixed, transition: 'same_result' },
    ]);
    // The suffixed synthetic batch is one ledger:verify knows (no delivery record expected).
    const report = await new LedgerVerifier(t.db).verify();
    expect(report.violations).toEqual([]);
  });

  it('a read taken while a callback changed the coupon is taken again: the older read is never applied over the newer callback', async () => {
    await deposit(t.app, 'pr8', '100.00');
    await register(t.app, 'REC-8', 'pr8', '10.00');
    await deliver(t.app, batchOf('b-rec8-1', { code: 'REC-8', status: 2, realWin: '10.00' }));
    expect(await balance(t.app, 'pr8')).toBe('100.00');
    // SportAPI answers the WIN slowly; meanwhile the recalculation arrives by callback.
    const res = await reconcileDuringRecalculation('REC-8', 'b-rec8-2');
    expect(res.body).toMatchObject({
      status: 15,
      realWin: '5.00',
      settlementGeneration: 1,
      needsReview: false,
    });
    expect(await operations(t.app, 'REC-8')).toEqual([
      'REC-8:0:final_credit=10.00',
      'REC-8:0:stake_debit=10.00',
      'REC-8:1:final_credit=5.00',
      'REC-8:1:recalculation_debit=10.00',
    ]);
    expect(await balance(t.app, 'pr8')).toBe('95.00');
  });

  it('a coupon unknown when its read began and created by a callback during the read: read again, the callback not overwritten', async () => {
    const res = await reconcileDuringRecalculation('REC-11', 'b-rec11-1');
    expect(res.body).toMatchObject({ status: 15, realWin: '5.00', settled: true, needsReview: false });
    const history = await t.db.query(
      `SELECT batch_id, transition FROM coupon_snapshots WHERE coupon_code = 'REC-11' ORDER BY id`,
    );
    expect(history.rows.map((r) => r.transition)).toEqual([
      'recalculation_settled',
      'recalculation_repeated',
    ]);
  });

  it('a coupon changing during every read: 409 coupon_changed_during_read after three reads, nothing written', async () => {
    await deposit(t.app, 'pr9', '10.00');
    await register(t.app, 'REC-9', 'pr9', '10.00');
    api.serve(coupon('REC-9', 2, '7.00'), 800); // under SPORTAPI_TIMEOUT_MS (1000)
    const reads = api.reads('REC-9');
    let stop = false;
    let n = 0;
    const stream = (async () => {
      while (!stop) {
        await deliver(t.app, batchOf(`b-rec9-${n++}`, { code: 'REC-9', status: 1, realWin: null }));
        await sleep(50);
      }
    })();
    const res = await reconcile('REC-9');
    stop = true;
    await stream;
    expectError(res, 409, 'coupon_changed_during_read');
    expect(res.body.error.message).toBe(
      'coupon REC-9 changed during each of 3 reads from SportAPI; retry later',
    );
    expect(api.reads('REC-9')).toBe(reads + 3);
    const polls = await t.db.query(
      `SELECT count(*)::int AS n FROM coupon_snapshots WHERE coupon_code = 'REC-9' AND batch_id LIKE 'poll:%'`,
    );
    expect(polls.rows[0].n).toBe(0);
    expect(await operations(t.app, 'REC-9')).toEqual(['REC-9:0:stake_debit=10.00']);
  });

  it('refuses to read or resolve a coupon whose batches wait in the inbox (409 coupon_inbox_pending), nothing written', async () => {
    await deposit(t.app, 'pr7', '10.00');
    await register(t.app, 'REC-7', 'pr7', '10.00');
    await deliver(t.app, batchOf('b-rec7-1', { code: 'REC-7', status: 2, realWin: '5.00' }));
    await deliver(t.app, batchOf('b-rec7-2', { code: 'REC-7', status: 2, realWin: '6.00' }));
    await pendingInboxRow(t, 'b-rec7-3', 'REC-7');
    api.serve(coupon('REC-7', 2, '6.00'));
    const before = api.reads('REC-7');

    const read = await reconcile('REC-7');
    expectError(read, 409, 'coupon_inbox_pending');
    expect(read.body.error.message).toBe(
      'the inbox holds 1 pending batch(es) of coupon REC-7; retry after they are applied',
    );
    const resolution = await ops(t.app).post(
      '/coupons/REC-7/resolution',
      { realWin: '6.00', reason: 'ticket', resolvedBy: 'ops' },
      { 'idempotency-key': 'rec7-res' },
    );
    expectError(resolution, 409, 'coupon_inbox_pending');
    expect(api.reads('REC-7')).toBe(before + 1);
    expect(await operations(t.app, 'REC-7')).toEqual([
      'REC-7:0:final_credit=5.00',
      'REC-7:0:stake_debit=10.00',
    ]);
    const written = await t.db.query(
      `SELECT (SELECT count(*)::int FROM coupon_snapshots WHERE coupon_code = 'REC-7') AS snapshots,
              (SELECT count(*)::int FROM coupon_resolutions WHERE coupon_code = 'REC-7') AS resolutions,
              (SELECT needs_review FROM coupons WHERE coupon_code = 'REC-7') AS flagged`,
    );
    expect(written.rows[0]).toEqual({ snapshots: 2, resolutions: 0, flagged: true });

    // The inbox drained (here: the row is gone): the read applies.
    await t.db.query(`DELETE FROM callback_inbox WHERE batch_id = 'b-rec7-3'`);
    const after = await reconcile('REC-7');
    expect(after.status).toBe(200);
    expect(after.body).toMatchObject({ realWin: '6.00', settlementGeneration: 1, needsReview: false });
  });

  it('ten concurrent reconciles of one coupon: one applies, the others find the batch (200 unchanged)', async () => {
    await deposit(t.app, 'pr4', '10.00');
    await register(t.app, 'REC-4', 'pr4', '10.00');
    api.serve(coupon('REC-4', 2, '15.00'));
    const all = await Promise.all(Array.from({ length: 10 }, () => reconcile('REC-4')));
    expect(all.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(all.map((r) => r.headers['reconciliation-outcome']).sort()).toEqual([
      'applied',
      ...Array(9).fill('unchanged'),
    ]);
    expect(await operations(t.app, 'REC-4')).toEqual([
      'REC-4:0:final_credit=15.00',
      'REC-4:0:stake_debit=10.00',
    ]);
    expect(await balance(t.app, 'pr4')).toBe('15.00');
  });

  it('a coupon unknown locally is stored unallocated and paid once at registration', async () => {
    api.serve(coupon('REC-3', 3, '10.00'));
    const res = await reconcile('REC-3');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ unallocated: true, status: 3, realWin: '10.00', operations: [] });
    await deposit(t.app, 'pr3', '10.00');
    await register(t.app, 'REC-3', 'pr3', '10.00');
    expect(await operations(t.app, 'REC-3')).toEqual([
      'REC-3:0:final_credit=10.00',
      'REC-3:0:stake_debit=10.00',
    ]);
    expect(await balance(t.app, 'pr3')).toBe('10.00');
  });

  it('SportAPI 404 → 404 sportapi_coupon_not_found, nothing written', async () => {
    const res = await reconcile('REC-404');
    expectError(res, 404, 'sportapi_coupon_not_found');
    expect(
      (await t.db.query(`SELECT count(*)::int AS n FROM coupons WHERE coupon_code = 'REC-404'`)).rows[0].n,
    ).toBe(0);
  });

  it('SportAPI failing (503) → retried twice, then 503 sportapi_unavailable', async () => {
    api.answers.set('REC-503', { status: 503, body: { error: 'maintenance' } });
    const res = await reconcile('REC-503');
    expectError(res, 503, 'sportapi_unavailable');
    expect(api.reads('REC-503')).toBe(3);
  });

  it('SportAPI unreachable → 503 sportapi_unavailable', async () => {
    const down = await startFakeSportApi();
    await down.close();
    const t2 = await createTestApp({
      SPORTAPI_BASE_URL: down.url,
      RECONCILE_INTERVAL: '0',
      SPORTAPI_RETRIES: '0',
    });
    try {
      expectError(await ops(t2.app).post('/coupons/X/reconcile', undefined), 503, 'sportapi_unavailable');
    } finally {
      await t2.close();
    }
  });

  it('a slow SportAPI (over SPORTAPI_TIMEOUT_MS) → 503 sportapi_unavailable', async () => {
    // undici's timers are coarse (a timeout fires up to ~0.5 s late): answer well after it.
    api.serve(coupon('REC-SLOW', 2, '1.00'), 4000);
    const res = await reconcile('REC-SLOW');
    expectError(res, 503, 'sportapi_unavailable');
  }, 20_000);

  it.each([
    ['amount with 3 fraction digits', coupon('REC-BAD', 2, '12.345'), 'realWin'],
    ['events missing', { coupon_code: 'REC-BAD', status: 2, realWin: '1.00' }, 'events'],
    ['another coupon_code', coupon('OTHER', 2, '1.00'), 'coupon_code'],
    ['not JSON', 'Service temporarily <b>down</b>', null],
    ['an array', [coupon('REC-BAD', 2, '1.00')], null],
  ])(
    'an invalid coupon from SportAPI (%s) → 502 sportapi_bad_response, nothing written',
    async (_, body, path) => {
      await register(t.app, 'REC-BAD', 'pr-bad', '0.01').catch(async () => {
        await deposit(t.app, 'pr-bad', '1.00');
        await register(t.app, 'REC-BAD', 'pr-bad', '0.01');
      });
      api.answers.set('REC-BAD', { status: 200, body });
      const res = await reconcile('REC-BAD');
      expectError(res, 502, 'sportapi_bad_response');
      if (path) expect(res.body.error.fields.map((f: { path: string }) => f.path)).toContain(path);
      const view = (await ops(t.app).get('/coupons/REC-BAD')).body;
      expect(view).toMatchObject({ status: null, settled: false, events: [] });
      expect(
        (
          await t.db.query(
            `SELECT count(*)::int AS n FROM callback_batches WHERE batch_id LIKE 'poll:REC-BAD:%'`,
          )
        ).rows[0].n,
      ).toBe(0);
    },
  );

  it('SportAPI refusing the credential (401) → 502 sportapi_bad_response', async () => {
    api.answers.set('REC-401', { status: 401, body: { error: 'unauthorized' } });
    expectError(await reconcile('REC-401'), 502, 'sportapi_bad_response');
    expect(api.reads('REC-401')).toBe(1);
  });

  it('the partner API needs the bearer key', async () => {
    const res = await request(t.app.getHttpServer()).post('/coupons/REC-1/reconcile');
    expectError(res, 401, 'unauthorized');
    const res2 = await request(t.app.getHttpServer())
      .post('/coupons/REC-1/resolution')
      .set('idempotency-key', 'k')
      .send({ realWin: '1.00', reason: 'r', resolvedBy: 'x' });
    expectError(res2, 401, 'unauthorized');
  });

  it('Swagger documents reconcile and resolution with their answers and examples', async () => {
    const res = await request(t.app.getHttpServer()).get('/docs-json');
    expect(res.status).toBe(200);
    type Response = {
      content?: Record<
        string,
        {
          example?: unknown;
          examples?: Record<string, { value: { error: { code: string } } }>;
          schema?: { $ref?: string };
        }
      >;
    };
    const doc = res.body as {
      paths: Record<
        string,
        Record<string, { responses: Record<string, Response>; parameters?: { name: string }[] }>
      >;
      components: { schemas: Record<string, { properties: Record<string, { example?: unknown }> }> };
    };
    const reconcileOp = doc.paths['/coupons/{coupon_code}/reconcile'].post;
    expect(Object.keys(reconcileOp.responses).sort()).toEqual([
      '200',
      '401',
      '403',
      '404',
      '409',
      '429',
      '501',
      '502',
      '503',
    ]);
    const resolutionOp = doc.paths['/coupons/{coupon_code}/resolution'].post;
    expect(Object.keys(resolutionOp.responses).sort()).toEqual([
      '201',
      '400',
      '401',
      '403',
      '404',
      '409',
      '429',
      '503',
    ]);
    expect(resolutionOp.parameters?.map((p) => p.name)).toContain('Idempotency-Key');
    for (const op of [reconcileOp, resolutionOp]) {
      for (const [status, response] of Object.entries(op.responses)) {
        const content = response.content?.['application/json'];
        if (Number(status) >= 400) {
          const examples = content?.example
            ? [content.example]
            : Object.values(content?.examples ?? {}).map((e) => e.value);
          expect(examples.length).toBeGreaterThan(0);
          for (const example of examples) expect(example).toMatchObject({ success: false });
        } else expect(content?.schema?.$ref).toMatch(/CouponView|ResolutionResultView/);
      }
    }
    expect(reconcileOp.responses['502'].content?.['application/json'].example).toMatchObject({
      error: { code: 'sportapi_bad_response' },
    });
    const readConflicts = reconcileOp.responses['409'].content?.['application/json'].examples ?? {};
    expect(Object.values(readConflicts).map((e) => e.value.error.code)).toEqual([
      'coupon_inbox_pending',
      'coupon_changed_during_read',
    ]);
    const conflicts = resolutionOp.responses['409'].content?.['application/json'].examples ?? {};
    expect(Object.values(conflicts).map((e) => e.value.error.code)).toEqual([
      'coupon_not_flagged',
      'idempotency_conflict',
      'coupon_inbox_pending',
    ]);
    for (const schema of ['ResolutionDto', 'ResolutionView']) {
      for (const [name, property] of Object.entries(doc.components.schemas[schema].properties)) {
        expect({ schema, name, example: property.example !== undefined }).toEqual({
          schema,
          name,
          example: true,
        });
      }
    }
  });

  describe('operator resolution', () => {
    const resolve = (code: string, key: string | undefined, body: unknown) =>
      ops(t.app).post(
        `/coupons/${code}/resolution`,
        body,
        key === undefined ? {} : { 'idempotency-key': key },
      );

    async function flagged(code: string, account: string, paid: string, conflicting: string) {
      await deposit(t.app, account, '100.00');
      await register(t.app, code, account, '10.00');
      await deliver(t.app, batchOf(`b-${code}-1`, { code, status: 2, realWin: paid }));
      await deliver(t.app, batchOf(`b-${code}-2`, { code, status: 2, realWin: conflicting }));
      expect((await ops(t.app).get(`/coupons/${code}`)).body.needsReview).toBe(true);
    }

    it('re-settles as a new generation once, records who and why; replay, conflict, not flagged', async () => {
      await flagged('RES-1', 'pm1', '25.00', '40.00');
      expect(await balance(t.app, 'pm1')).toBe('115.00');
      const body = { realWin: '12.50', reason: 'SportAPI support ticket 4711', resolvedBy: 'jane.doe' };
      const first = await resolve('RES-1', 'res-1', body);
      expect(first.status).toBe(201);
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      expect(first.body.resolution).toMatchObject({
        idempotencyKey: 'res-1',
        coupon_code: 'RES-1',
        status: 2,
        realWin: '12.50',
        reason: 'SportAPI support ticket 4711',
        resolvedBy: 'jane.doe',
        batchId: `resolution:RES-1:${sha256Hex('res-1')}`,
        transition: 'resettled',
        generation: 1,
        operations: ['RES-1:1:recalculation_debit=25.00', 'RES-1:1:final_credit=12.50'],
      });
      expect(first.body.coupon).toMatchObject({
        status: 2,
        realWin: '12.50',
        settlementGeneration: 1,
        needsReview: false,
        reviewReason: null,
      });
      const expected = [
        'RES-1:0:final_credit=25.00',
        'RES-1:0:stake_debit=10.00',
        'RES-1:1:final_credit=12.50',
        'RES-1:1:recalculation_debit=25.00',
      ];
      expect(await operations(t.app, 'RES-1')).toEqual(expected);
      expect(await balance(t.app, 'pm1')).toBe('102.50');

      const replay = await resolve('RES-1', 'res-1', body);
      expect(replay.status).toBe(201);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.body).toEqual(first.body);

      expectError(
        await resolve('RES-1', 'res-1', { ...body, realWin: '13.00' }),
        409,
        'idempotency_conflict',
      );
      expectError(await resolve('RES-1', 'res-2', body), 409, 'coupon_not_flagged');
      expect(await operations(t.app, 'RES-1')).toEqual(expected);
      expect(await balance(t.app, 'pm1')).toBe('102.50');

      const rows = await t.db.query(
        `SELECT idempotency_key, coupon_code, status, real_win::text, reason, resolved_by, transition, generation,
                resolved_at IS NOT NULL AS at
         FROM coupon_resolutions`,
      );
      expect(rows.rows).toEqual([
        {
          idempotency_key: 'res-1',
          coupon_code: 'RES-1',
          status: 2,
          real_win: '12.50000000',
          reason: 'SportAPI support ticket 4711',
          resolved_by: 'jane.doe',
          transition: 'resettled',
          generation: 1,
          at: true,
        },
      ]);
      // Append-only.
      await expect(t.db.query(`UPDATE coupon_resolutions SET reason = 'x'`)).rejects.toThrow(/append-only/);
    });

    it('null realWin is a loss: generation 1 debits what was credited', async () => {
      await flagged('RES-2', 'pm2', '30.00', '31.00');
      const res = await resolve('RES-2', 'res-loss', {
        realWin: null,
        reason: 'void leg',
        resolvedBy: 'ops-2',
      });
      expect(res.status).toBe(201);
      expect(res.body.resolution).toMatchObject({
        status: 4,
        realWin: '0.00',
        operations: ['RES-2:1:recalculation_debit=30.00'],
      });
      expect(res.body.coupon).toMatchObject({
        status: 4,
        realWin: '0.00',
        settlementGeneration: 1,
        needsReview: false,
      });
      expect(await balance(t.app, 'pm2')).toBe('90.00');
    });

    it('ten concurrent requests with one key apply once', async () => {
      await flagged('RES-3', 'pm3', '20.00', '21.00');
      const body = { realWin: '21.00', reason: 'confirmed', resolvedBy: 'ops-3' };
      const all = await Promise.all(Array.from({ length: 10 }, () => resolve('RES-3', 'res-3', body)));
      expect(all.map((r) => r.status)).toEqual(Array(10).fill(201));
      expect(all.filter((r) => r.headers['idempotent-replayed'] !== 'true')).toHaveLength(1);
      expect(await operations(t.app, 'RES-3')).toEqual([
        'RES-3:0:final_credit=20.00',
        'RES-3:0:stake_debit=10.00',
        'RES-3:1:final_credit=21.00',
        'RES-3:1:recalculation_debit=20.00',
      ]);
      expect(await balance(t.app, 'pm3')).toBe('111.00');
    });

    it('refuses bad requests with clear 4xx', async () => {
      const body = { realWin: '1.00', reason: 'r', resolvedBy: 'x' };
      expectError(await resolve('RES-1', undefined, body), 400, 'idempotency_key_required');
      expectError(await resolve('RES-1', 'bad key!', body), 400, 'idempotency_key_required');
      expectError(await resolve('NOPE', 'res-nope', body), 404, 'not_found');
      // A key used for one coupon cannot resolve another.
      expectError(await resolve('RES-2', 'res-1', body), 409, 'idempotency_conflict');
      expectError(await resolve('RES-1', 'res-v1', { ...body, realWin: '1.001' }), 400, 'validation_failed');
      expectError(
        await resolve('RES-1', 'res-v2', { reason: 'r', resolvedBy: 'x' }),
        400,
        'validation_failed',
      );
      expectError(await resolve('RES-1', 'res-v3', { ...body, resolvedBy: '' }), 400, 'validation_failed');
      expectError(await resolve('RES-1', 'res-v4', { ...body, status: 4 }), 400, 'validation_failed');
      expectError(await resolve('RES-1', 'res-v5', { ...body, status: 1 }), 400, 'validation_failed');
    });
  });
});

describe('scheduled runs: candidates, batch size, one replica at a time (CONTRACT §9)', () => {
  let t: TestContext;
  let api: FakeSportApi;
  let scheduled: ScheduledReconciliation;

  beforeAll(async () => {
    api = await startFakeSportApi();
    t = await createTestApp({
      SPORTAPI_BASE_URL: api.url,
      SPORTAPI_API_KEY: 'k-header',
      SPORTAPI_AUTH_HEADER: 'X-Api-Key',
      RECONCILE_INTERVAL: 'off',
      RECONCILE_AFTER: '0',
      RECONCILE_BATCH_SIZE: '2',
    });
    scheduled = t.app.get(ScheduledReconciliation);
  });
  afterAll(async () => {
    await t.close();
    await api.close();
  });

  it('reads flagged and unsettled coupons, at most RECONCILE_BATCH_SIZE per run; only one of two concurrent runs works', async () => {
    await deposit(t.app, 'pq', '100.00');
    await register(t.app, 'RUN-1', 'pq', '10.00');
    await register(t.app, 'RUN-2', 'pq', '10.00');
    await deliver(t.app, batchOf('b-run3-1', { code: 'RUN-3', status: 2, realWin: '5.00' }));
    await deliver(t.app, batchOf('b-run3-2', { code: 'RUN-3', status: 2, realWin: '6.00' }));
    await register(t.app, 'RUN-3', 'pq', '10.00');
    expect(await balance(t.app, 'pq')).toBe('75.00');
    api.serve(coupon('RUN-1', 2, '20.00'), 300);
    api.serve(coupon('RUN-2', 4, null), 300);
    api.serve(coupon('RUN-3', 2, '6.00'), 300);

    const [a, b] = await Promise.all([scheduled.runOnce(), scheduled.runOnce()]);
    const worked = [a, b].filter((s) => !s.skipped);
    expect(worked).toHaveLength(1);
    expect(worked[0]).toMatchObject({ candidates: 2, applied: 2, settled: 2, unchanged: 0, failed: 0 });
    expect([a, b].filter((s) => s.skipped)[0]).toMatchObject({ candidates: 0, applied: 0 });

    const second = await scheduled.runOnce();
    expect(second).toMatchObject({ skipped: false, candidates: 1, applied: 1, settled: 1 });
    const third = await scheduled.runOnce();
    expect(third).toMatchObject({ skipped: false, candidates: 0 });

    expect(await operations(t.app, 'RUN-1')).toEqual([
      'RUN-1:0:final_credit=20.00',
      'RUN-1:0:stake_debit=10.00',
    ]);
    expect(await operations(t.app, 'RUN-2')).toEqual(['RUN-2:0:stake_debit=10.00']);
    expect(await operations(t.app, 'RUN-3')).toEqual([
      'RUN-3:0:final_credit=5.00',
      'RUN-3:0:stake_debit=10.00',
      'RUN-3:1:final_credit=6.00',
      'RUN-3:1:recalculation_debit=5.00',
    ]);
    expect(await balance(t.app, 'pq')).toBe('96.00');
    for (const code of ['RUN-1', 'RUN-2', 'RUN-3']) expect(api.reads(code)).toBe(1);
    expect(api.requests.at(-1)?.headers['x-api-key']).toBe('k-header');
    expect(api.requests.at(-1)?.headers.authorization).toBeUndefined();
  });

  it('skips the run while another replica holds the advisory lock', async () => {
    await register(t.app, 'RUN-4', 'pq', '1.00');
    api.serve(coupon('RUN-4', 2, '2.00'));
    const replica = await t.db.connect();
    try {
      await replica.query('SELECT pg_advisory_lock($1)', [RECONCILIATION_LOCK_KEY]);
      expect(await scheduled.runOnce()).toMatchObject({ skipped: true, candidates: 0 });
      expect(api.reads('RUN-4')).toBe(0);
      await replica.query('SELECT pg_advisory_unlock($1)', [RECONCILIATION_LOCK_KEY]);
    } finally {
      replica.release();
    }
    expect(await scheduled.runOnce()).toMatchObject({ skipped: false, candidates: 1, settled: 1 });
    expect(await operations(t.app, 'RUN-4')).toEqual([
      'RUN-4:0:final_credit=2.00',
      'RUN-4:0:stake_debit=1.00',
    ]);
  });

  it('defers a coupon whose batches wait in the inbox: not read, not stamped, read once they are applied', async () => {
    await register(t.app, 'RUN-7', 'pq', '1.00');
    api.serve(coupon('RUN-7', 2, '3.00'));
    await pendingInboxRow(t, 'b-run7-1', 'RUN-7');
    expect(await scheduled.runOnce()).toMatchObject({ candidates: 1, deferred: 1, applied: 0, failed: 0 });
    const stamp = await t.db.query(`SELECT last_reconciled_at FROM coupons WHERE coupon_code = 'RUN-7'`);
    expect(stamp.rows).toEqual([{ last_reconciled_at: null }]);
    await t.db.query(`DELETE FROM callback_inbox WHERE batch_id = 'b-run7-1'`);
    expect(await scheduled.runOnce()).toMatchObject({ candidates: 1, deferred: 0, applied: 1, settled: 1 });
    expect(await operations(t.app, 'RUN-7')).toEqual([
      'RUN-7:0:final_credit=3.00',
      'RUN-7:0:stake_debit=1.00',
    ]);
  });

  it('counts coupons SportAPI does not know or answers invalid, and does not re-read them at once', async () => {
    await register(t.app, 'RUN-5', 'pq', '1.00');
    await register(t.app, 'RUN-6', 'pq', '1.00');
    api.answers.set('RUN-6', { status: 200, body: { coupon_code: 'RUN-6' } });
    expect(await scheduled.runOnce()).toMatchObject({ candidates: 2, notFound: 1, invalid: 1, applied: 0 });
    const stamped = await t.db.query(
      `SELECT coupon_code FROM coupons WHERE last_reconciled_at IS NOT NULL AND coupon_code IN ('RUN-5', 'RUN-6') ORDER BY 1`,
    );
    expect(stamped.rows.map((r) => r.coupon_code)).toEqual(['RUN-5', 'RUN-6']);
  });
});

describe('polling disabled (SPORTAPI_BASE_URL unset)', () => {
  const t = useTestApp();

  it('reconcile answers 501 polling_disabled; a scheduled run refuses; resolution still works', async () => {
    expectError(await ops(t.app).post('/coupons/ANY/reconcile', undefined), 501, 'polling_disabled');
    await expect(t.app.get(ScheduledReconciliation).runOnce()).rejects.toThrow(/disabled/);
    await deposit(t.app, 'pd', '10.00');
    await register(t.app, 'DIS-1', 'pd', '10.00');
    await deliver(t.app, batchOf('b-dis-1', { code: 'DIS-1', status: 7, realWin: null }));
    const res = await ops(t.app).post(
      '/coupons/DIS-1/resolution',
      { realWin: '3.00', reason: 'unknown status 7 is a win', resolvedBy: 'ops' },
      { 'idempotency-key': 'dis-1' },
    );
    expect(res.status).toBe(201);
    expect(res.body.resolution).toMatchObject({
      transition: 'settled',
      generation: 0,
      operations: ['DIS-1:0:final_credit=3.00'],
    });
    expect(await balance(t.app, 'pd')).toBe('3.00');
  });
});
