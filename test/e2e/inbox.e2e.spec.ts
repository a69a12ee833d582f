import pg from 'pg';
import request from 'supertest';
import { BatchRepository } from '../../src/core/settlement/batch.repository.js';
import { InboxService } from '../../src/intake/inbox/inbox.service.js';
import { LedgerVerifier } from '../../src/core/ledger/ledger-verifier.js';
import { injectTrigger, lockWaiters } from '../support/database-faults.js';
import { increase, scrape } from '../support/metrics.js';
import { rowsOfBatch } from '../support/rows.js';
import {
  balance,
  batchOf,
  deliver,
  deposit,
  expectError,
  inboxRow,
  operations,
  pendingInboxRow,
  ops,
  quarantinedConflict,
  register,
  sha256Hex,
  startApp,
  TestContext,
  useTestApp,
} from '../support/test-app.js';
import { eventually, sleep } from '../support/wait.js';

// Inbox mode (CALLBACK_MODE=inbox): the callback commits the verified, validated batch to the
// inbox and answers 200 after that COMMIT (CONTRACT §4, §5); workers apply it later exactly once,
// in arrival order per coupon, retrying failures with backoff and quarantining a batch after
// INBOX_MAX_ATTEMPTS failures (§8). Failures are injected with triggers in the test database.

const INBOX_ENV = {
  CALLBACK_MODE: 'inbox',
  INBOX_POLL_INTERVAL_MS: '20',
  INBOX_CONCURRENCY: '4',
  INBOX_RETRY_BASE_MS: '50',
  INBOX_RETRY_MAX_MS: '200',
};

/**
 * Makes every apply attempt of batch `batchId` fail with `[P0001] injected apply failure` (a trigger
 * `name`) until the returned remover is called: meanwhile the batch waits in the inbox.
 */
function failApply(t: TestContext, name: string, batchId: string): Promise<() => Promise<void>> {
  return injectTrigger(
    t.db,
    name,
    'callback_batches',
    `IF NEW.batch_id = '${batchId}' THEN RAISE EXCEPTION 'injected apply failure'; END IF;`,
  );
}

/** Waits until no inbox row is pending. */
async function drained(t: TestContext): Promise<void> {
  await eventually(async () => {
    const { rows } = await t.db.query(
      `SELECT count(*)::int AS n FROM callback_inbox WHERE status = 'pending'`,
    );
    return rows[0].n === 0;
  }, 'the inbox to drain');
}

async function inboxRows(t: TestContext, batchId: string) {
  const { rows } = await t.db.query(
    `SELECT status, attempts, outcome, payload, payload_hash, coupon_codes, last_error
       FROM callback_inbox WHERE batch_id = $1 ORDER BY id`,
    [batchId],
  );
  return rows;
}

/** `batch id:coupon code` of every `callback_inbox_pending_coupons` row, in that order. */
async function pendingCoupons(t: TestContext): Promise<string[]> {
  const { rows } = await t.db.query(
    `SELECT i.batch_id || ':' || p.coupon_code AS k
       FROM callback_inbox_pending_coupons p JOIN callback_inbox i ON i.id = p.inbox_id
      ORDER BY i.id, p.coupon_code`,
  );
  return rows.map((r) => r.k);
}

/** Two or more coupons in one batch (each as {@link batchOf} builds one). */
function batchOfMany(batchId: string, coupons: Parameters<typeof batchOf>[1][]) {
  return {
    batchId,
    couponCount: coupons.length,
    coupons: coupons.flatMap((c) => batchOf(batchId, c).coupons),
  };
}

async function attempts(t: TestContext, batchId: string) {
  const { rows } = await t.db.query(
    `SELECT outcome, http_status FROM delivery_attempts WHERE batch_id = $1 ORDER BY id`,
    [batchId],
  );
  return rows.map((r) => `${r.outcome}:${r.http_status}`);
}

describe('inbox mode (CALLBACK_MODE=inbox)', () => {
  // A long lock timeout: the worker waits for the test's row lock until its connection is killed.
  const t = useTestApp({ ...INBOX_ENV, INBOX_MAX_ATTEMPTS: '1000', DB_LOCK_TIMEOUT_MS: '6000' });
  beforeAll(async () => {
    await deposit(t.app, 'ib-p1', '100.00');
  });

  it('answers 200 once the batch is in the inbox (CONTRACT §5), before it is applied; a worker applies it later', async () => {
    await register(t.app, 'IB-1', 'ib-p1', '10.00');
    // The apply step fails while this trigger exists: the row stays in the inbox.
    const remove = await failApply(t, 'ib_block_1', 'ib-b1');
    const body = JSON.stringify(batchOf('ib-b1', { code: 'IB-1', status: 2, realWin: '185.50' }));
    const res = await deliver(t.app, body);
    expect({ status: res.status, body: res.body }).toEqual({
      status: 200,
      body: { success: true, processed: 1 },
    });
    const [row] = await inboxRows(t, 'ib-b1');
    expect({ ...row, payload: row.payload.toString(), attempts: undefined, last_error: undefined }).toEqual({
      status: 'pending',
      attempts: undefined,
      outcome: null,
      payload: body,
      payload_hash: sha256Hex(body),
      coupon_codes: ['IB-1'],
      last_error: undefined,
    });
    expect(await attempts(t, 'ib-b1')).toEqual(['accepted:200']);
    // Its coupon is held while it is pending (written in the transaction that accepted it).
    expect(await pendingCoupons(t)).toEqual(['ib-b1:IB-1']);
    // Not applied: no money moved, the coupon has no callback state yet.
    await eventually(async () => (await inboxRows(t, 'ib-b1'))[0].attempts >= 1, 'a failed attempt');
    expect((await inboxRows(t, 'ib-b1'))[0].last_error).toBe('[P0001] injected apply failure');
    // Operators see it waiting, with its last error and next attempt (GET /callbacks/inbox).
    const pending = await ops(t.app).get('/callbacks/inbox?status=pending');
    expect(pending.status).toBe(200);
    const entry = pending.body.items.find((i: { batchId: string }) => i.batchId === 'ib-b1');
    expect({
      ...entry,
      id: typeof entry.id,
      attempts: entry.attempts >= 1,
      nextAttemptAt: typeof entry.nextAttemptAt,
      receivedAt: typeof entry.receivedAt,
    }).toEqual({
      id: 'string',
      batchId: 'ib-b1',
      payloadHash: sha256Hex(body),
      couponCount: 1,
      couponCodes: ['IB-1'],
      status: 'pending',
      attempts: true,
      nextAttemptAt: 'string',
      lastError: '[P0001] injected apply failure',
      outcome: null,
      receivedAt: 'string',
      finishedAt: null,
    });
    expect(await balance(t.app, 'ib-p1')).toBe('90.00');
    expect((await ops(t.app).get('/coupons/IB-1')).body.status).toBeNull();
    // A failed attempt leaves nothing behind (one transaction with the apply).
    expect(await rowsOfBatch(t.db, 'ib-b1')).toEqual({ batches: 0, snapshots: 0, operations: 0 });

    await remove();
    await drained(t);
    expect(await operations(t.app, 'IB-1')).toEqual([
      'IB-1:0:final_credit=185.50',
      'IB-1:0:stake_debit=10.00',
    ]);
    expect(await balance(t.app, 'ib-p1')).toBe('275.50');
    expect((await inboxRows(t, 'ib-b1')).map((r) => [r.status, r.outcome, r.last_error])).toEqual([
      ['done', 'processed', null],
    ]);
    // Released in the transaction that applied it.
    expect(await pendingCoupons(t)).toEqual([]);
  });

  it("stores an applied batch's body as its inbox row holds it, copied in the database and bound to its hash", async () => {
    // Over 2 KB: PostgreSQL stores it compressed, and the worker's claim copies it as stored.
    const events = Array.from({ length: 60 }, (_, i) => ({
      uuid: `IB-BIG-event-${i}-${'x'.repeat(20)}`,
      status: 0,
    }));
    const body = JSON.stringify(batchOf('ib-big', { code: 'IB-BIG', status: 1, events }));
    // A body sent again by the worker would reach the insert uncompressed.
    const remove = await injectTrigger(
      t.db,
      'ib_big_copied',
      'callback_batches',
      `IF NEW.batch_id = 'ib-big' AND pg_column_compression(NEW.payload) IS NULL THEN
         RAISE EXCEPTION 'the body was sent again, not copied';
       END IF;`,
    );
    expect((await deliver(t.app, body)).status).toBe(200);
    await drained(t);
    await remove();
    expect((await inboxRows(t, 'ib-big')).map((r) => [r.status, r.attempts, r.last_error])).toEqual([
      ['done', 0, null],
    ]);
    const stored = await t.db.query(
      `SELECT b.payload = i.payload AS same, octet_length(b.payload) AS bytes,
              pg_column_compression(b.payload) AS compression, i.id AS "inboxId"
         FROM callback_batches b JOIN callback_inbox i USING (batch_id) WHERE batch_id = 'ib-big'`,
    );
    const { inboxId } = stored.rows[0];
    expect(stored.rows).toEqual([
      { same: true, bytes: Buffer.byteLength(body), compression: 'pglz', inboxId },
    ]);

    // The claim names the inbox row and the hash: another hash stores no body (a NULL payload fails a CHECK).
    const claim = (payloadHash: string) =>
      new BatchRepository().claimStatement(
        { batchId: 'ib-big-copy', payloadHash, couponCount: 1, rawBody: Buffer.alloc(0), inboxId },
        ['IB-BIG'],
        { checkInbox: false },
      );
    const client = await t.db.connect();
    try {
      await client.query('BEGIN');
      const right = claim(sha256Hex(body));
      expect((await client.query(right.text, right.values)).rows).toEqual([
        { claimed: true, inboxPending: false },
      ]);
      const copy = await client.query(`SELECT payload FROM callback_batches WHERE batch_id = 'ib-big-copy'`);
      expect(copy.rows[0].payload.toString()).toBe(body);
      await client.query('ROLLBACK');
      const wrong = claim(sha256Hex('another body'));
      // No body without its expiry time (a CHECK since raw bodies expire, docs/retention.md).
      await expect(client.query(wrong.text, wrong.values)).rejects.toMatchObject({
        code: '23514',
        constraint: 'callback_batches_payload_check',
      });
    } finally {
      client.release();
    }
    expect(await rowsOfBatch(t.db, 'ib-big-copy')).toEqual({ batches: 0, snapshots: 0, operations: 0 });
  });

  it("counts a worker's financial operations in the ledger-operations metric once committed, as inline (CONTRACT §7)", async () => {
    await register(t.app, 'IB-M1', 'ib-p1', '1.00');
    const before = await scrape(t.app);
    const body = JSON.stringify(batchOf('ib-m1', { code: 'IB-M1', status: 2, realWin: '3.00' }));
    expect((await deliver(t.app, body)).body).toEqual({ success: true, processed: 1 });
    await drained(t);
    // A duplicate moves no money and counts nothing.
    expect((await deliver(t.app, body)).body).toEqual({ success: true, processed: 1, duplicate: true });
    const after = await scrape(t.app);
    expect({
      finalCredits: increase(before, after, 'settlement_ledger_operations_total{type="final_credit"}'),
      stakeDebits: increase(before, after, 'settlement_ledger_operations_total{type="stake_debit"}'),
    }).toEqual({ finalCredits: 1, stakeDebits: 0 });
    expect(await operations(t.app, 'IB-M1')).toEqual([
      'IB-M1:0:final_credit=3.00',
      'IB-M1:0:stake_debit=1.00',
    ]);
  });

  it('counts an inbox delivery as accepted in the deliveries metric, as its delivery attempt says (CONTRACT §8)', async () => {
    const before = await scrape(t.app);
    const body = JSON.stringify(batchOf('ib-acc1', { code: 'IB-ACC1', status: 1 }));
    expect((await deliver(t.app, body)).status).toBe(200);
    expect((await deliver(t.app, body)).status).toBe(200);
    const after = await scrape(t.app);
    // Every outcome is exposed from the start: an absent one fails (NaN).
    const delta = (outcome: string) =>
      increase(before, after, `settlement_callback_deliveries_total{outcome="${outcome}"}`, NaN);
    expect({
      accepted: delta('accepted'),
      duplicate: delta('duplicate'),
      processed: delta('processed'),
    }).toEqual({
      accepted: 1,
      duplicate: 1,
      processed: 0,
    });
    const attempts = await t.db.query(
      `SELECT outcome FROM delivery_attempts WHERE batch_id = 'ib-acc1' ORDER BY id`,
    );
    expect(attempts.rows.map((r) => r.outcome)).toEqual(['accepted', 'duplicate']);
  });

  it('treats a redelivery as a duplicate both while the first copy waits in the inbox and after it was applied; another body is a 409 and quarantined', async () => {
    await register(t.app, 'IB-2', 'ib-p1', '5.00');
    const remove = await failApply(t, 'ib_block_2', 'ib-b2');
    const body = JSON.stringify(batchOf('ib-b2', { code: 'IB-2', status: 2, realWin: '20.00' }));
    const other = JSON.stringify(batchOf('ib-b2', { code: 'IB-2', status: 2, realWin: '99.00' }));
    expect((await deliver(t.app, body)).body).toEqual({ success: true, processed: 1 });
    // Still pending: a duplicate of the inbox row.
    expect((await inboxRows(t, 'ib-b2'))[0].status).toBe('pending');
    const dup = await deliver(t.app, body);
    expect({ status: dup.status, body: dup.body }).toEqual({
      status: 200,
      body: { success: true, processed: 1, duplicate: true },
    });
    expectError(await deliver(t.app, other), 409, 'batch_conflict');

    await remove();
    await drained(t);
    // Applied: again a duplicate, again a conflict.
    expect((await deliver(t.app, body)).body).toEqual({ success: true, processed: 1, duplicate: true });
    expectError(await deliver(t.app, other), 409, 'batch_conflict');

    expect((await inboxRows(t, 'ib-b2')).map((r) => r.status)).toEqual(['done']);
    expect(await attempts(t, 'ib-b2')).toEqual([
      'accepted:200',
      'duplicate:200',
      'conflict:409',
      'duplicate:200',
      'conflict:409',
    ]);
    const { rows } = await t.db.query(
      `SELECT reason, http_status, body, inbox_id, payload_hash FROM quarantined_bodies WHERE batch_id = 'ib-b2' ORDER BY id`,
    );
    expect(rows.map((r) => [r.reason, r.http_status, r.body.toString(), r.inbox_id, r.payload_hash])).toEqual(
      [
        ['batch_conflict', 409, other, null, sha256Hex(other)],
        ['batch_conflict', 409, other, null, sha256Hex(other)],
      ],
    );
    // Refused attempts carry the hash of the body they refused, as inline.
    const hashes = await t.db.query(
      `SELECT DISTINCT payload_hash FROM delivery_attempts WHERE batch_id = 'ib-b2' AND outcome = 'conflict'`,
    );
    expect(hashes.rows).toEqual([{ payload_hash: sha256Hex(other) }]);
    expect(await operations(t.app, 'IB-2')).toEqual(['IB-2:0:final_credit=20.00', 'IB-2:0:stake_debit=5.00']);
  });

  it('a body refused in inbox mode and replayed later is applied once and leaves ledger:verify clean (its hash kept)', async () => {
    await register(t.app, 'IB-11', 'ib-p1', '1.00');
    const body = JSON.stringify(batchOf('ib-b11', { code: 'IB-11', status: 2, realWin: '3.00' }));
    // Refused (409) because another body held the batch id; the operator then removed that one.
    const id = await quarantinedConflict(t, JSON.parse(body) as { batchId: string });
    const { rows } = await t.db.query(`SELECT payload_hash FROM quarantined_bodies WHERE id = $1`, [id]);
    expect(rows.map((r) => r.payload_hash)).toEqual([sha256Hex(body)]);
    const replay = await ops(t.app).post(`/callbacks/quarantine/${id}/replay`, {});
    expect([replay.status, replay.body.outcome]).toEqual([200, 'processed']);
    expect(await operations(t.app, 'IB-11')).toEqual([
      'IB-11:0:final_credit=3.00',
      'IB-11:0:stake_debit=1.00',
    ]);
    const report = await new LedgerVerifier(t.db).verify();
    expect(report.violations.filter((v) => v.subject === 'ib-b11')).toEqual([]);
  });

  it('answers concurrent deliveries of one batch 200, keeps one inbox row and applies it once (CONTRACT §4 step 4)', async () => {
    await register(t.app, 'IB-10', 'ib-p1', '2.00');
    const body = JSON.stringify(batchOf('ib-b10', { code: 'IB-10', status: 2, realWin: '4.00' }));
    const answers = await Promise.all(Array.from({ length: 6 }, () => deliver(t.app, body)));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(answers.filter((r) => r.body.duplicate === true)).toHaveLength(5);
    await drained(t);
    expect((await inboxRows(t, 'ib-b10')).map((r) => r.status)).toEqual(['done']);
    expect((await attempts(t, 'ib-b10')).sort()).toEqual([
      'accepted:200',
      'duplicate:200',
      'duplicate:200',
      'duplicate:200',
      'duplicate:200',
      'duplicate:200',
    ]);
    expect(await operations(t.app, 'IB-10')).toEqual([
      'IB-10:0:final_credit=4.00',
      'IB-10:0:stake_debit=2.00',
    ]);
  });

  it('treats a batch applied inline before the switch to inbox mode as a duplicate (and another body as 409)', async () => {
    await register(t.app, 'IB-3', 'ib-p1', '1.00');
    const body = JSON.stringify(batchOf('ib-b3', { code: 'IB-3', status: 4, realWin: '0' }));
    // As the inline mode leaves it: the batch id in callback_batches, no inbox row.
    await t.db.query(
      `INSERT INTO callback_batches (batch_id, payload_hash, coupon_count, payload) VALUES ('ib-b3', $1, 1, $2)`,
      [sha256Hex(body), Buffer.from(body)],
    );
    expect((await deliver(t.app, body)).body).toEqual({ success: true, processed: 1, duplicate: true });
    expectError(
      await deliver(t.app, batchOf('ib-b3', { code: 'IB-3', status: 2, realWin: '5.00' })),
      409,
      'batch_conflict',
    );
    expect(await inboxRows(t, 'ib-b3')).toEqual([]);
  });

  it('applies two batches touching one coupon in arrival order, never concurrently; batches on other coupons go ahead', async () => {
    await register(t.app, 'IB-4', 'ib-p1', '10.00');
    await register(t.app, 'IB-5', 'ib-p1', '10.00');
    const remove = await failApply(t, 'ib_block_4', 'ib-b4a');
    // b4a: IB-4 wins 50.00; b4b: IB-4 recalculated to 30.00 (order matters for the money);
    // b5: IB-5 only.
    expect(
      (await deliver(t.app, batchOf('ib-b4a', { code: 'IB-4', status: 2, realWin: '50.00' }))).status,
    ).toBe(200);
    expect(
      (await deliver(t.app, batchOf('ib-b4b', { code: 'IB-4', status: 15, realWin: '30.00' }))).status,
    ).toBe(200);
    expect((await deliver(t.app, batchOf('ib-b5', { code: 'IB-5', status: 4, realWin: '0' }))).status).toBe(
      200,
    );
    await eventually(async () => (await inboxRows(t, 'ib-b5'))[0].status === 'done', 'ib-b5 applied');
    await eventually(async () => (await inboxRows(t, 'ib-b4a'))[0].attempts >= 2, 'ib-b4a retried');
    // ib-b4b waits behind the failing ib-b4a: never tried, nothing of IB-4 applied.
    expect((await inboxRows(t, 'ib-b4b')).map((r) => [r.status, r.attempts])).toEqual([['pending', 0]]);
    expect(await operations(t.app, 'IB-4')).toEqual(['IB-4:0:stake_debit=10.00']);

    await remove();
    await drained(t);
    expect(await operations(t.app, 'IB-4')).toEqual([
      'IB-4:0:final_credit=50.00',
      'IB-4:0:stake_debit=10.00',
      'IB-4:1:final_credit=30.00',
      'IB-4:1:recalculation_debit=50.00',
    ]);
    const { rows } = await t.db.query(
      `SELECT batch_id, transition FROM coupon_snapshots WHERE coupon_code = 'IB-4' ORDER BY id`,
    );
    expect(rows.map((r) => r.batch_id)).toEqual(['ib-b4a', 'ib-b4b']);
  });

  it('holds a batch back while an earlier pending batch shares any of its coupons, also through a chain of batches', async () => {
    for (const code of ['IB-20', 'IB-21', 'IB-22', 'IB-23']) await register(t.app, code, 'ib-p1', '1.00');
    const remove = await failApply(t, 'ib_block_20', 'ib-c1');
    // c1 {20, 21} fails; c2 {21, 22} shares 21 with it; c3 {22} shares 22 with c2 only; c4 {23} is free.
    const deliveries = [
      batchOfMany('ib-c1', [
        { code: 'IB-20', status: 2, realWin: '5.00' },
        { code: 'IB-21', status: 2, realWin: '6.00' },
      ]),
      batchOfMany('ib-c2', [
        { code: 'IB-21', status: 15, realWin: '7.00' },
        { code: 'IB-22', status: 2, realWin: '8.00' },
      ]),
      batchOf('ib-c3', { code: 'IB-22', status: 15, realWin: '9.00' }),
      batchOf('ib-c4', { code: 'IB-23', status: 2, realWin: '4.00' }),
    ];
    for (const body of deliveries) expect((await deliver(t.app, body)).status).toBe(200);
    await eventually(async () => (await inboxRows(t, 'ib-c4'))[0].status === 'done', 'ib-c4 applied');
    await eventually(async () => (await inboxRows(t, 'ib-c1'))[0].attempts >= 2, 'ib-c1 retried');
    expect((await inboxRows(t, 'ib-c2')).map((r) => [r.status, r.attempts])).toEqual([['pending', 0]]);
    expect((await inboxRows(t, 'ib-c3')).map((r) => [r.status, r.attempts])).toEqual([['pending', 0]]);
    expect(await pendingCoupons(t)).toEqual([
      'ib-c1:IB-20',
      'ib-c1:IB-21',
      'ib-c2:IB-21',
      'ib-c2:IB-22',
      'ib-c3:IB-22',
    ]);

    await remove();
    await drained(t);
    expect(await pendingCoupons(t)).toEqual([]);
    expect(await operations(t.app, 'IB-21')).toEqual([
      'IB-21:0:final_credit=6.00',
      'IB-21:0:stake_debit=1.00',
      'IB-21:1:final_credit=7.00',
      'IB-21:1:recalculation_debit=6.00',
    ]);
    expect(await operations(t.app, 'IB-22')).toEqual([
      'IB-22:0:final_credit=8.00',
      'IB-22:0:stake_debit=1.00',
      'IB-22:1:final_credit=9.00',
      'IB-22:1:recalculation_debit=8.00',
    ]);
    const { rows } = await t.db.query(
      `SELECT batch_id FROM callback_inbox WHERE batch_id LIKE 'ib-c%' ORDER BY finished_at, id`,
    );
    expect(rows.map((r) => r.batch_id)).toEqual(['ib-c4', 'ib-c1', 'ib-c2', 'ib-c3']);
  });

  it('keeps the pending coupons exact whatever writes the inbox: rows added and released by plain SQL (an earlier version, an operator) hold and free later batches', async () => {
    await register(t.app, 'IB-30', 'ib-p1', '1.00');
    // An earlier version's append: the inbox row only, due in an hour.
    await pendingInboxRow(t, 'ib-d1', 'IB-30');
    expect(await pendingCoupons(t)).toEqual(['ib-d1:IB-30']);
    expect(
      (await deliver(t.app, batchOf('ib-d2', { code: 'IB-30', status: 2, realWin: '3.00' }))).status,
    ).toBe(200);
    await sleep(300);
    expect((await inboxRows(t, 'ib-d2')).map((r) => [r.status, r.attempts])).toEqual([['pending', 0]]);
    // An earlier version's worker finishes ib-d1 with its own UPDATE: ib-d2 goes ahead.
    await t.db.query(
      `UPDATE callback_inbox SET status = 'done', outcome = 'processed' WHERE batch_id = 'ib-d1'`,
    );
    await drained(t);
    expect((await inboxRows(t, 'ib-d2')).map((r) => [r.status, r.outcome])).toEqual([['done', 'processed']]);
    expect(await operations(t.app, 'IB-30')).toEqual([
      'IB-30:0:final_credit=3.00',
      'IB-30:0:stake_debit=1.00',
    ]);
    // Coupon codes changed, a row back to pending, a row deleted: the table follows each.
    await pendingInboxRow(t, 'ib-d3', 'IB-31');
    await t.db.query(`UPDATE callback_inbox SET coupon_codes = '{IB-32,IB-33}' WHERE batch_id = 'ib-d3'`);
    await t.db.query(
      `UPDATE callback_inbox SET status = 'pending', next_attempt_at = now() + interval '1 hour' WHERE batch_id = 'ib-d1'`,
    );
    expect(await pendingCoupons(t)).toEqual(['ib-d1:IB-30', 'ib-d3:IB-32', 'ib-d3:IB-33']);
    await t.db.query(`DELETE FROM callback_inbox WHERE batch_id IN ('ib-d1', 'ib-d3')`);
    expect(await pendingCoupons(t)).toEqual([]);
  });

  it('keeps per-coupon arrival order under parallel workers: a burst of batches on three coupons ends as inline would', async () => {
    for (const code of ['IB-6', 'IB-7', 'IB-8']) await register(t.app, code, 'ib-p1', '1.00');
    // Per coupon: two intermediate snapshots, a WIN, a recalculation with a new result.
    const steps = (code: string, i: number) =>
      [
        batchOf(`ib-${code}-1`, { code, status: 1, events: [{ uuid: `${code}-e`, status: 0 }] }),
        batchOf(`ib-${code}-2`, { code, status: 1, events: [{ uuid: `${code}-e`, status: 2 }] }),
        batchOf(`ib-${code}-3`, { code, status: 2, realWin: `${10 + i}.00` }),
        batchOf(`ib-${code}-4`, { code, status: 15, realWin: `${20 + i}.00` }),
      ] as const;
    const all = ['IB-6', 'IB-7', 'IB-8'].map((c, i) => steps(c, i));
    for (let k = 0; k < 4; k++) {
      for (const s of all) expect((await deliver(t.app, s[k])).status).toBe(200);
    }
    await drained(t);
    for (const [i, code] of ['IB-6', 'IB-7', 'IB-8'].entries()) {
      expect(await operations(t.app, code)).toEqual([
        `${code}:0:final_credit=${10 + i}.00`,
        `${code}:0:stake_debit=1.00`,
        `${code}:1:final_credit=${20 + i}.00`,
        `${code}:1:recalculation_debit=${10 + i}.00`,
      ]);
      const { rows } = await t.db.query(
        `SELECT batch_id, applied FROM coupon_snapshots WHERE coupon_code = $1 ORDER BY id`,
        [code],
      );
      expect(rows.map((r) => `${r.batch_id}:${r.applied}`)).toEqual(
        [1, 2, 3, 4].map((k) => `ib-${code}-${k}:true`),
      );
    }
  });

  it('keeps per-coupon arrival order with a second replica on the same database (workers in both)', async () => {
    const replica = await startApp(t.config);
    try {
      const codes = ['IR-1', 'IR-2', 'IR-3', 'IR-4'];
      for (const code of codes) await register(t.app, code, 'ib-p1', '1.00');
      // 12 batches of two coupons each, overlapping, delivered alternately to the two replicas;
      // each carries a pending snapshot whose event status counts up, the last ones a WIN.
      const sent: { batchId: string; codes: string[] }[] = [];
      for (let k = 0; k < 12; k++) {
        const pair = [codes[k % 4], codes[(k + 1) % 4]];
        const final = k >= 8;
        const batch = {
          batchId: `ir-${k}`,
          couponCount: 2,
          coupons: pair.map((code) => ({
            coupon_code: code,
            status: final ? 2 : 1,
            realWin: final ? `${k}.00` : null,
            events: [{ uuid: `${code}-e`, status: final ? 2 : 0, step: k }],
          })),
        };
        const res = await deliver(k % 2 ? replica : t.app, batch);
        expect(res.status).toBe(200);
        sent.push({ batchId: batch.batchId, codes: pair });
      }
      await drained(t);
      for (const code of codes) {
        const { rows } = await t.db.query(
          `SELECT batch_id FROM coupon_snapshots WHERE coupon_code = $1 AND batch_id LIKE 'ir-%' ORDER BY id`,
          [code],
        );
        expect(rows.map((r) => r.batch_id)).toEqual(
          sent.filter((b) => b.codes.includes(code)).map((b) => b.batchId),
        );
      }
      // Each coupon is settled by its first WIN (ir-8: IR-1 and IR-2, ir-9: IR-3, ir-10: IR-4); a
      // later WIN with another amount is history only and flags the coupon, exactly as inline.
      const expected = { 'IR-1': '8.00', 'IR-2': '8.00', 'IR-3': '9.00', 'IR-4': '10.00' };
      for (const [code, win] of Object.entries(expected)) {
        expect(await operations(t.app, code)).toEqual([
          `${code}:0:final_credit=${win}`,
          `${code}:0:stake_debit=1.00`,
        ]);
        expect((await ops(t.app).get(`/coupons/${code}`)).body).toMatchObject({
          realWin: win,
          needsReview: true,
        });
      }
    } finally {
      await replica.close();
    }
  });

  it('applies a batch exactly once when the connection of its worker dies in the middle of applying it', async () => {
    await register(t.app, 'IB-9', 'ib-p1', '10.00');
    // Hold the coupon's row lock so the worker stops inside its transaction, then kill its connection.
    const locker = new pg.Client({
      connectionString: t.config.database.databaseUrl,
      application_name: 'ib-test-locker',
    });
    locker.on('error', () => undefined);
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query(`SELECT 1 FROM coupons WHERE coupon_code = 'IB-9' FOR UPDATE`);
      expect(
        (await deliver(t.app, batchOf('ib-b9', { code: 'IB-9', status: 2, realWin: '33.00' }))).status,
      ).toBe(200);
      const { pid } = await eventually(
        async () => (await lockWaiters(t.db, { statement: '%coupons%' }))[0],
        'the worker to wait for the coupon lock',
      );
      await t.db.query('SELECT pg_terminate_backend($1)', [pid]);
      // The batch is tried again (by this worker or another) and waits for the lock once more.
      await eventually(
        async () => (await lockWaiters(t.db, { statement: '%coupons%' })).some((r) => r.pid !== pid),
        'the batch to be tried again',
      );
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
    }
    await drained(t);
    const [row] = await inboxRows(t, 'ib-b9');
    // The lost attempt is counted unless another worker had the row already (it never waits).
    expect([row.status, row.outcome, row.attempts <= 1]).toEqual(['done', 'processed', true]);
    expect(await operations(t.app, 'IB-9')).toEqual([
      'IB-9:0:final_credit=33.00',
      'IB-9:0:stake_debit=10.00',
    ]);
    const { rows } = await t.db.query(
      `SELECT count(*)::int AS n FROM coupon_snapshots WHERE batch_id = 'ib-b9'`,
    );
    expect(rows[0].n).toBe(1);
  }, 30_000);

  it('answers 400 for an invalid body without touching the inbox (validated before the commit)', async () => {
    const res = await deliver(t.app, { batchId: 'ib-bad', couponCount: 2, coupons: [] });
    expectError(res, 400, 'validation_failed');
    expect(await inboxRows(t, 'ib-bad')).toEqual([]);
  });
});

describe('inbox retries and quarantine (INBOX_MAX_ATTEMPTS=3)', () => {
  const t = useTestApp({ ...INBOX_ENV, INBOX_MAX_ATTEMPTS: '3' });
  beforeAll(async () => {
    await deposit(t.app, 'iq-p1', '100.00');
  });

  it('doubles the retry delay per failure up to INBOX_RETRY_MAX_MS', () => {
    const inbox = t.app.get(InboxService);
    expect([1, 2, 3, 4, 5].map((n) => inbox.retryDelayMs(n))).toEqual([50, 100, 200, 200, 200]);
  });

  it('retries a failing batch with backoff, quarantines it after 3 attempts, and a replay applies it once (twice → applied once)', async () => {
    await register(t.app, 'IQ-1', 'iq-p1', '10.00');
    const remove = await failApply(t, 'iq_block_1', 'iq-b1');
    const body = JSON.stringify(batchOf('iq-b1', { code: 'IQ-1', status: 2, realWin: '40.00' }));
    expect((await deliver(t.app, body)).status).toBe(200);
    // A later batch on the same coupon waits until the failing one is quarantined.
    expect((await deliver(t.app, batchOf('iq-b2', { code: 'IQ-1', status: 1 }))).status).toBe(200);
    await eventually(async () => (await inboxRows(t, 'iq-b1'))[0].status === 'quarantined', 'the quarantine');
    const { rows: inbox } = await t.db.query(
      `SELECT attempts, outcome, last_error, (extract(epoch FROM finished_at - received_at) * 1000)::int AS took_ms FROM callback_inbox WHERE batch_id = 'iq-b1'`,
    );
    expect(inbox.map((r) => [r.attempts, r.outcome, r.last_error])).toEqual([
      [3, 'failed', '[P0001] injected apply failure'],
    ]);
    // Backoff: 50 ms after the first failure, 100 ms after the second.
    expect(inbox[0].took_ms).toBeGreaterThanOrEqual(150);
    const { rows: q } = await t.db.query(
      `SELECT id, reason, details, http_status, body, payload_hash, inbox_id IS NOT NULL AS linked
         FROM quarantined_bodies WHERE batch_id = 'iq-b1'`,
    );
    expect(q.map((r) => ({ ...r, id: undefined, body: r.body.toString() }))).toEqual([
      {
        id: undefined,
        reason: 'apply_failed',
        details: { attempts: 3, lastError: '[P0001] injected apply failure' },
        http_status: 200,
        body,
        payload_hash: sha256Hex(body),
        linked: true,
      },
    ]);
    await drained(t);
    // The quarantine released iq-b1's coupon in its transaction; iq-b2 went after it.
    expect(await pendingCoupons(t)).toEqual([]);
    expect((await inboxRows(t, 'iq-b2'))[0].outcome).toBe('processed');
    const listed = await ops(t.app).get('/callbacks/inbox?status=quarantined&limit=1');
    expect(
      listed.body.items.map((i: Record<string, unknown>) => [
        i.batchId,
        i.status,
        i.attempts,
        i.outcome,
        i.nextAttemptAt,
      ]),
    ).toEqual([['iq-b1', 'quarantined', 3, 'failed', null]]);
    const all = await ops(t.app).get('/callbacks/inbox?limit=1');
    expect(all.body.items.map((i: { batchId: string }) => i.batchId)).toEqual(['iq-b2']);
    const next = await ops(t.app).get(`/callbacks/inbox?limit=1&cursor=${all.body.nextCursor}`);
    expect(next.body.items.map((i: { batchId: string }) => i.batchId)).toEqual(['iq-b1']);
    expectError(await ops(t.app).get('/callbacks/inbox?status=waiting'), 400, 'validation_failed');
    expectError(await request(t.app.getHttpServer()).get('/callbacks/inbox'), 401, 'unauthorized');
    expect(await operations(t.app, 'IQ-1')).toEqual(['IQ-1:0:stake_debit=10.00']);

    // The cause is fixed: replay (twice).
    await remove();
    const id = q[0].id as string;
    const first = await ops(t.app).post(`/callbacks/quarantine/${id}/replay`, {});
    expect({
      status: first.status,
      outcome: first.body.outcome,
      count: first.body.entry.replayCount,
    }).toEqual({
      status: 200,
      outcome: 'processed',
      count: 1,
    });
    const second = await ops(t.app).post(`/callbacks/quarantine/${id}/replay`, {});
    expect({
      status: second.status,
      outcome: second.body.outcome,
      count: second.body.entry.replayCount,
      replayOutcome: second.body.entry.replayOutcome,
    }).toEqual({ status: 200, outcome: 'duplicate', count: 2, replayOutcome: 'duplicate' });
    expect(await operations(t.app, 'IQ-1')).toEqual([
      'IQ-1:0:final_credit=40.00',
      'IQ-1:0:stake_debit=10.00',
    ]);
    expect(await balance(t.app, 'iq-p1')).toBe('130.00');
    expect((await inboxRows(t, 'iq-b1')).map((r) => [r.status, r.outcome])).toEqual([['done', 'processed']]);
    const { rows: att } = await t.db.query(
      `SELECT request_id, outcome, http_status FROM delivery_attempts WHERE batch_id = 'iq-b1' ORDER BY id`,
    );
    expect(
      att.map((r) => `${r.request_id.replace(/^(?!quarantine).*/, 'sender')} ${r.outcome} ${r.http_status}`),
    ).toEqual([
      'sender accepted 200',
      `quarantine-replay:${id} processed 200`,
      `quarantine-replay:${id} duplicate 200`,
    ]);
    // A redelivery by the sender now is a duplicate too.
    expect((await deliver(t.app, body)).body).toEqual({ success: true, processed: 1, duplicate: true });
  });

  it('a value the database cannot hold (SQLSTATE 22003) is quarantined at its first failure, not retried; its replay is 422 until fixed', async () => {
    await deposit(t.app, 'iq-p3', '100.00');
    await register(t.app, 'IQ-3', 'iq-p3', '10.00');
    const remove = await injectTrigger(
      t.db,
      'iq_overflow_3',
      'callback_batches',
      `IF NEW.batch_id = 'iq-b3' THEN RAISE EXCEPTION 'injected overflow' USING ERRCODE = '22003'; END IF;`,
    );
    try {
      const body = JSON.stringify(batchOf('iq-b3', { code: 'IQ-3', status: 2, realWin: '40.00' }));
      expect((await deliver(t.app, body)).status).toBe(200);
      await eventually(
        async () => (await inboxRows(t, 'iq-b3'))[0].status === 'quarantined',
        'the quarantine',
      );
      const { rows: inbox } = await t.db.query(
        `SELECT attempts, outcome, last_error FROM callback_inbox WHERE batch_id = 'iq-b3'`,
      );
      expect(inbox).toEqual([{ attempts: 1, outcome: 'failed', last_error: '[22003] injected overflow' }]);
      const { rows: q } = await t.db.query(
        `SELECT id, reason, details FROM quarantined_bodies WHERE batch_id = 'iq-b3'`,
      );
      expect(q.map((r) => [r.reason, r.details])).toEqual([
        ['validation_failed', { attempts: 1, lastError: '[22003] injected overflow' }],
      ]);
      const id = q[0].id as string;
      expectError(await ops(t.app).post(`/callbacks/quarantine/${id}/replay`, {}), 422, 'replay_rejected');
      expect(await operations(t.app, 'IQ-3')).toEqual(['IQ-3:0:stake_debit=10.00']);
      await remove();
      const replay = await ops(t.app).post(`/callbacks/quarantine/${id}/replay`, {});
      expect({ status: replay.status, outcome: replay.body.outcome }).toEqual({
        status: 200,
        outcome: 'processed',
      });
      expect(await operations(t.app, 'IQ-3')).toEqual([
        'IQ-3:0:final_credit=40.00',
        'IQ-3:0:stake_debit=10.00',
      ]);
      expect(await balance(t.app, 'iq-p3')).toBe('130.00');
    } finally {
      await remove();
    }
  });
});

describe('inline mode with batches left in the inbox', () => {
  const t = useTestApp({ CALLBACK_MODE: 'inline', INBOX_POLL_INTERVAL_MS: '20' });
  beforeAll(async () => {
    await deposit(t.app, 'il-p1', '50.00');
  });

  it('applies pending inbox rows at start-up (a switch back from inbox mode loses nothing)', async () => {
    await register(t.app, 'IL-1', 'il-p1', '5.00');
    const body = JSON.stringify(batchOf('il-b1', { code: 'IL-1', status: 2, realWin: '15.00' }));
    // As an inbox-mode process leaves it: accepted, not applied yet.
    await inboxRow(t, body);
    // An inline-mode process started now finds the row and drains the inbox.
    const replica = await startApp(t.config);
    try {
      await drained(t);
    } finally {
      await replica.close();
    }
    expect((await inboxRows(t, 'il-b1')).map((r) => [r.status, r.outcome])).toEqual([['done', 'processed']]);
    expect(await operations(t.app, 'IL-1')).toEqual(['IL-1:0:final_credit=15.00', 'IL-1:0:stake_debit=5.00']);
    expect((await deliver(t.app, body)).body).toEqual({ success: true, processed: 1, duplicate: true });
  });
  it('an inline batch of a coupon with a pending inbox row queues behind it (an inbox replica on the same database): applied in arrival order', async () => {
    await deposit(t.app, 'il-p2', '100.00');
    await register(t.app, 'IL-2', 'il-p2', '10.00');
    expect(
      (await deliver(t.app, batchOf('il2-a', { code: 'IL-2', status: 2, realWin: '50.00' }))).status,
    ).toBe(200);
    expect(await balance(t.app, 'il-p2')).toBe('140.00');
    // An inbox replica accepted a recalculation (no realWin) and has not applied it yet.
    const recalculation = JSON.stringify(batchOf('il2-b', { code: 'IL-2', status: 15 }));
    await inboxRow(t, recalculation);
    // The new result arrives at this inline process: it must not overtake the recalculation.
    const res = await deliver(t.app, batchOf('il2-c', { code: 'IL-2', status: 2, realWin: '30.00' }));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, processed: 1 });
    await drained(t);
    expect((await inboxRows(t, 'il2-c')).map((r) => [r.status, r.outcome])).toEqual([['done', 'processed']]);
    expect(await balance(t.app, 'il-p2')).toBe('120.00');
    expect(await operations(t.app, 'IL-2')).toEqual([
      'IL-2:0:final_credit=50.00',
      'IL-2:0:stake_debit=10.00',
      'IL-2:1:final_credit=30.00',
      'IL-2:1:recalculation_debit=50.00',
    ]);
    const coupon = await ops(t.app).get('/coupons/IL-2');
    expect(coupon.body.needsReview).toBe(false);
  });

  it('a redelivery of a batch quarantined in the inbox is a duplicate here too, not applied (only its replay applies it); another body is 409', async () => {
    await deposit(t.app, 'il-p5', '20.00');
    await register(t.app, 'IL-5', 'il-p5', '5.00');
    const body = JSON.stringify(batchOf('il5-a', { code: 'IL-5', status: 2, realWin: '25.00' }));
    // An inbox replica accepted it, failed to apply it and moved it to the quarantine.
    await inboxRow(t, body, '1 hour');
    await t.db.query(
      `UPDATE callback_inbox SET status = 'quarantined', outcome = 'failed', finished_at = now() WHERE batch_id = 'il5-a'`,
    );
    const res = await deliver(t.app, body);
    expect({ status: res.status, body: res.body }).toEqual({
      status: 200,
      body: { success: true, processed: 1, duplicate: true },
    });
    expectError(
      await deliver(t.app, batchOf('il5-a', { code: 'IL-5', status: 2, realWin: '26.00' })),
      409,
      'batch_conflict',
    );
    expect(await rowsOfBatch(t.db, 'il5-a')).toEqual({ batches: 0, snapshots: 0, operations: 0 });
    expect(await operations(t.app, 'IL-5')).toEqual(['IL-5:0:stake_debit=5.00']);
    expect(await balance(t.app, 'il-p5')).toBe('15.00');
  });

  it('one new batch id with two bodies, one to this inline process (its transaction open) and one to an inbox replica: 200 and 409, never two 200s', async () => {
    expect((await deliver(t.app, batchOf('il4-a', { code: 'IL-4', status: 1 }))).status).toBe(200);
    const replica = await startApp({ ...t.config, inbox: { ...t.config.inbox, callbackMode: 'inbox' } });
    const holder = await t.db.connect();
    try {
      // The inline delivery claims its batch id, then waits on the coupon row held here.
      await holder.query('BEGIN');
      await holder.query(`SELECT 1 FROM coupons WHERE coupon_code = 'IL-4' FOR UPDATE`);
      const inline = deliver(t.app, batchOf('il4-b', { code: 'IL-4', status: 2, realWin: '4.00' })).then(
        (r) => r,
      );
      await eventually(
        async () => (await lockWaiters(t.db, { statement: '%FOR UPDATE%' })).length > 0,
        'the inline delivery to wait on the coupon lock',
      );
      // The other body of that batch id reaches the inbox replica meanwhile: it waits for the
      // inline transaction, then finds the claim.
      const other = deliver(replica, batchOf('il4-b', { code: 'IL-4', status: 1 })).then((r) => r);
      await sleep(300);
      await holder.query('ROLLBACK');
      const [a, b] = await Promise.all([inline, other]);
      expect([a.status, a.body]).toEqual([200, { success: true, processed: 1 }]);
      expectError(b, 409, 'batch_conflict');
    } finally {
      holder.release();
      await replica.close();
    }
    expect((await inboxRows(t, 'il4-b')).length).toBe(0);
    expect((await ops(t.app).get('/coupons/IL-4')).body).toMatchObject({ status: 2, realWin: '4.00' });
  });

  it('a batch id pending in the inbox with another body: 409 from this inline process, the pending body applied', async () => {
    const first = JSON.stringify(batchOf('il3-x', { code: 'IL-3', status: 1 }));
    await inboxRow(t, first);
    const other = await deliver(t.app, batchOf('il3-x', { code: 'IL-3', status: 2, realWin: '9.00' }));
    expectError(other, 409, 'batch_conflict');
    await drained(t);
    expect((await inboxRows(t, 'il3-x')).map((r) => [r.status, r.outcome])).toEqual([['done', 'processed']]);
    const { rows } = await t.db.query(`SELECT status FROM coupons WHERE coupon_code = 'IL-3'`);
    expect(rows).toEqual([{ status: 1 }]);
  });
});
