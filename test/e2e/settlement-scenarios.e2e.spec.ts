import {
  balance,
  batchOf,
  deliver,
  deposit,
  operations,
  ops,
  register,
  useTestApp,
} from '../support/test-app.js';

// The behaviour of ../shared/conformance/scenarios/*.json, as the project's own tests
// (CONTRACT §4–§7, §10). Exact balances, operation keys and status codes.
describe('settlement scenarios (CONTRACT §6, §7)', () => {
  const t = useTestApp();

  it('01 a single coupon wins once', async () => {
    await deposit(t.app, 'p01', '100.00');
    await register(t.app, 'C01', 'p01', '10.00');
    expect(await balance(t.app, 'p01')).toBe('90.00');
    const res = await deliver(t.app, batchOf('b01-1', { code: 'C01', status: 2, realWin: '25.50' }));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, processed: 1 });
    const coupon = (await ops(t.app).get('/coupons/C01')).body;
    expect(coupon).toMatchObject({
      status: 2,
      realWin: '25.50',
      settlementGeneration: 0,
      needsReview: false,
      accountId: 'p01',
    });
    expect(await operations(t.app, 'C01')).toEqual(['C01:0:final_credit=25.50', 'C01:0:stake_debit=10.00']);
    expect(await balance(t.app, 'p01')).toBe('115.50');
  });

  it('02 repeated and concurrent deliveries of one batch credit once', async () => {
    await deposit(t.app, 'p02', '100.00');
    await register(t.app, 'C02', 'p02', '10.00');
    const batch = batchOf('b02-1', { code: 'C02', status: 2, realWin: '30.00' });
    expect((await deliver(t.app, batch)).body).toEqual({ success: true, processed: 1 });
    expect((await deliver(t.app, batch)).body).toEqual({ success: true, processed: 1, duplicate: true });
    const parallel = await Promise.all(Array.from({ length: 10 }, () => deliver(t.app, batch)));
    expect(parallel.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(await operations(t.app, 'C02')).toEqual(['C02:0:final_credit=30.00', 'C02:0:stake_debit=10.00']);
    expect(await balance(t.app, 'p02')).toBe('120.00');
    const attempts = await t.db.query(
      `SELECT outcome, count(*)::int AS n FROM delivery_attempts WHERE batch_id = 'b02-1' GROUP BY outcome ORDER BY outcome`,
    );
    expect(attempts.rows).toEqual([
      { outcome: 'duplicate', n: 11 },
      { outcome: 'processed', n: 1 },
    ]);
  });

  it('02b ten identical first deliveries at once: exactly one credit', async () => {
    await deposit(t.app, 'p02b', '10.00');
    await register(t.app, 'C02B', 'p02b', '10.00');
    const batch = batchOf('b02b-1', { code: 'C02B', status: 2, realWin: '77.77' });
    const parallel = await Promise.all(Array.from({ length: 10 }, () => deliver(t.app, batch)));
    expect(parallel.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(parallel.filter((r) => r.body.duplicate !== true)).toHaveLength(1);
    expect(await operations(t.app, 'C02B')).toEqual([
      'C02B:0:final_credit=77.77',
      'C02B:0:stake_debit=10.00',
    ]);
    expect(await balance(t.app, 'p02b')).toBe('77.77');
    const entries = await t.db.query(
      `SELECT count(*)::int AS n FROM ledger_entries e JOIN financial_operations o ON o.id = e.operation_id WHERE o.coupon_code = 'C02B'`,
    );
    expect(entries.rows[0].n).toBe(4);
  });

  it('03 intermediate snapshots update bets; the final result pays once', async () => {
    await deposit(t.app, 'p03', '50.00');
    await register(t.app, 'C03', 'p03', '5.00');
    const ev = (s1: number, s2: number, s3: number) => [
      { uuid: 'e1', status: s1 },
      { uuid: 'e2', status: s2 },
      { uuid: 'e3', status: s3 },
    ];
    await deliver(t.app, batchOf('b03-1', { code: 'C03', status: 1, events: ev(2, 0, 0) })).expect(200);
    let coupon = (await ops(t.app).get('/coupons/C03')).body;
    expect(coupon.status).toBe(1);
    expect(
      coupon.events.map((e: { uuid: string; status: number }) => `${e.uuid}:${e.status}`).sort(),
    ).toEqual(['e1:2', 'e2:0', 'e3:0']);
    await deliver(t.app, batchOf('b03-2', { code: 'C03', status: 1, events: ev(2, 2, 0) })).expect(200);
    await deliver(
      t.app,
      batchOf('b03-3', { code: 'C03', status: 2, realWin: '42.00', events: ev(2, 2, 2) }),
    ).expect(200);
    await deliver(
      t.app,
      batchOf('b03-4', { code: 'C03', status: 2, realWin: '42.00', events: ev(2, 2, 2) }),
    ).expect(200);
    coupon = (await ops(t.app).get('/coupons/C03')).body;
    expect(coupon).toMatchObject({ status: 2, settlementGeneration: 0 });
    expect(coupon.events).toHaveLength(3);
    expect(await operations(t.app, 'C03')).toEqual(['C03:0:final_credit=42.00', 'C03:0:stake_debit=5.00']);
    expect(await balance(t.app, 'p03')).toBe('87.00');
    const snapshots = await t.db.query(
      `SELECT transition FROM coupon_snapshots WHERE coupon_code = 'C03' ORDER BY id`,
    );
    expect(snapshots.rows.map((r) => r.transition)).toEqual([
      'pending_applied',
      'pending_applied',
      'settled',
      'same_result',
    ]);
  });

  it('04 status 15 debits the earlier win once; the next result settles generation 1', async () => {
    await deposit(t.app, 'p04', '100.00');
    await register(t.app, 'C04', 'p04', '10.00');
    await deliver(t.app, batchOf('b04-1', { code: 'C04', status: 2, realWin: '50.00' })).expect(200);
    expect(await balance(t.app, 'p04')).toBe('140.00');
    await deliver(t.app, batchOf('b04-2', { code: 'C04', status: 15 })).expect(200);
    expect((await ops(t.app).get('/coupons/C04')).body).toMatchObject({
      status: 15,
      settlementGeneration: 1,
    });
    expect(await balance(t.app, 'p04')).toBe('90.00');
    await deliver(t.app, batchOf('b04-3', { code: 'C04', status: 15 })).expect(200);
    await deliver(t.app, batchOf('b04-2', { code: 'C04', status: 15 })).expect(200);
    await deliver(t.app, batchOf('b04-4', { code: 'C04', status: 4, realWin: '0' })).expect(200);
    expect((await ops(t.app).get('/coupons/C04')).body).toMatchObject({ status: 4, settlementGeneration: 1 });
    expect(await operations(t.app, 'C04')).toEqual([
      'C04:0:final_credit=50.00',
      'C04:0:stake_debit=10.00',
      'C04:1:recalculation_debit=50.00',
    ]);
    expect(await balance(t.app, 'p04')).toBe('90.00');
  });

  it('05 status 15 carrying the new realWin settles generation 1 at once', async () => {
    await deposit(t.app, 'p05', '100.00');
    await register(t.app, 'C05', 'p05', '10.00');
    await deliver(t.app, batchOf('b05-1', { code: 'C05', status: 2, realWin: '50.00' })).expect(200);
    await deliver(t.app, batchOf('b05-2', { code: 'C05', status: 15, realWin: '20.00' })).expect(200);
    await deliver(t.app, batchOf('b05-3', { code: 'C05', status: 2, realWin: '20.00' })).expect(200);
    expect((await ops(t.app).get('/coupons/C05')).body).toMatchObject({
      settlementGeneration: 1,
      needsReview: false,
      recalculationOpen: false,
    });
    expect(await operations(t.app, 'C05')).toEqual([
      'C05:0:final_credit=50.00',
      'C05:0:stake_debit=10.00',
      'C05:1:final_credit=20.00',
      'C05:1:recalculation_debit=50.00',
    ]);
    expect(await balance(t.app, 'p05')).toBe('110.00');
  });

  it('06 every coupon of a batch is processed', async () => {
    await deposit(t.app, 'p06', '100.00');
    await register(t.app, 'C06-1', 'p06', '1.00');
    await register(t.app, 'C06-2', 'p06', '2.00');
    await register(t.app, 'C06-3', 'p06', '3.00');
    expect(await balance(t.app, 'p06')).toBe('94.00');
    const res = await deliver(t.app, {
      batchId: 'b06-1',
      couponCount: 3,
      coupons: [
        { coupon_code: 'C06-3', status: 3, realWin: 3, events: [{ uuid: 'x', status: 3 }] },
        { coupon_code: 'C06-1', status: 2, realWin: '10.00', events: [{ uuid: 'x', status: 2 }] },
        { coupon_code: 'C06-2', status: 4, realWin: '0', events: [{ uuid: 'x', status: 4 }] },
      ],
    });
    expect(res.body).toEqual({ success: true, processed: 3 });
    expect(await operations(t.app, 'C06-1')).toEqual([
      'C06-1:0:final_credit=10.00',
      'C06-1:0:stake_debit=1.00',
    ]);
    expect(await operations(t.app, 'C06-2')).toEqual(['C06-2:0:stake_debit=2.00']);
    expect(await operations(t.app, 'C06-3')).toEqual([
      'C06-3:0:final_credit=3.00',
      'C06-3:0:stake_debit=3.00',
    ]);
    expect(await balance(t.app, 'p06')).toBe('107.00');
  });

  it('08 an unknown status is stored and flagged, no money', async () => {
    await deposit(t.app, 'p08', '100.00');
    await register(t.app, 'C08', 'p08', '10.00');
    await deliver(t.app, batchOf('b08-1', { code: 'C08', status: 99, realWin: '500.00' })).expect(200);
    expect((await ops(t.app).get('/coupons/C08')).body).toMatchObject({
      status: 99,
      needsReview: true,
      reviewReason: 'unknown_status',
    });
    expect(await operations(t.app, 'C08')).toEqual(['C08:0:stake_debit=10.00']);
    expect(await balance(t.app, 'p08')).toBe('90.00');
  });

  it('09 a result for an unregistered coupon is applied once at registration', async () => {
    await deliver(t.app, batchOf('b09-1', { code: 'C09', status: 2, realWin: '40.00' })).expect(200);
    expect((await ops(t.app).get('/coupons/C09')).body).toMatchObject({
      status: 2,
      accountId: null,
      unallocated: true,
      operations: [],
    });
    await deposit(t.app, 'p09', '100.00');
    expect((await register(t.app, 'C09', 'p09', '10.00')).status).toBe(201);
    expect(await operations(t.app, 'C09')).toEqual(['C09:0:final_credit=40.00', 'C09:0:stake_debit=10.00']);
    await deliver(t.app, batchOf('b09-1', { code: 'C09', status: 2, realWin: '40.00' })).expect(200);
    expect((await register(t.app, 'C09', 'p09', '10.00')).status).toBe(200);
    expect(await balance(t.app, 'p09')).toBe('130.00');
  });

  it('09b a recalculated unregistered coupon replays every generation at registration', async () => {
    await deliver(t.app, batchOf('b09b-1', { code: 'C09B', status: 2, realWin: '40.00' })).expect(200);
    await deliver(t.app, batchOf('b09b-2', { code: 'C09B', status: 15, realWin: '15.00' })).expect(200);
    await deposit(t.app, 'p09b', '10.00');
    await register(t.app, 'C09B', 'p09b', '10.00');
    expect(await operations(t.app, 'C09B')).toEqual([
      'C09B:0:final_credit=40.00',
      'C09B:0:stake_debit=10.00',
      'C09B:1:final_credit=15.00',
      'C09B:1:recalculation_debit=40.00',
    ]);
    expect(await balance(t.app, 'p09b')).toBe('15.00');
  });

  it('10 a different result without status 15 is not paid, only flagged', async () => {
    await deposit(t.app, 'p10', '100.00');
    await register(t.app, 'C10', 'p10', '10.00');
    await deliver(t.app, batchOf('b10-1', { code: 'C10', status: 2, realWin: '50.00' })).expect(200);
    await deliver(t.app, batchOf('b10-2', { code: 'C10', status: 2, realWin: '60.00' })).expect(200);
    expect((await ops(t.app).get('/coupons/C10')).body).toMatchObject({
      needsReview: true,
      reviewReason: 'conflicting_result',
      settlementGeneration: 0,
      realWin: '50.00',
    });
    expect(await operations(t.app, 'C10')).toEqual(['C10:0:final_credit=50.00', 'C10:0:stake_debit=10.00']);
    expect(await balance(t.app, 'p10')).toBe('140.00');
  });

  it('11 an intermediate snapshot after the final result changes nothing', async () => {
    await deposit(t.app, 'p11', '100.00');
    await register(t.app, 'C11', 'p11', '10.00');
    await deliver(
      t.app,
      batchOf('b11-1', { code: 'C11', status: 2, realWin: '50.00', events: [{ uuid: 'e', status: 2 }] }),
    ).expect(200);
    await deliver(
      t.app,
      batchOf('b11-2', { code: 'C11', status: 1, events: [{ uuid: 'e', status: 0 }] }),
    ).expect(200);
    const coupon = (await ops(t.app).get('/coupons/C11')).body;
    expect(coupon).toMatchObject({ status: 2, realWin: '50.00', needsReview: false });
    expect(coupon.events).toEqual([{ uuid: 'e', status: 2 }]);
    expect(await operations(t.app, 'C11')).toEqual(['C11:0:final_credit=50.00', 'C11:0:stake_debit=10.00']);
    expect(await balance(t.app, 'p11')).toBe('140.00');
  });

  it('coupon codes outside the BMP are matched to their own state (JS and SQL orders differ)', async () => {
    // UTF-16 puts the surrogate pair of U+1F600 before U+FF01; bytewise (COLLATE "C") it comes after.
    await deposit(t.app, 'pu', '10.00');
    await register(t.app, 'U\u{1F600}', 'pu', '1.00');
    await register(t.app, 'U\uFF01', 'pu', '1.00');
    const res = await deliver(t.app, {
      batchId: 'b-unicode',
      couponCount: 2,
      coupons: [
        { coupon_code: 'U\u{1F600}', status: 2, realWin: '7.00', events: [{ uuid: 'e', status: 2 }] },
        { coupon_code: 'U\uFF01', status: 4, realWin: '0', events: [{ uuid: 'e', status: 4 }] },
      ],
    });
    expect(res.status).toBe(200);
    expect((await ops(t.app).get(`/coupons/${encodeURIComponent('U\u{1F600}')}`)).body).toMatchObject({
      status: 2,
      realWin: '7.00',
    });
    expect((await ops(t.app).get(`/coupons/${encodeURIComponent('U\uFF01')}`)).body).toMatchObject({
      status: 4,
      realWin: '0.00',
    });
    expect(await balance(t.app, 'pu')).toBe('15.00');
  });

  it('the ledger balances: every operation sums to zero, balances equal their entries', async () => {
    const perOp = await t.db.query(
      `SELECT operation_id FROM ledger_entries GROUP BY operation_id HAVING sum(amount) <> 0 OR count(*) <> 2`,
    );
    expect(perOp.rowCount).toBe(0);
    const total = await t.db.query(`SELECT coalesce(sum(amount), 0)::text AS s FROM ledger_entries`);
    expect(total.rows[0].s).toBe('0.00000000');
    const drift = await t.db.query(
      `SELECT a.id FROM accounts a LEFT JOIN ledger_entries e ON e.account_id = a.id GROUP BY a.id, a.balance HAVING a.balance <> coalesce(sum(e.amount), 0)`,
    );
    expect(drift.rowCount).toBe(0);
  });

  it('§7 invariant: for every registered settled coupon, callback credits minus debits = its settled realWin', async () => {
    const { rows } = await t.db.query(
      `SELECT c.coupon_code, c.settled_amount::text AS settled,
              coalesce(sum(CASE o.type WHEN 'final_credit' THEN o.amount WHEN 'recalculation_debit' THEN -o.amount END), 0)::numeric(26,8)::text AS net
       FROM coupons c LEFT JOIN financial_operations o ON o.coupon_code = c.coupon_code
       WHERE c.account_id IS NOT NULL AND c.generation_settled
       GROUP BY c.coupon_code, c.settled_amount ORDER BY c.coupon_code`,
    );
    expect(rows.length).toBeGreaterThanOrEqual(10);
    for (const r of rows) expect(`${r.coupon_code}:${r.net}`).toBe(`${r.coupon_code}:${r.settled}`);
  });
});
