import request from 'supertest';
import { balance, deposit, fieldPaths, OPS_KEY, ops, useTestApp } from '../support/test-app.js';

// The partner API (CONTRACT §10) and the ledger rows it writes (§7), Swagger (/docs, /docs-json)
// and the JSON error answers of the whole app. Exact status codes, bodies and balances.

/** The partner endpoints of §10, each with a body that would be valid if authorised. */
const PARTNER_ENDPOINTS: {
  name: string;
  send: (agent: request.Agent | ReturnType<typeof request>) => request.Test;
}[] = [
  {
    name: 'POST /coupons',
    send: (a) =>
      a.post('/coupons').send({ coupon_code: 'AUTH-1', accountId: 'p-auth', stake: '1.00', currency: 'EUR' }),
  },
  { name: 'GET /coupons/:code', send: (a) => a.get('/coupons/AUTH-1') },
  { name: 'GET /accounts/:id', send: (a) => a.get('/accounts/p-auth') },
  {
    name: 'POST /accounts/:id/adjustments',
    send: (a) =>
      a
        .post('/accounts/p-auth/adjustments')
        .set('idempotency-key', 'auth-1')
        .send({ amount: '100.00', currency: 'EUR', reason: 'auth test' }),
  },
];

describe('partner API (CONTRACT §10)', () => {
  const t = useTestApp();

  const http = () => request(t.app.getHttpServer());
  const adjust = (account: string, body: unknown, key?: string) =>
    ops(t.app).post(
      `/accounts/${account}/adjustments`,
      body,
      key === undefined ? {} : { 'idempotency-key': key },
    );
  const registerCoupon = (body: unknown) => ops(t.app).post('/coupons', body);
  const count = async (sql: string, params: unknown[] = []): Promise<number> =>
    (await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`, params)).rows[0].n;
  /** `account=amount` of the ledger entries of one operation, sorted. */
  const entriesOf = async (operationKey: string): Promise<string[]> =>
    (
      await t.db.query<{ account_id: string; amount: string }>(
        `SELECT e.account_id, e.amount::text AS amount FROM ledger_entries e
         JOIN financial_operations o ON o.id = e.operation_id WHERE o.operation_key = $1`,
        [operationKey],
      )
    ).rows
      .map((r) => `${r.account_id}=${r.amount}`)
      .sort();

  describe('bearer auth (§10)', () => {
    it.each(PARTNER_ENDPOINTS)(
      '$name answers 401 unauthorized without a valid bearer key',
      async ({ send }) => {
        const variants: [string, Record<string, string>][] = [
          ['no Authorization', {}],
          ['wrong key', { authorization: 'Bearer not-the-key' }],
          ['key of another scheme', { authorization: `Basic ${OPS_KEY}` }],
          [
            'Basic credentials',
            { authorization: `Basic ${Buffer.from(`ops:${OPS_KEY}`).toString('base64')}` },
          ],
          ['empty bearer', { authorization: 'Bearer ' }],
          ['bare key', { authorization: OPS_KEY }],
          ['key with a suffix', { authorization: `Bearer ${OPS_KEY}x` }],
        ];
        for (const [label, headers] of variants) {
          const res = await send(http()).set(headers);
          expect({ label, status: res.status }).toEqual({ label, status: 401 });
          expect(res.headers['content-type']).toMatch(/^application\/json/);
          expect(res.body).toEqual({
            success: false,
            error: { code: 'unauthorized', message: expect.any(String) },
          });
        }
      },
    );

    it('an unauthorised request changes nothing, even with an invalid body (guard before validation)', async () => {
      const res = await http().post('/coupons').send({ coupon_code: '', stake: 'abc', extra: 1 });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('unauthorized');
      expect(await count(`accounts WHERE id = 'p-auth'`)).toBe(0);
      expect(await count(`coupons WHERE coupon_code = 'AUTH-1'`)).toBe(0);
      expect(await count(`account_adjustments WHERE idempotency_key = 'auth-1'`)).toBe(0);
    });

    it.each([
      ['malformed JSON', 'application/json', '{"coupon_code": ', 400, 'malformed_json'],
      ['a key twice', 'application/json', '{"stake": "1.00", "stake": "9.00"}', 400, 'malformed_json'],
      ['another content type', 'text/plain', 'x', 415, 'unsupported_media_type'],
      [
        'a body over 100 KB',
        'application/json',
        `{"pad": "${'x'.repeat(110_000)}"}`,
        413,
        'payload_too_large',
      ],
    ])(
      '%s: 401 without a valid key (the key is checked before the body is parsed), %i %s with it',
      async (_label, contentType, body, status, code) => {
        for (const authorization of [undefined, 'Bearer not-the-key']) {
          const req = http().post('/coupons').set('content-type', contentType);
          const res = await (authorization ? req.set('authorization', authorization) : req).send(body);
          expect([res.status, res.body.error.code]).toEqual([401, 'unauthorized']);
        }
        const res = await http()
          .post('/coupons')
          .set('authorization', `Bearer ${OPS_KEY}`)
          .set('content-type', contentType)
          .send(body);
        expect([res.status, res.body.error.code]).toEqual([status, code]);
      },
    );

    it('the configured key is accepted (scheme case-insensitive)', async () => {
      const res = await http().get('/accounts/p-auth').set('authorization', `bearer ${OPS_KEY}`);
      expect(res.status).toBe(404); // authorised; the account does not exist
      expect(res.body.error.code).toBe('not_found');
    });
  });

  describe('adjustments (§10, ledger §7)', () => {
    it('a first deposit answers 201 with the adjustment and writes one balanced operation', async () => {
      const res = await adjust(
        'pa1',
        { amount: '100.00', currency: 'EUR', reason: 'cashier deposit' },
        'adj-pa1-1',
      );
      expect(res.status).toBe(201);
      expect(res.headers['idempotent-replayed']).toBeUndefined();
      expect(res.body).toEqual({
        accountId: 'pa1',
        idempotencyKey: 'adj-pa1-1',
        amount: '100.00',
        currency: 'EUR',
        reason: 'cashier deposit',
        operationKey: 'adjustment:adj-pa1-1',
        balance: '100.00',
        createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        actor: 'key-1',
      });
      expect((await ops(t.app).get('/accounts/pa1')).body).toEqual({
        id: 'pa1',
        currency: 'EUR',
        balance: '100.00',
      });
      const op = await t.db.query(
        `SELECT type, account_id, amount::text AS amount, currency, coupon_code, generation FROM financial_operations WHERE operation_key = 'adjustment:adj-pa1-1'`,
      );
      expect(op.rows).toEqual([
        {
          type: 'deposit',
          account_id: 'pa1',
          amount: '100.00000000',
          currency: 'EUR',
          coupon_code: null,
          generation: null,
        },
      ]);
      expect(await entriesOf('adjustment:adj-pa1-1')).toEqual([
        'house:EUR=-100.00000000',
        'pa1=100.00000000',
      ]);
    });

    it('the same key and body return the first result again; the balance is unchanged', async () => {
      const body = { amount: '100.00', currency: 'EUR', reason: 'cashier deposit' };
      const first = await adjust('pa2', body, 'adj-pa2-1');
      expect(first.status).toBe(201);
      const again = await adjust('pa2', body, 'adj-pa2-1');
      expect(again.status).toBe(201);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body).toEqual(first.body);
      // "100" is the same amount as "100.00": the same request.
      const sameAmount = await adjust('pa2', { ...body, amount: '100' }, 'adj-pa2-1');
      expect(sameAmount.status).toBe(201);
      expect(sameAmount.body).toEqual(first.body);
      expect(await balance(t.app, 'pa2')).toBe('100.00');
      expect(await count(`financial_operations WHERE account_id = 'pa2'`)).toBe(1);
      expect(await count(`account_adjustments WHERE account_id = 'pa2'`)).toBe(1);
    });

    it('the same key with a different body answers 409 idempotency_conflict and moves no money', async () => {
      const body = { amount: '100.00', currency: 'EUR', reason: 'cashier deposit' };
      await adjust('pa3', body, 'adj-pa3-1').expect(201);
      for (const other of [
        { ...body, amount: '50.00' },
        { ...body, reason: 'another reason' },
      ]) {
        const res = await adjust('pa3', other, 'adj-pa3-1');
        expect(res.status).toBe(409);
        expect(res.body).toEqual({
          success: false,
          error: { code: 'idempotency_conflict', message: expect.any(String) },
        });
      }
      // The same key on another account is another request too.
      const elsewhere = await adjust('pa3-other', body, 'adj-pa3-1');
      expect(elsewhere.status).toBe(409);
      expect(elsewhere.body.error.code).toBe('idempotency_conflict');
      expect(await balance(t.app, 'pa3')).toBe('100.00');
      expect(await count(`accounts WHERE id = 'pa3-other'`)).toBe(0);
      expect(await count(`financial_operations WHERE operation_key = 'adjustment:adj-pa3-1'`)).toBe(1);
    });

    it('a missing or invalid Idempotency-Key answers 400 and changes nothing', async () => {
      const body = { amount: '10.00', currency: 'EUR', reason: 'no key' };
      const missing = await adjust('pa4', body);
      expect(missing.status).toBe(400);
      expect(missing.body).toEqual({
        success: false,
        error: { code: 'idempotency_key_required', message: expect.any(String) },
      });
      const tooLong = await adjust('pa4', body, 'k'.repeat(129));
      expect(tooLong.status).toBe(400);
      expect(tooLong.body.error.code).toBe('idempotency_key_required');
      expect(await count(`accounts WHERE id = 'pa4'`)).toBe(0);
      expect((await ops(t.app).get('/accounts/pa4')).status).toBe(404);
    });

    it('a withdrawal (negative amount) debits the balance with a balanced operation', async () => {
      await adjust('pa5', { amount: '100.00', currency: 'EUR', reason: 'deposit' }, 'adj-pa5-1').expect(201);
      const res = await adjust('pa5', { amount: '-30.00', currency: 'EUR', reason: 'cash out' }, 'adj-pa5-2');
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        accountId: 'pa5',
        amount: '-30.00',
        operationKey: 'adjustment:adj-pa5-2',
        balance: '70.00',
      });
      expect(await balance(t.app, 'pa5')).toBe('70.00');
      const op = await t.db.query(
        `SELECT type, amount::text AS amount FROM financial_operations WHERE operation_key = 'adjustment:adj-pa5-2'`,
      );
      expect(op.rows).toEqual([{ type: 'withdrawal', amount: '30.00000000' }]);
      expect(await entriesOf('adjustment:adj-pa5-2')).toEqual(['house:EUR=30.00000000', 'pa5=-30.00000000']);
      // A withdrawal of the whole balance is allowed.
      const all = await adjust('pa5', { amount: '-70.00', currency: 'EUR', reason: 'close' }, 'adj-pa5-3');
      expect(all.status).toBe(201);
      expect(all.body.balance).toBe('0.00');
    });

    it('a withdrawal above the balance answers 422 insufficient_funds and writes nothing', async () => {
      await adjust('pa6', { amount: '100.00', currency: 'EUR', reason: 'deposit' }, 'adj-pa6-1').expect(201);
      const res = await adjust(
        'pa6',
        { amount: '-100.01', currency: 'EUR', reason: 'too much' },
        'adj-pa6-2',
      );
      expect(res.status).toBe(422);
      expect(res.body).toEqual({
        success: false,
        error: { code: 'insufficient_funds', message: expect.any(String) },
      });
      expect(await balance(t.app, 'pa6')).toBe('100.00');
      expect(await count(`financial_operations WHERE operation_key = 'adjustment:adj-pa6-2'`)).toBe(0);
      expect(await count(`account_adjustments WHERE idempotency_key = 'adj-pa6-2'`)).toBe(0);
      // The key was not consumed: the same key with a valid amount works afterwards.
      const retry = await adjust(
        'pa6',
        { amount: '-100.00', currency: 'EUR', reason: 'too much' },
        'adj-pa6-2',
      );
      expect(retry.status).toBe(201);
      expect(retry.body.balance).toBe('0.00');
    });

    it('a withdrawal from an account that does not exist answers 422 and creates no account', async () => {
      const res = await adjust(
        'pa6-new',
        { amount: '-1.00', currency: 'EUR', reason: 'nothing there' },
        'adj-pa6-new',
      );
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('insufficient_funds');
      expect(await count(`accounts WHERE id = 'pa6-new'`)).toBe(0);
    });

    it.each([
      ['amount with 3 fraction digits', { amount: '1.001', currency: 'EUR', reason: 'x' }, ['amount']],
      ['amount not a number', { amount: 'abc', currency: 'EUR', reason: 'x' }, ['amount']],
      ['amount zero', { amount: '0', currency: 'EUR', reason: 'x' }, ['amount']],
      ['amount zero with decimals', { amount: '-0.00', currency: 'EUR', reason: 'x' }, ['amount']],
      ['amount as a JSON number', { amount: 10, currency: 'EUR', reason: 'x' }, ['amount']],
      ['amount with an exponent', { amount: '1e3', currency: 'EUR', reason: 'x' }, ['amount']],
      ['amount missing', { currency: 'EUR', reason: 'x' }, ['amount']],
      ['currency missing', { amount: '10.00', reason: 'x' }, ['currency']],
      ['currency lower case', { amount: '10.00', currency: 'eur', reason: 'x' }, ['currency']],
      ['reason missing', { amount: '10.00', currency: 'EUR' }, ['reason']],
      ['reason empty', { amount: '10.00', currency: 'EUR', reason: '' }, ['reason']],
      ['unknown field', { amount: '10.00', currency: 'EUR', reason: 'x', extra: true }, ['extra']],
      ['several fields', { amount: 'abc', currency: 'eur' }, ['amount', 'currency', 'reason']],
    ])('%s answers 400 validation_failed with the field paths', async (_label, body, paths) => {
      const res = await adjust('pa7', body, `adj-pa7-${_label}`.replace(/\s+/g, '-'));
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        success: false,
        error: { code: 'validation_failed', message: expect.any(String), fields: expect.any(Array) },
      });
      expect(fieldPaths(res)).toEqual(paths);
      for (const f of res.body.error.fields)
        expect(f).toEqual({ path: expect.any(String), message: expect.any(String) });
      expect(await count(`accounts WHERE id = 'pa7'`)).toBe(0);
    });

    it('an invalid account id answers 400', async () => {
      const res = await adjust('house:EUR', { amount: '10.00', currency: 'EUR', reason: 'x' }, 'adj-house');
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('validation_failed');
      expect(await count(`account_adjustments WHERE idempotency_key = 'adj-house'`)).toBe(0);
    });

    it.each([
      ['reason', 'pa-n1', '{"amount":"10.00","currency":"EUR","reason":1e200000}', 'reason'],
      ['amount', 'pa-n2', '{"amount":10.000000000000000001,"currency":"EUR","reason":"x"}', 'amount'],
    ])(
      'a JSON number a double cannot hold in a text or amount field (%s) answers 400 at its path and writes nothing',
      async (_name, account, body, path) => {
        const res = await adjust(account, body, `adj-${account}`).set('content-type', 'application/json');
        expect({ status: res.status, code: res.body.error?.code, paths: fieldPaths(res) }).toEqual({
          status: 400,
          code: 'validation_failed',
          paths: [path],
        });
        expect(await count(`accounts WHERE id = $1`, [account])).toBe(0);
      },
    );

    it('another currency on an existing account answers 422 currency_mismatch', async () => {
      await adjust('pa8', { amount: '100.00', currency: 'EUR', reason: 'deposit' }, 'adj-pa8-1').expect(201);
      const res = await adjust('pa8', { amount: '10.00', currency: 'USD', reason: 'dollars' }, 'adj-pa8-2');
      expect(res.status).toBe(422);
      expect(res.body).toEqual({
        success: false,
        error: { code: 'currency_mismatch', message: expect.any(String) },
      });
      expect((await ops(t.app).get('/accounts/pa8')).body).toEqual({
        id: 'pa8',
        currency: 'EUR',
        balance: '100.00',
      });
      expect(await count(`financial_operations WHERE operation_key = 'adjustment:adj-pa8-2'`)).toBe(0);
    });

    it('ten concurrent identical adjustments with one key credit once', async () => {
      const body = { amount: '25.00', currency: 'EUR', reason: 'parallel deposit' };
      const results = await Promise.all(Array.from({ length: 10 }, () => adjust('pa9', body, 'adj-pa9-par')));
      expect(results.map((r) => r.status)).toEqual(Array(10).fill(201));
      for (const r of results) expect(r.body).toEqual(results[0].body);
      expect(results[0].body).toMatchObject({
        amount: '25.00',
        balance: '25.00',
        operationKey: 'adjustment:adj-pa9-par',
      });
      expect(results.filter((r) => r.headers['idempotent-replayed'] === undefined)).toHaveLength(1);
      expect(await count(`financial_operations WHERE operation_key = 'adjustment:adj-pa9-par'`)).toBe(1);
      expect(await count(`account_adjustments WHERE idempotency_key = 'adj-pa9-par'`)).toBe(1);
      expect(await balance(t.app, 'pa9')).toBe('25.00');
      expect(await entriesOf('adjustment:adj-pa9-par')).toEqual([
        'house:EUR=-25.00000000',
        'pa9=25.00000000',
      ]);
    });

    it('ten concurrent adjustments with different keys on one account all apply', async () => {
      await adjust('pa10', { amount: '100.00', currency: 'EUR', reason: 'deposit' }, 'adj-pa10-0').expect(
        201,
      );
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          adjust('pa10', { amount: '-7.50', currency: 'EUR', reason: 'w' }, `adj-pa10-${i + 1}`),
        ),
      );
      expect(results.map((r) => r.status)).toEqual(Array(10).fill(201));
      expect(results.map((r) => r.body.balance).sort()).toEqual(
        ['92.50', '85.00', '77.50', '70.00', '62.50', '55.00', '47.50', '40.00', '32.50', '25.00'].sort(),
      );
      expect(await balance(t.app, 'pa10')).toBe('25.00');
    });

    it('every adjustment has exactly two entries summing to zero, one on the player and one on house:EUR', async () => {
      const perOperation = await t.db.query<{
        key: string;
        account_id: string;
        n: number;
        total: string;
        players: number;
        houses: number;
      }>(
        `SELECT o.operation_key AS key, o.account_id,
                count(e.id)::int AS n, coalesce(sum(e.amount), 0)::text AS total,
                count(*) FILTER (WHERE e.account_id = o.account_id)::int AS players,
                count(*) FILTER (WHERE e.account_id = 'house:EUR')::int AS houses
         FROM financial_operations o LEFT JOIN ledger_entries e ON e.operation_id = o.id
         WHERE o.type IN ('deposit', 'withdrawal')
         GROUP BY o.id ORDER BY o.id`,
      );
      expect(perOperation.rows.length).toBeGreaterThanOrEqual(10);
      for (const row of perOperation.rows) {
        expect(row).toEqual({
          key: row.key,
          account_id: row.account_id,
          n: 2,
          total: '0.00000000',
          players: 1,
          houses: 1,
        });
      }
      // Every materialised balance equals the sum of its entries; all entries sum to zero.
      const drift = await t.db.query(
        `SELECT a.id, a.balance::text AS balance, coalesce(sum(e.amount), 0)::text AS entries
         FROM accounts a LEFT JOIN ledger_entries e ON e.account_id = a.id
         GROUP BY a.id HAVING a.balance <> coalesce(sum(e.amount), 0)`,
      );
      expect(drift.rows).toEqual([]);
      const total = await t.db.query(`SELECT coalesce(sum(amount), 0)::text AS total FROM ledger_entries`);
      expect(total.rows[0].total).toBe('0.00000000');
    });
  });

  describe('coupon registration (§10, §7 stake_debit)', () => {
    const coupon = (code: string, accountId: string, stake = '10.00', currency = 'EUR') => ({
      coupon_code: code,
      accountId,
      stake,
      currency,
    });
    const registeredView = (code: string, accountId: string, stake = '10.00') => ({
      coupon_code: code,
      accountId,
      stake,
      currency: 'EUR',
      status: null,
      realWin: null,
      settlementGeneration: 0,
      settled: false,
      recalculationOpen: false,
      needsReview: false,
      reviewReason: null,
      unallocated: false,
      registeredBy: 'key-1',
      events: [],
      operations: [{ key: `${code}:0:stake_debit`, type: 'stake_debit', generation: 0, amount: stake }],
    });

    it('POST /coupons answers 201 with the coupon view and debits the stake once', async () => {
      await deposit(t.app, 'pc1', '100.00');
      const res = await registerCoupon(coupon('RC-1', 'pc1'));
      expect(res.status).toBe(201);
      expect(res.body).toEqual(registeredView('RC-1', 'pc1'));
      expect(await balance(t.app, 'pc1')).toBe('90.00');
      const get = await ops(t.app).get('/coupons/RC-1');
      expect(get.status).toBe(200);
      expect(get.body).toEqual(registeredView('RC-1', 'pc1'));
      expect(await entriesOf('RC-1:0:stake_debit')).toEqual(['house:EUR=10.00000000', 'pc1=-10.00000000']);
    });

    it('a coupon_code or accountId sent as a JSON number a double cannot hold answers 400, not its digits as a string', async () => {
      await deposit(t.app, 'pc-n1', '100.00');
      for (const [body, path] of [
        [
          '{"coupon_code":25707215400000000001,"accountId":"pc-n1","stake":"10.00","currency":"EUR"}',
          'coupon_code',
        ],
        [
          '{"coupon_code":"RC-N1","accountId":35707215400000000001,"stake":"10.00","currency":"EUR"}',
          'accountId',
        ],
      ]) {
        const res = await registerCoupon(body).set('content-type', 'application/json');
        expect({ status: res.status, code: res.body.error?.code, paths: fieldPaths(res) }).toEqual({
          status: 400,
          code: 'validation_failed',
          paths: [path],
        });
      }
      expect(await count(`coupons WHERE coupon_code IN ('25707215400000000001', 'RC-N1')`)).toBe(0);
      expect(await balance(t.app, 'pc-n1')).toBe('100.00');
    });

    it('the same registration again answers 200 with the same view and does not debit twice', async () => {
      await deposit(t.app, 'pc2', '100.00');
      const first = await registerCoupon(coupon('RC-2', 'pc2'));
      expect(first.status).toBe(201);
      const again = await registerCoupon(coupon('RC-2', 'pc2'));
      expect(again.status).toBe(200);
      expect(again.body).toEqual(first.body);
      // "10" is the same stake as "10.00".
      const sameStake = await registerCoupon(coupon('RC-2', 'pc2', '10'));
      expect(sameStake.status).toBe(200);
      expect(sameStake.body).toEqual(first.body);
      expect(await balance(t.app, 'pc2')).toBe('90.00');
      expect(await count(`financial_operations WHERE coupon_code = 'RC-2'`)).toBe(1);
    });

    it('the same coupon_code with another stake, account or currency answers 409 coupon_conflict', async () => {
      await deposit(t.app, 'pc3', '100.00');
      await deposit(t.app, 'pc3-other', '100.00');
      await registerCoupon(coupon('RC-3', 'pc3')).expect(201);
      for (const other of [
        coupon('RC-3', 'pc3', '11.00'),
        coupon('RC-3', 'pc3-other'),
        coupon('RC-3', 'pc3', '10.00', 'USD'),
      ]) {
        const res = await registerCoupon(other);
        expect(res.status).toBe(409);
        expect(res.body).toEqual({
          success: false,
          error: { code: 'coupon_conflict', message: expect.any(String) },
        });
      }
      expect(await balance(t.app, 'pc3')).toBe('90.00');
      expect(await balance(t.app, 'pc3-other')).toBe('100.00');
      expect((await ops(t.app).get('/coupons/RC-3')).body).toEqual(registeredView('RC-3', 'pc3'));
    });

    it('a stake above the balance answers 422 insufficient_funds and persists nothing', async () => {
      await deposit(t.app, 'pc4', '5.00');
      const res = await registerCoupon(coupon('RC-4', 'pc4', '5.01'));
      expect(res.status).toBe(422);
      expect(res.body).toEqual({
        success: false,
        error: { code: 'insufficient_funds', message: expect.any(String) },
      });
      const get = await ops(t.app).get('/coupons/RC-4');
      expect(get.status).toBe(404);
      expect(get.body).toEqual({ success: false, error: { code: 'not_found', message: expect.any(String) } });
      expect(await count(`coupons WHERE coupon_code = 'RC-4'`)).toBe(0);
      expect(await count(`financial_operations WHERE coupon_code = 'RC-4'`)).toBe(0);
      expect(await balance(t.app, 'pc4')).toBe('5.00');
      // The whole balance can be staked.
      const exact = await registerCoupon(coupon('RC-4', 'pc4', '5.00'));
      expect(exact.status).toBe(201);
      expect(await balance(t.app, 'pc4')).toBe('0.00');
    });

    it('registering with no prior deposit answers 422 and persists neither the account nor the coupon', async () => {
      const res = await registerCoupon(coupon('RC-5', 'pc5-new'));
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('insufficient_funds');
      expect(await count(`accounts WHERE id = 'pc5-new'`)).toBe(0);
      expect(await count(`coupons WHERE coupon_code = 'RC-5'`)).toBe(0);
      expect((await ops(t.app).get('/accounts/pc5-new')).status).toBe(404);
      expect((await ops(t.app).get('/coupons/RC-5')).status).toBe(404);
    });

    it('a stake in another currency than the account answers 422 currency_mismatch', async () => {
      await deposit(t.app, 'pc6', '100.00');
      const res = await registerCoupon(coupon('RC-6', 'pc6', '10.00', 'USD'));
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('currency_mismatch');
      expect(await count(`coupons WHERE coupon_code = 'RC-6'`)).toBe(0);
      expect(await balance(t.app, 'pc6')).toBe('100.00');
    });

    it('a coupon_code with leading zeros is kept exactly', async () => {
      await deposit(t.app, 'pc7', '100.00');
      const res = await registerCoupon(coupon('000000000272', 'pc7', '2.50'));
      expect(res.status).toBe(201);
      expect(res.body).toEqual(registeredView('000000000272', 'pc7', '2.50'));
      expect((await ops(t.app).get('/coupons/000000000272')).body.coupon_code).toBe('000000000272');
      expect((await ops(t.app).get('/coupons/272')).status).toBe(404);
      const rows = await t.db.query(`SELECT coupon_code FROM coupons WHERE coupon_code LIKE '%272'`);
      expect(rows.rows).toEqual([{ coupon_code: '000000000272' }]);
      expect(await count(`financial_operations WHERE operation_key = '000000000272:0:stake_debit'`)).toBe(1);
    });

    it.each([
      ['stake zero', coupon('RV-1', 'pv', '0'), ['stake']],
      ['stake negative', coupon('RV-2', 'pv', '-1'), ['stake']],
      ['stake with 3 fraction digits', coupon('RV-3', 'pv', '1.234'), ['stake']],
      ['stake as a JSON number', { ...coupon('RV-4', 'pv'), stake: 10 }, ['stake']],
      ['stake missing', { coupon_code: 'RV-5', accountId: 'pv', currency: 'EUR' }, ['stake']],
      ['coupon_code empty', coupon('', 'pv'), ['coupon_code']],
      ['coupon_code of 33 chars', coupon('X'.repeat(33), 'pv'), ['coupon_code']],
      ['coupon_code a number', { ...coupon('RV-8', 'pv'), coupon_code: 272 }, ['coupon_code']],
      ['accountId missing', { coupon_code: 'RV-9', stake: '1.00', currency: 'EUR' }, ['accountId']],
      ['accountId with a colon', coupon('RV-10', 'house:EUR'), ['accountId']],
      ['currency lower case', coupon('RV-11', 'pv', '1.00', 'eur'), ['currency']],
      ['unknown extra field', { ...coupon('RV-12', 'pv'), extra: 'x' }, ['extra']],
    ])('%s answers 400 validation_failed with the field paths', async (_label, body, paths) => {
      const res = await registerCoupon(body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        success: false,
        error: { code: 'validation_failed', message: expect.any(String), fields: expect.any(Array) },
      });
      expect(fieldPaths(res)).toEqual(paths);
      expect(await count(`accounts WHERE id = 'pv'`)).toBe(0);
      expect(await count(`coupons WHERE coupon_code LIKE 'RV-%'`)).toBe(0);
    });

    it('a coupon_code of exactly 32 chars is accepted', async () => {
      await deposit(t.app, 'pc8', '100.00');
      const code = 'Z'.repeat(32);
      const res = await registerCoupon(coupon(code, 'pc8', '1.00'));
      expect(res.status).toBe(201);
      expect(res.body.coupon_code).toBe(code);
    });

    it('ten concurrent identical registrations debit the stake once', async () => {
      await deposit(t.app, 'pc9', '100.00');
      const results = await Promise.all(
        Array.from({ length: 10 }, () => registerCoupon(coupon('RC-9', 'pc9', '12.34'))),
      );
      expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 200, 201]);
      for (const r of results) expect(r.body).toEqual(registeredView('RC-9', 'pc9', '12.34'));
      expect(await count(`financial_operations WHERE operation_key = 'RC-9:0:stake_debit'`)).toBe(1);
      expect(await count(`financial_operations WHERE coupon_code = 'RC-9'`)).toBe(1);
      expect(await entriesOf('RC-9:0:stake_debit')).toEqual(['house:EUR=12.34000000', 'pc9=-12.34000000']);
      expect(await balance(t.app, 'pc9')).toBe('87.66');
    });

    it('ten concurrent registrations of different coupons on one account never overdraw it', async () => {
      await deposit(t.app, 'pc10', '50.00');
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) => registerCoupon(coupon(`RC-10-${i}`, 'pc10', '10.00'))),
      );
      expect(results.filter((r) => r.status === 201)).toHaveLength(5);
      expect(results.filter((r) => r.status === 422).map((r) => r.body.error.code)).toEqual(
        Array(5).fill('insufficient_funds'),
      );
      expect(await balance(t.app, 'pc10')).toBe('0.00');
      expect(await count(`coupons WHERE coupon_code LIKE 'RC-10-%'`)).toBe(5);
    });
  });

  describe('reads (§10)', () => {
    it('GET /coupons/:code of an unknown coupon answers 404 not_found', async () => {
      const res = await ops(t.app).get('/coupons/NO-SUCH-COUPON');
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ success: false, error: { code: 'not_found', message: expect.any(String) } });
    });

    it('GET /accounts/:id of an unknown account answers 404 not_found', async () => {
      const res = await ops(t.app).get('/accounts/no-such-player');
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ success: false, error: { code: 'not_found', message: expect.any(String) } });
    });

    it('GET /accounts/house:EUR answers 404: the house account is not a player account', async () => {
      await deposit(t.app, 'pr1', '1.00');
      expect(await count(`accounts WHERE id = 'house:EUR'`)).toBe(1);
      const res = await ops(t.app).get('/accounts/house:EUR');
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ success: false, error: { code: 'not_found', message: expect.any(String) } });
    });
  });

  describe('Swagger (/docs, /docs-json)', () => {
    type Operation = {
      requestBody?: { content: Record<string, { schema?: { $ref?: string } }> };
      responses: Record<
        string,
        {
          content?: Record<string, { example?: unknown; examples?: unknown; schema?: { example?: unknown } }>;
        }
      >;
    };
    type OpenApi = {
      openapi: string;
      paths: Record<string, Record<string, Operation>>;
      components: {
        securitySchemes: Record<string, { type: string; scheme?: string; in?: string; name?: string }>;
        schemas: Record<string, { properties?: Record<string, unknown> }>;
      };
    };
    let doc: OpenApi;
    beforeAll(async () => {
      const res = await http().get('/docs-json');
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      doc = res.body as OpenApi;
    });

    it('lists every endpoint with its method', () => {
      expect(doc.openapi).toMatch(/^3\./);
      expect(Object.keys(doc.paths['/sportapi/callback'] ?? {})).toEqual(['post']);
      expect(doc.paths['/coupons']?.post).toBeDefined();
      expect(doc.paths['/coupons/{coupon_code}']?.get).toBeDefined();
      expect(doc.paths['/accounts/{id}']?.get).toBeDefined();
      expect(doc.paths['/accounts/{id}/adjustments']?.post).toBeDefined();
    });

    it('documents the callback answers of §5, never 201, each with an example', () => {
      const callback = doc.paths['/sportapi/callback'].post;
      expect(Object.keys(callback.responses).sort()).toEqual([
        '200',
        '400',
        '401',
        '409',
        '413',
        '415',
        '503',
      ]);
      expect(callback.responses['201']).toBeUndefined();
      for (const [code, response] of Object.entries(callback.responses)) {
        const content = response.content?.['application/json'];
        const example = content?.example ?? content?.examples ?? content?.schema?.example;
        expect({ code, example: example !== undefined }).toEqual({ code, example: true });
      }
      expect(callback.responses['200'].content?.['application/json'].example).toEqual({
        success: true,
        processed: 2,
      });
      const errorExample = callback.responses['401'].content?.['application/json'].example as {
        success: boolean;
        error: { code: string };
      };
      expect(errorExample).toMatchObject({ success: false, error: { code: 'invalid_signature' } });
    });

    it('describes the callback body with the batch DTO', () => {
      const callback = doc.paths['/sportapi/callback'].post;
      const ref = callback.requestBody?.content['application/json']?.schema?.$ref;
      expect(ref).toBe('#/components/schemas/CallbackBatchDto');
      const schema = doc.components.schemas.CallbackBatchDto;
      expect(Object.keys(schema.properties ?? {}).sort()).toEqual(['batchId', 'couponCount', 'coupons']);
    });

    it('declares the bearer and signature security schemes', () => {
      const schemes = doc.components.securitySchemes;
      expect(Object.values(schemes).some((s) => s.type === 'http' && s.scheme === 'bearer')).toBe(true);
      expect(schemes.signature).toEqual(
        expect.objectContaining({ type: 'apiKey', in: 'header', name: 'X-Signature' }),
      );
    });

    it('serves the Swagger UI at /docs', async () => {
      const res = await http().get('/docs').redirects(1);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.text).toMatch(/swagger/i);
    });
  });

  describe('errors are JSON', () => {
    it('an unknown route answers 404 not_found as JSON', async () => {
      for (const res of [
        await http().get('/no-such-route'),
        await http().post('/no-such-route').send({ a: 1 }),
        await ops(t.app).get('/coupons/PA-1/nothing'),
        await ops(t.app).get('/accounts/pa1/adjustments'),
      ]) {
        expect(res.status).toBe(404);
        expect(res.headers['content-type']).toMatch(/^application\/json/);
        expect(res.body).toEqual({
          success: false,
          error: { code: 'not_found', message: expect.any(String) },
        });
      }
    });

    it('malformed JSON on POST /coupons answers 400 as JSON, not HTML', async () => {
      const res = await http()
        .post('/coupons')
        .set('authorization', `Bearer ${OPS_KEY}`)
        .set('content-type', 'application/json')
        .send('{"coupon_code": "MJ-1", ');
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body).toEqual({
        success: false,
        error: { code: 'malformed_json', message: expect.any(String) },
      });
      expect(res.text).not.toMatch(/<html|<pre|at .*\.js/i);
      expect(await count(`coupons WHERE coupon_code = 'MJ-1'`)).toBe(0);
    });

    it('a body that is not application/json answers 415, nothing written; a zero adjustment names the rule', async () => {
      const plain = await http()
        .post('/coupons')
        .set('authorization', `Bearer ${OPS_KEY}`)
        .set('content-type', 'text/plain')
        .send(JSON.stringify({ coupon_code: 'TP-1', accountId: 'pm1', stake: '1.00', currency: 'EUR' }));
      expect([plain.status, plain.body]).toEqual([
        415,
        {
          success: false,
          error: { code: 'unsupported_media_type', message: 'the request body must be application/json' },
        },
      ]);
      expect(await count(`coupons WHERE coupon_code = 'TP-1'`)).toBe(0);
      const zero = await http()
        .post('/accounts/pm-zero/adjustments')
        .set('authorization', `Bearer ${OPS_KEY}`)
        .set('idempotency-key', 'adj-zero')
        .send({ amount: '0.00', currency: 'EUR', reason: 'nothing' });
      expect([zero.status, zero.body.error.fields]).toEqual([
        400,
        [
          {
            path: 'amount',
            message: 'amount must be a decimal string with at most 2 fraction digits, not zero',
          },
        ],
      ]);
    });

    it('malformed JSON on an adjustment answers 400 as JSON', async () => {
      const res = await http()
        .post('/accounts/pm1/adjustments')
        .set('authorization', `Bearer ${OPS_KEY}`)
        .set('idempotency-key', 'adj-pm1')
        .set('content-type', 'application/json')
        .send('{"amount": 10.00.0}');
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body.error.code).toBe('malformed_json');
    });
  });
});

describe('partner API with several OPS_API_KEYS (§10)', () => {
  const [K1, K2] = ['partner-key-k1-0001', 'partner-key-k2-0002'];
  const t = useTestApp({ OPS_API_KEYS: `${K1},${K2}` });

  it('every configured key is accepted on every endpoint; others are not', async () => {
    const http = () => request(t.app.getHttpServer());
    const dep = await http()
      .post('/accounts/pk1/adjustments')
      .set('authorization', `Bearer ${K1}`)
      .set('idempotency-key', 'adj-pk1')
      .send({ amount: '20.00', currency: 'EUR', reason: 'deposit with k1' });
    expect(dep.status).toBe(201);
    const reg = await http()
      .post('/coupons')
      .set('authorization', `Bearer ${K2}`)
      .send({ coupon_code: 'K-1', accountId: 'pk1', stake: '5.00', currency: 'EUR' });
    expect(reg.status).toBe(201);
    for (const key of [K1, K2]) {
      const account = await http().get('/accounts/pk1').set('authorization', `Bearer ${key}`);
      expect(account.status).toBe(200);
      expect(account.body).toEqual({ id: 'pk1', currency: 'EUR', balance: '15.00' });
      const c = await http().get('/coupons/K-1').set('authorization', `Bearer ${key}`);
      expect(c.status).toBe(200);
      expect(c.body.operations).toEqual([
        { key: 'K-1:0:stake_debit', type: 'stake_debit', generation: 0, amount: '5.00' },
      ]);
    }
    for (const wrong of [OPS_KEY, `${K1},${K2}`, 'partner-key-k3-0003', 'k', K1.toUpperCase()]) {
      const res = await http().get('/accounts/pk1').set('authorization', `Bearer ${wrong}`);
      expect({ wrong, status: res.status }).toEqual({ wrong, status: 401 });
      expect(res.body.error.code).toBe('unauthorized');
    }
  });
});
