import request from 'supertest';
import { batchOf, deliver, deposit, expectError, ops, register, useTestApp } from '../support/test-app.js';

// Issue 30, the operator console's lists (docs/api.md#operator-console-api): coupons by flag and
// time, a coupon's snapshot history with the operations each posted, accounts by prefix, and an
// account's statement with the balance after each entry, as JSON pages and as CSV.

describe('GET /coupons, /coupons/{coupon_code}/history (issue 30)', () => {
  const t = useTestApp();

  beforeAll(async () => {
    await deposit(t.app, 'cl-p1', '100.00');
    await register(t.app, 'CL-1', 'cl-p1', '10.00');
    await register(t.app, 'CL-2', 'cl-p1', '10.00');
    await register(t.app, 'CL-3', 'cl-p1', '10.00');
    // CL-1 settled, then a conflicting final result: flagged.
    expect(
      (await deliver(t.app, batchOf('cl-b1', { code: 'CL-1', status: 2, realWin: '25.50' }))).status,
    ).toBe(200);
    expect(
      (await deliver(t.app, batchOf('cl-b2', { code: 'CL-1', status: 2, realWin: '30.00' }))).status,
    ).toBe(200);
    expect((await deliver(t.app, batchOf('cl-b3', { code: 'CL-2', status: 4, realWin: '0' }))).status).toBe(
      200,
    );
    // CL-9: settled before registration (unallocated).
    expect(
      (await deliver(t.app, batchOf('cl-b4', { code: 'CL-9', status: 2, realWin: '5.00' }))).status,
    ).toBe(200);
  });

  const codes = (res: request.Response) =>
    (res.body.items as { coupon_code: string }[]).map((c) => c.coupon_code);

  it('lists coupons most recently changed first, with exact summaries', async () => {
    const res = await ops(t.app, 'reader').get('/coupons');
    expect(res.status).toBe(200);
    expect(codes(res)).toEqual(['CL-9', 'CL-2', 'CL-1', 'CL-3']);
    expect(res.body.nextCursor).toBeNull();
    const flagged = res.body.items[2];
    expect(flagged).toEqual({
      coupon_code: 'CL-1',
      accountId: 'cl-p1',
      stake: '10.00',
      currency: 'EUR',
      status: 2,
      realWin: '25.50',
      settlementGeneration: 0,
      settled: true,
      recalculationOpen: false,
      needsReview: true,
      reviewReason: 'conflicting_result',
      unallocated: false,
      lastBatchId: 'cl-b2',
      createdAt: flagged.createdAt,
      updatedAt: flagged.updatedAt,
    });
  });

  it('filters by flag, reason, unallocated, status, currency and time', async () => {
    const get = async (query: string) => codes(await ops(t.app, 'reader').get(`/coupons?${query}`));
    expect(await get('needsReview=true')).toEqual(['CL-1']);
    expect(await get('needsReview=true&reviewReason=conflicting_result')).toEqual(['CL-1']);
    expect(await get('reviewReason=amount_precision')).toEqual([]);
    expect(await get('unallocated=true')).toEqual(['CL-9']);
    expect(await get('unallocated=false&status=4')).toEqual(['CL-2']);
    expect(await get('currency=EUR&needsReview=false')).toEqual(['CL-2', 'CL-3']);
    expect(await get('updatedFrom=2999-01-01T00:00:00Z')).toEqual([]);
    expect(await get('updatedTo=2000-01-01T00:00:00Z')).toEqual([]);
  });

  it('pages: exactly one page, cursor to the end, cursor past the end, bad cursor and limits', async () => {
    const page1 = await ops(t.app, 'reader').get('/coupons?limit=3');
    expect(codes(page1)).toEqual(['CL-9', 'CL-2', 'CL-1']);
    expect(typeof page1.body.nextCursor).toBe('string');
    const page2 = await ops(t.app, 'reader').get(`/coupons?limit=3&cursor=${page1.body.nextCursor}`);
    expect({ items: codes(page2), next: page2.body.nextCursor }).toEqual({ items: ['CL-3'], next: null });
    // Exactly one page: no cursor.
    expect((await ops(t.app, 'reader').get('/coupons?limit=4')).body.nextCursor).toBeNull();
    // Past the end: a cursor older than every row gives an empty page.
    const pastEnd = Buffer.from(JSON.stringify(['2000-01-01T00:00:00.000000Z', 'A'])).toString('base64url');
    const beyond = await ops(t.app, 'reader').get(`/coupons?limit=1&cursor=${pastEnd}`);
    expect(beyond.body).toEqual({ items: [], nextCursor: null });
    for (const bad of [
      'cursor=abc',
      'cursor=12',
      'cursor=WyJ4Il0',
      'limit=0',
      'limit=201',
      'limit=1.5',
      'needsReview=yes',
    ])
      expectError(await ops(t.app, 'reader').get(`/coupons?${bad}`), 400, 'validation_failed');
    expect((await ops(t.app, 'reader').get('/coupons?limit=200')).status).toBe(200);
  });

  it('history: every snapshot newest first, with its transition and the operations it posted', async () => {
    const res = await ops(t.app, 'reader').get('/coupons/CL-1/history');
    expect(res.status).toBe(200);
    const items = res.body.items as Record<string, unknown>[];
    expect(res.body).toEqual({
      coupon_code: 'CL-1',
      items: [
        {
          id: items[0].id,
          batchId: 'cl-b2',
          receivedAt: items[0].receivedAt,
          status: 2,
          realWin: '30.00',
          transition: 'conflicting_result',
          generation: 0,
          applied: false,
          actor: null,
          decidedOperations: [],
          operations: [],
        },
        {
          id: items[1].id,
          batchId: 'cl-b1',
          receivedAt: items[1].receivedAt,
          status: 2,
          realWin: '25.50',
          transition: 'settled',
          generation: 0,
          applied: true,
          actor: null,
          decidedOperations: [{ type: 'final_credit', generation: 0, amount: '25.50' }],
          operations: [
            {
              key: 'CL-1:0:final_credit',
              type: 'final_credit',
              generation: 0,
              amount: '25.50',
              createdAt: (items[1].operations as { createdAt: string }[])[0].createdAt,
            },
          ],
        },
      ],
      nextCursor: null,
      expiredBefore: null,
    });
    const one = await ops(t.app, 'reader').get('/coupons/CL-1/history?limit=1');
    expect(one.body.nextCursor).toBe(items[0].id);
    const rest = await ops(t.app, 'reader').get(
      `/coupons/CL-1/history?limit=1&cursor=${one.body.nextCursor}`,
    );
    expect({ ids: rest.body.items.map((i: { id: string }) => i.id), next: rest.body.nextCursor }).toEqual({
      ids: [items[1].id],
      next: null,
    });
    // The unallocated coupon's operations were decided, and are posted once it is registered.
    const before = await ops(t.app, 'reader').get('/coupons/CL-9/history');
    expect(before.body.items[0].decidedOperations).toEqual([
      { type: 'final_credit', generation: 0, amount: '5.00' },
    ]);
    expect(before.body.items[0].operations).toEqual([]);
    expectError(await ops(t.app, 'reader').get('/coupons/CL-404/history'), 404, 'not_found');
    expectError(await ops(t.app, 'reader').get('/coupons/CL-1/history?cursor=x'), 400, 'validation_failed');
  });
});

describe('GET /accounts, /accounts/{id}/statement (issue 30)', () => {
  const t = useTestApp();
  const FORMULA = '=SUM(1,2)"x';

  beforeAll(async () => {
    await deposit(t.app, 'st-p1', '100.00', 'st-dep-1');
    await register(t.app, 'ST-1', 'st-p1', '10.00');
    expect(
      (await deliver(t.app, batchOf('st-b1', { code: 'ST-1', status: 2, realWin: '25.50' }))).status,
    ).toBe(200);
    expect(
      (await deliver(t.app, batchOf('st-b2', { code: 'ST-1', status: 15, realWin: '12.00' }))).status,
    ).toBe(200);
    const withdrawal = await ops(t.app, 'cashier').post(
      '/accounts/st-p1/adjustments',
      { amount: '-5.00', currency: 'EUR', reason: 'cash out' },
      { 'idempotency-key': 'st-wd-1' },
    );
    expect(withdrawal.status).toBe(201);
    await register(t.app, FORMULA, 'st-p1', '0.01');
    await deposit(t.app, 'st-p2', '1.00', 'st-dep-2');
    await deposit(t.app, 'other-p3', '1.00', 'st-dep-3');
  });

  const statement = (query = '') => ops(t.app, 'reader').get(`/accounts/st-p1/statement${query}`);

  it('every entry newest first with its signed amount and the balance after it, to the minor unit', async () => {
    const res = await statement();
    expect(res.status).toBe(200);
    expect({ accountId: res.body.accountId, currency: res.body.currency, balance: res.body.balance }).toEqual(
      {
        accountId: 'st-p1',
        currency: 'EUR',
        balance: '96.99',
      },
    );
    expect(
      (res.body.items as Record<string, string>[]).map((e) => [
        e.operationKey,
        e.type,
        e.couponCode,
        e.amount,
        e.balanceAfter,
      ]),
    ).toEqual([
      [`${FORMULA}:0:stake_debit`, 'stake_debit', FORMULA, '-0.01', '96.99'],
      ['adjustment:st-wd-1', 'withdrawal', null, '-5.00', '97.00'],
      ['ST-1:1:final_credit', 'final_credit', 'ST-1', '12.00', '102.00'],
      ['ST-1:1:recalculation_debit', 'recalculation_debit', 'ST-1', '-25.50', '90.00'],
      ['ST-1:0:final_credit', 'final_credit', 'ST-1', '25.50', '115.50'],
      ['ST-1:0:stake_debit', 'stake_debit', 'ST-1', '-10.00', '90.00'],
      ['adjustment:st-dep-1', 'deposit', null, '100.00', '100.00'],
    ]);
    expect(res.body.nextCursor).toBeNull();
    // Pages agree with the whole: the balance after an entry does not depend on the page.
    const ids = (res.body.items as { entryId: string }[]).map((e) => e.entryId);
    const page = await statement(`?limit=2&cursor=${ids[2]}`);
    expect(page.body.items.map((e: { balanceAfter: string }) => e.balanceAfter)).toEqual(['90.00', '115.50']);
    expect(page.body.nextCursor).toBe(ids[4]);
    expect((await statement(`?cursor=${ids[6]}`)).body.items).toEqual([]);
    const { rows } = await t.db.query<{ at: string }>(
      `SELECT created_at AS at FROM ledger_entries WHERE id = $1`,
      [ids[5]],
    );
    const range = await statement(
      `?from=${encodeURIComponent(new Date(rows[0].at).toISOString())}&limit=200`,
    );
    expect(range.body.items.map((e: { entryId: string }) => e.entryId)).toEqual(ids.slice(0, 6));
  });

  it('CSV: the same rows, all of the range, RFC 4180 with formula-like text neutralised', async () => {
    const json = (await statement()).body.items as Record<string, string | null>[];
    const lines = json.map((e) =>
      [
        e.entryId,
        e.at,
        e.operationKey === `${FORMULA}:0:stake_debit` ? `"'=SUM(1,2)""x:0:stake_debit"` : e.operationKey,
        e.type,
        e.couponCode === FORMULA ? `"'=SUM(1,2)""x"` : (e.couponCode ?? ''),
        e.amount,
        e.balanceAfter,
        e.currency,
      ].join(','),
    );
    const expected =
      ['entryId,at,operationKey,type,couponCode,amount,balanceAfter,currency', ...lines].join('\r\n') +
      '\r\n';
    for (const res of [
      await statement('?format=csv&limit=1'),
      await ops(t.app, 'reader').get('/accounts/st-p1/statement').set('accept', 'text/csv'),
    ]) {
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
      expect(res.headers['content-disposition']).toBe('attachment; filename="statement-st-p1.csv"');
      expect(res.text).toBe(expected);
    }
    const empty = await statement('?format=csv&from=2999-01-01T00:00:00Z');
    expect(empty.text).toBe('entryId,at,operationKey,type,couponCode,amount,balanceAfter,currency\r\n');
    expectError(await ops(t.app, 'reader').get('/accounts/nobody/statement?format=csv'), 404, 'not_found');
    expectError(await ops(t.app, 'reader').get('/accounts/house:EUR/statement'), 404, 'not_found');
    expectError(await statement('?format=xml'), 400, 'validation_failed');
  });

  it('accounts by id prefix, keyset-paginated', async () => {
    const ids = async (query: string) =>
      ((await ops(t.app, 'reader').get(`/accounts${query}`)).body.items as { id: string }[]).map((a) => a.id);
    expect(await ids('?q=st-')).toEqual(['st-p1', 'st-p2']);
    expect(await ids('?q=nobody')).toEqual([]);
    const all = await ops(t.app, 'reader').get('/accounts');
    expect(all.body).toEqual({
      items: [
        {
          id: 'other-p3',
          currency: 'EUR',
          balance: '1.00',
          createdAt: all.body.items[0].createdAt,
          updatedAt: all.body.items[0].updatedAt,
        },
        {
          id: 'st-p1',
          currency: 'EUR',
          balance: '96.99',
          createdAt: all.body.items[1].createdAt,
          updatedAt: all.body.items[1].updatedAt,
        },
        {
          id: 'st-p2',
          currency: 'EUR',
          balance: '1.00',
          createdAt: all.body.items[2].createdAt,
          updatedAt: all.body.items[2].updatedAt,
        },
      ],
      nextCursor: null,
    });
    const first = await ops(t.app, 'reader').get('/accounts?limit=2');
    expect(await ids(`?limit=2&cursor=${first.body.nextCursor}`)).toEqual(['st-p2']);
    expectError(await ops(t.app, 'reader').get('/accounts?q=a%20b'), 400, 'validation_failed');
  });
});
