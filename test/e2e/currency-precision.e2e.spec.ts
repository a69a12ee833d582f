import { CurrencyTable } from '../../src/platform/common/currency.js';
import { LedgerVerifier } from '../../src/core/ledger/ledger-verifier.js';
import { withClient } from '../support/database.js';
import {
  balance,
  createTestApp,
  deliver,
  expectError,
  operations,
  ops,
  TestContext,
} from '../support/test-app.js';

// Issue 17, CONTRACT §3 ("at most the currency's minor-unit digits"), §6, §7, §10: every currency
// at its own precision (JPY 0, EUR 2, KWD 3, USDT 6, BTC 8) through HTTP, on the real schema.

const CLASSES = [
  { currency: 'JPY', deposit: '100000', stake: '1500', win: '4350', shownWin: '4350', finer: '4350.5' },
  { currency: 'EUR', deposit: '100.00', stake: '10.00', win: '185.5', shownWin: '185.50', finer: '185.505' },
  { currency: 'KWD', deposit: '50.000', stake: '1.250', win: '12.345', shownWin: '12.345', finer: '12.3456' },
  {
    currency: 'USDT',
    deposit: '1000',
    stake: '2.5',
    win: '7.123456',
    shownWin: '7.123456',
    finer: '7.1234567',
  },
  {
    currency: 'BTC',
    deposit: '0.5',
    stake: '0.0001',
    win: '0.00012345',
    shownWin: '0.00012345',
    finer: null,
  },
];

const fieldPaths = (body: { error?: { fields?: { path: string }[] } }) =>
  (body.error?.fields ?? []).map((f) => f.path);

describe('every currency at its own precision (issue 17)', () => {
  let t: TestContext;
  const currencies = CurrencyTable.of({ USDT: 6, BTC: 8 });

  beforeAll(async () => {
    t = await createTestApp({ CURRENCY_MINOR_UNITS: 'USDT:6,BTC:8' });
  });
  afterAll(async () => {
    await t?.close();
  });

  const adjust = (account: string, amount: string, currency: string, key: string) =>
    ops(t.app).post(
      `/accounts/${account}/adjustments`,
      { amount, currency, reason: 'test' },
      { 'idempotency-key': key },
    );
  const registerIn = (code: string, account: string, stake: string, currency: string) =>
    ops(t.app).post('/coupons', { coupon_code: code, accountId: account, stake, currency });
  const win = (batchId: string, code: string, realWin: string | null, status = 2) =>
    deliver(t.app, {
      batchId,
      couponCount: 1,
      coupons: [{ coupon_code: code, status, realWin, events: [{ uuid: `${code}-e1`, status: 2 }] }],
    });
  const view = async (code: string) => (await ops(t.app).get(`/coupons/${code}`)).body;
  const verify = () =>
    withClient(t.config.database.databaseUrl as string, (c) => new LedgerVerifier(c, currencies).verify());

  describe.each(CLASSES)('$currency', (c) => {
    const account = `cp-${c.currency.toLowerCase()}`;
    const code = `CP-${c.currency}`;

    it('deposit, stake and WIN: exact credits, every view at the currency precision', async () => {
      expect((await adjust(account, c.deposit, c.currency, `${account}-dep`)).status).toBe(201);
      const reg = await registerIn(code, account, c.stake, c.currency);
      expect(reg.status).toBe(201);
      expect(reg.body).toMatchObject({ stake: currencies.format(c.stake, c.currency), currency: c.currency });
      expect((await win(`b-${code}-1`, code, c.win)).status).toBe(200);
      const shownStake = currencies.format(c.stake, c.currency);
      expect(await view(code)).toMatchObject({
        status: 2,
        realWin: c.shownWin,
        settled: true,
        needsReview: false,
      });
      expect(await operations(t.app, code)).toEqual([
        `${code}:0:final_credit=${c.shownWin}`,
        `${code}:0:stake_debit=${shownStake}`,
      ]);
      const expected = currencies.format(
        (
          await withClient(t.config.database.databaseUrl as string, (db) =>
            db.query(`SELECT ($1::numeric - $2::numeric + $3::numeric)::text AS v`, [
              c.deposit,
              c.stake,
              c.win,
            ]),
          )
        ).rows[0].v as string,
        c.currency,
      );
      expect(await balance(t.app, account)).toBe(expected);
      expect((await ops(t.app).get(`/accounts/${account}`)).body).toEqual({
        id: account,
        currency: c.currency,
        balance: expected,
      });
    });

    it('a finer realWin of a registered coupon: 200, history only, needs_review amount_precision, no money', async () => {
      if (c.finer === null) return; // BTC has the most digits any currency has: finer is a 400 (below)
      const before = await balance(t.app, account);
      const finerCode = `${code}-F`;
      expect((await registerIn(finerCode, account, c.stake, c.currency)).status).toBe(201);
      const afterStake = await balance(t.app, account);
      const res = await win(`b-${finerCode}-1`, finerCode, c.finer);
      expect([res.status, res.body]).toEqual([200, { success: true, processed: 1 }]);
      expect(await view(finerCode)).toMatchObject({
        status: null,
        realWin: null,
        settled: false,
        needsReview: true,
        reviewReason: 'amount_precision',
      });
      expect(await operations(t.app, finerCode)).toEqual([
        `${finerCode}:0:stake_debit=${currencies.format(c.stake, c.currency)}`,
      ]);
      expect(await balance(t.app, account)).toBe(afterStake);
      expect(before).not.toBe(afterStake);
      const snapshot = await withClient(t.config.database.databaseUrl as string, (db) =>
        db.query(
          `SELECT applied, transition, real_win::text AS real_win, operations FROM coupon_snapshots WHERE coupon_code = $1`,
          [finerCode],
        ),
      );
      // Stored exactly as sent, never rounded.
      expect(snapshot.rows).toEqual([
        {
          applied: false,
          transition: 'amount_precision',
          real_win: Number(c.finer).toFixed(8),
          operations: [],
        },
      ]);
    });
  });

  it('the partner API refuses an amount finer than its currency, with the field path', async () => {
    const cases: [string, Record<string, unknown>, string[]][] = [
      ['/coupons', { coupon_code: 'CP-R1', accountId: 'cp-r', stake: '1500.50', currency: 'JPY' }, ['stake']],
      ['/coupons', { coupon_code: 'CP-R2', accountId: 'cp-r', stake: '1.2345', currency: 'KWD' }, ['stake']],
      ['/coupons', { coupon_code: 'CP-R3', accountId: 'cp-r', stake: '1.00', currency: 'XAU' }, ['currency']],
      [
        '/coupons',
        { coupon_code: 'CP-R4', accountId: 'cp-r', stake: '1.00', currency: 'DOGE' },
        ['currency'],
      ],
      [
        '/coupons',
        { coupon_code: 'CP-R5', accountId: 'cp-r', stake: '1.00', currency: 'usdt' },
        ['currency'],
      ],
      ['/accounts/cp-r/adjustments', { amount: '0.0000001', currency: 'USDT', reason: 'x' }, ['amount']],
      ['/accounts/cp-r/adjustments', { amount: '-0.000000001', currency: 'BTC', reason: 'x' }, ['amount']],
      ['/accounts/cp-r/adjustments', { amount: '100.5', currency: 'JPY', reason: 'x' }, ['amount']],
    ];
    for (const [path, body, paths] of cases) {
      const res = await ops(t.app).post(path, body, {
        'idempotency-key': `cp-r-${JSON.stringify(body).length}`,
      });
      expectError(res, 400, 'validation_failed');
      expect({ body, paths: fieldPaths(res.body) }).toEqual({ body, paths });
    }
    const jpy = await adjust('cp-r', '0.5', 'JPY', 'cp-r-jpy');
    expect(jpy.body.error.fields).toEqual([
      { path: 'amount', message: 'amount must be a decimal string with at most 0 fraction digits, not zero' },
    ]);
    expect(
      await withClient(t.config.database.databaseUrl as string, (db) =>
        db.query(`SELECT id FROM accounts WHERE id = 'cp-r'`),
      ),
    ).toMatchObject({ rowCount: 0 });
    // Trailing zeros are not precision: "1500.00" is 1500 yen exactly.
    expect((await adjust('cp-r', '1500.00', 'JPY', 'cp-r-ok')).body).toMatchObject({
      amount: '1500',
      balance: '1500',
    });
  });

  it('a realWin with more digits than any allowed currency has (9 > BTC 8) is a 400 at its path', async () => {
    const res = await win('b-cp-9', 'CP-9', '0.000000001');
    expectError(res, 400, 'validation_failed');
    expect(fieldPaths(res.body)).toEqual(['coupons[0].realWin']);
  });

  it('a recalculation in KWD and in BTC moves money to the last digit', async () => {
    for (const [currency, dep, stake, first, second, final] of [
      ['KWD', '10.000', '1.005', '12.345', '7.005', '3.001'],
      ['BTC', '0.01', '0.00010001', '0.00012345', '0.00000001', '0.00054321'],
    ]) {
      const account = `rc-${currency.toLowerCase()}`;
      const code = `RC-${currency}`;
      expect((await adjust(account, dep, currency, `${account}-dep`)).status).toBe(201);
      expect((await registerIn(code, account, stake, currency)).status).toBe(201);
      for (const [n, status, realWin] of [
        [1, 2, first],
        [2, 15, second],
        [3, 2, second],
        [4, 15, null],
        [5, 2, final],
      ] as [number, number, string | null][])
        expect((await win(`b-${code}-${n}`, code, realWin, status)).status).toBe(200);
      const f = (v: string) => currencies.format(v, currency);
      expect(await operations(t.app, code)).toEqual(
        [
          `${code}:0:final_credit=${f(first)}`,
          `${code}:0:stake_debit=${f(stake)}`,
          `${code}:1:final_credit=${f(second)}`,
          `${code}:1:recalculation_debit=${f(first)}`,
          `${code}:2:final_credit=${f(final)}`,
          `${code}:2:recalculation_debit=${f(second)}`,
        ].sort(),
      );
      expect(await view(code)).toMatchObject({
        settlementGeneration: 2,
        realWin: f(final),
        needsReview: false,
      });
      // deposit - stake + final result, exactly.
      const want = currency === 'KWD' ? '11.996' : '0.0104432';
      expect(await balance(t.app, account)).toBe(currency === 'KWD' ? want : '0.01044320');
    }
  });

  it('an unallocated coupon is checked when it is registered: flagged, no money for the finer amount', async () => {
    // Settled at 4350.5 before anyone registered it: the currency is not known yet, so it is decided.
    expect((await win('b-un-1', 'UN-JPY', '4350.5')).status).toBe(200);
    expect(await view('UN-JPY')).toMatchObject({ unallocated: true, settled: true, realWin: '4350.50' });
    expect((await adjust('un-jpy', '10000', 'JPY', 'un-jpy-dep')).status).toBe(201);
    const reg = await registerIn('UN-JPY', 'un-jpy', '1000', 'JPY');
    expect(reg.status).toBe(201);
    expect(reg.body).toMatchObject({
      settled: false,
      needsReview: true,
      reviewReason: 'amount_precision',
      operations: [{ key: 'UN-JPY:0:stake_debit', type: 'stake_debit', generation: 0, amount: '1000' }],
    });
    expect(await balance(t.app, 'un-jpy')).toBe('9000');
    // The same registration again changes nothing; the exact result later is credited once.
    expect((await registerIn('UN-JPY', 'un-jpy', '1000', 'JPY')).status).toBe(200);
    expect((await win('b-un-2', 'UN-JPY', '4350')).status).toBe(200);
    expect(await operations(t.app, 'UN-JPY')).toEqual([
      'UN-JPY:0:final_credit=4350',
      'UN-JPY:0:stake_debit=1000',
    ]);
    expect(await balance(t.app, 'un-jpy')).toBe('13350');

    // A coupon whose every amount fits is posted in full at registration.
    expect((await win('b-un-3', 'UN-KWD', '2.125')).status).toBe(200);
    expect((await adjust('un-kwd', '5', 'KWD', 'un-kwd-dep')).status).toBe(201);
    expect((await registerIn('UN-KWD', 'un-kwd', '1', 'KWD')).body).toMatchObject({
      settled: true,
      needsReview: false,
    });
    expect(await balance(t.app, 'un-kwd')).toBe('6.125');
  });

  it('a resolution finer than the coupon currency answers 400 realWin; the audit shows amounts at precision', async () => {
    const res = await ops(t.app).post(
      '/coupons/CP-JPY-F/resolution',
      { realWin: '4350.5', reason: 'checked', resolvedBy: 'ops' },
      { 'idempotency-key': 'cp-res-1' },
    );
    expectError(res, 400, 'validation_failed');
    expect(res.body.error.fields).toEqual([
      { path: 'realWin', message: 'must have at most 0 fraction digits (JPY)' },
    ]);
    const ok = await ops(t.app).post(
      '/coupons/CP-JPY-F/resolution',
      { realWin: '4350', reason: 'checked', resolvedBy: 'ops' },
      { 'idempotency-key': 'cp-res-2' },
    );
    expect(ok.status).toBe(201);
    expect(ok.body.resolution).toMatchObject({
      realWin: '4350',
      operations: ['CP-JPY-F:0:final_credit=4350'],
    });
    const audit = (await ops(t.app).get('/callbacks/batches/b-CP-KWD-1')).body;
    expect(audit.coupons).toEqual([expect.objectContaining({ coupon_code: 'CP-KWD', realWin: '12.345' })]);
    expect(audit.operations).toEqual([expect.objectContaining({ amount: '12.345', currency: 'KWD' })]);
    expect((await ops(t.app).get('/callbacks/batches/b-CP-BTC-1')).body.operations).toEqual([
      expect.objectContaining({ amount: '0.00012345', currency: 'BTC' }),
    ]);
  });

  it('the whole ledger verifies clean against the minor units, and a finer operation is reported', async () => {
    expect((await verify()).violations).toEqual([]);
    const strict = await withClient(t.config.database.databaseUrl as string, (c) =>
      new LedgerVerifier(c, CurrencyTable.of({ USDT: 6, BTC: 8, KWD: 2 })).verify(),
    );
    expect(strict.violations.filter((v) => v.check === 'amount_precision').map((v) => v.subject)).toEqual(
      expect.arrayContaining(['CP-KWD:0:final_credit', 'RC-KWD:0:stake_debit']),
    );
  });

  it('CURRENCIES restricts what is accepted and the largest realWin precision', async () => {
    const t2 = await createTestApp({ CURRENCIES: 'EUR,JPY' });
    try {
      const res = await ops(t2.app).post('/coupons', {
        coupon_code: 'CR-1',
        accountId: 'cr',
        stake: '1.00',
        currency: 'USD',
      });
      expectError(res, 400, 'validation_failed');
      expect(res.body.error.fields).toEqual([
        {
          path: 'currency',
          message: 'currency must be an allowed currency code (3..8 of A-Z 0-9: EUR, JPY)',
        },
      ]);
      const finer = await deliver(t2.app, {
        batchId: 'cr-b1',
        couponCount: 1,
        coupons: [{ coupon_code: 'CR-1', status: 2, realWin: '1.005', events: [] }],
      });
      expectError(finer, 400, 'validation_failed');
      expect(fieldPaths(finer.body)).toEqual(['coupons[0].realWin']);
    } finally {
      await t2.close();
    }
  });
});
