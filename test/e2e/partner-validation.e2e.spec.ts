import { balance, batchOf, deliver, deposit, ops, register, useTestApp } from '../support/test-app.js';

// The partner API's body and query validation (CONTRACT §10): every field a DTO does not declare
// is refused with 400 validation_failed at its path, keys named like Object.prototype's properties
// included (the validation libraries skip those silently), and nothing is written; each failing
// path is reported once, with the message of its first rule. Exact bodies, balances, row counts.

/** Keys that class-transformer, class-validator or Nest's ValidationPipe used to drop unseen. */
const PROTOTYPE_KEYS = ['constructor', '__proto__', 'prototype', 'toString', 'hasOwnProperty'];

/** The 400 answer of a failed validation with exactly these fields. */
const refused = (...fields: { path: string; message: string }[]) => ({
  success: false,
  error: { code: 'validation_failed', message: 'the request does not match the schema', fields },
});
const unknownField = (path: string) => ({
  path,
  message: `property ${path.replace(/^.*[.\]]/, '')} should not exist`,
});

/** `{...valid fields, "key": value}` as JSON text: `__proto__` survives only as text. */
const withKey = (valid: Record<string, unknown>, key: string, value = '{"amount":"-1000.00"}') =>
  `${JSON.stringify(valid).slice(0, -1)},${JSON.stringify(key)}:${value}}`;

const JSON_TYPE = { 'content-type': 'application/json' };

describe('partner API validation: undeclared fields and one message per path (CONTRACT §10)', () => {
  const t = useTestApp();
  const count = async (sql: string, params: unknown[] = []): Promise<number> =>
    (await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`, params)).rows[0].n;

  describe('a key named like a property of Object.prototype is refused and moves no money', () => {
    it.each(PROTOTYPE_KEYS)('POST /accounts/{id}/adjustments with "%s" at the top level', async (key) => {
      const account = `pv-adj-${key.replace(/_/g, '')}`;
      await deposit(t.app, account, '100.00');
      const idem = `pv-${key.replace(/_/g, '')}`;
      const valid = { amount: '25.00', currency: 'EUR', reason: 'cashier deposit' };
      const res = await ops(t.app).post(`/accounts/${account}/adjustments`, withKey(valid, key), {
        ...JSON_TYPE,
        'idempotency-key': idem,
      });
      expect([res.status, res.body]).toEqual([400, refused(unknownField(key))]);
      expect(await balance(t.app, account)).toBe('100.00');
      expect(await count(`financial_operations WHERE operation_key = $1`, [`adjustment:${idem}`])).toBe(0);
      // Nothing was recorded under the key: the valid body is a first adjustment.
      const ok = await ops(t.app).post(`/accounts/${account}/adjustments`, valid, {
        'idempotency-key': idem,
      });
      expect([ok.status, ok.body.balance]).toEqual([201, '125.00']);
    });

    it.each(PROTOTYPE_KEYS)('"%s" nested in a field is refused at its path', async (key) => {
      await deposit(t.app, 'pv-nested', '100.00');
      const res = await ops(t.app).post(
        '/accounts/pv-nested/adjustments',
        `{"amount":"25.00","currency":"EUR","reason":{${JSON.stringify(key)}:"x"}}`,
        { ...JSON_TYPE, 'idempotency-key': `pv-nested-${key.replace(/_/g, '')}` },
      );
      expect([res.status, res.body]).toEqual([
        400,
        refused(unknownField(`reason.${key}`), { path: 'reason', message: 'reason must be a string' }),
      ]);
      expect(await balance(t.app, 'pv-nested')).toBe('100.00');
    });

    it.each(PROTOTYPE_KEYS)('POST /coupons with "%s": no coupon, no stake debit', async (key) => {
      const account = `pv-cpn-${key.replace(/_/g, '')}`;
      const code = `PV-${key.replace(/_/g, '')}`;
      await deposit(t.app, account, '100.00');
      const valid = { coupon_code: code, accountId: account, stake: '10.00', currency: 'EUR' };
      const res = await ops(t.app).post('/coupons', withKey(valid, key), JSON_TYPE);
      expect([res.status, res.body]).toEqual([400, refused(unknownField(key))]);
      expect(await count(`coupons WHERE coupon_code = $1`, [code])).toBe(0);
      expect(await balance(t.app, account)).toBe('100.00');
    });

    it.each(PROTOTYPE_KEYS)(
      'POST /coupons/{coupon_code}/resolution with "%s": the flagged coupon is not re-settled',
      async (key) => {
        const code = `PVR-${key.replace(/_/g, '')}`;
        const account = `pv-res-${key.replace(/_/g, '')}`;
        await deposit(t.app, account, '100.00');
        await register(t.app, code, account, '10.00');
        await deliver(t.app, batchOf(`pv-b-${code}-1`, { code, status: 2, realWin: '25.00' }));
        await deliver(t.app, batchOf(`pv-b-${code}-2`, { code, status: 2, realWin: '40.00' }));
        expect((await ops(t.app).get(`/coupons/${code}`)).body.needsReview).toBe(true);
        const valid = { realWin: '12.50', reason: 'SportAPI support ticket 4711', resolvedBy: 'jane.doe' };
        const res = await ops(t.app).post(`/coupons/${code}/resolution`, withKey(valid, key), {
          ...JSON_TYPE,
          'idempotency-key': `pv-res-${key.replace(/_/g, '')}`,
        });
        expect([res.status, res.body]).toEqual([400, refused(unknownField(key))]);
        expect(await count(`coupon_resolutions WHERE coupon_code = $1`, [code])).toBe(0);
        expect(await balance(t.app, account)).toBe('115.00');
        expect((await ops(t.app).get(`/coupons/${code}`)).body.needsReview).toBe(true);
      },
    );

    it.each(PROTOTYPE_KEYS)('POST /wallet/pause and /wallet/outbox/{id}/skip with "%s"', async (key) => {
      const pause = await ops(t.app).post(
        '/wallet/pause',
        withKey({ reason: 'maintenance' }, key),
        JSON_TYPE,
      );
      expect([pause.status, pause.body]).toEqual([400, refused(unknownField(key))]);
      expect((await ops(t.app).get('/wallet/status')).body.paused).toBe(false);
      const skip = await ops(t.app).post(
        '/wallet/outbox/1/skip',
        withKey({ reason: 'by hand' }, key),
        JSON_TYPE,
      );
      expect([skip.status, skip.body]).toEqual([400, refused(unknownField(key))]);
    });

    it.each(PROTOTYPE_KEYS)('a "%s" query parameter of a list is refused', async (key) => {
      for (const path of [
        '/callbacks/quarantine',
        '/callbacks/inbox',
        '/wallet/outbox',
        '/callbacks/deliveries',
      ]) {
        const res = await ops(t.app).get(`${path}?limit=5&${key}=1`);
        expect({ path, status: res.status, body: res.body }).toEqual({
          path,
          status: 400,
          body: refused(unknownField(key)),
        });
      }
    });

    it('an ordinary unknown field is still refused beside one of them, each at its path', async () => {
      const res = await ops(t.app).post(
        '/accounts/pv-two/adjustments',
        '{"amount":"1.00","currency":"EUR","reason":"x","foo":1,"constructor":{"name":"x"}}',
        { ...JSON_TYPE, 'idempotency-key': 'pv-two' },
      );
      expect([res.status, res.body]).toEqual([
        400,
        refused(unknownField('constructor'), unknownField('foo')),
      ]);
      expect(await count(`accounts WHERE id = 'pv-two'`)).toBe(0);
    });
  });

  it('the callback still accepts undeclared fields (CONTRACT §3): __proto__ dropped, the others stored', async () => {
    await deposit(t.app, 'pv-cb', '100.00');
    await register(t.app, 'PV-CB', 'pv-cb', '10.00');
    const batch = JSON.stringify(batchOf('pv-cb-1', { code: 'PV-CB', status: 2, realWin: '30.00' })).replace(
      '"coupon_code"',
      '"__proto__":{"realWin":"900.00"},"constructor":{"prototype":{"x":1}},"toString":"t","coupon_code"',
    );
    const res = await deliver(t.app, batch);
    expect([res.status, res.body]).toEqual([200, { success: true, processed: 1 }]);
    expect(await balance(t.app, 'pv-cb')).toBe('120.00');
    const { rows } = await t.db.query(
      `SELECT payload ? '__proto__' AS proto, payload->'constructor' AS c, payload->>'toString' AS s
       FROM coupon_snapshots WHERE batch_id = 'pv-cb-1'`,
    );
    expect(rows).toEqual([{ proto: false, c: { prototype: { x: 1 } }, s: 't' }]);
  });

  describe('each failing path is reported once, with its first rule', () => {
    it('an adjustment without reason: one message for reason', async () => {
      const res = await ops(t.app).post(
        '/accounts/pv-once/adjustments',
        { amount: '1.00', currency: 'EUR' },
        { 'idempotency-key': 'pv-once-1' },
      );
      expect([res.status, res.body]).toEqual([
        400,
        refused({ path: 'reason', message: 'reason must be a string' }),
      ]);
    });

    it('an empty adjustment body: one message per field', async () => {
      const res = await ops(t.app).post(
        '/accounts/pv-once/adjustments',
        {},
        { 'idempotency-key': 'pv-once-2' },
      );
      expect([res.status, res.body]).toEqual([
        400,
        refused(
          {
            path: 'amount',
            message: 'amount must be a decimal string with at most 4 fraction digits, not zero',
          },
          {
            path: 'currency',
            message:
              'currency must be an allowed currency code (3..8 of A-Z 0-9, ISO 4217 or CURRENCY_MINOR_UNITS)',
          },
          { path: 'reason', message: 'reason must be a string' },
        ),
      ]);
    });

    it('an empty or blank reason names the rule it breaks', async () => {
      const empty = await ops(t.app).post(
        '/accounts/pv-once/adjustments',
        { amount: '1.00', currency: 'EUR', reason: '' },
        { 'idempotency-key': 'pv-once-3' },
      );
      expect([empty.status, empty.body]).toEqual([
        400,
        refused({ path: 'reason', message: 'reason must be longer than or equal to 1 characters' }),
      ]);
      const blank = await ops(t.app).post('/wallet/outbox/1/skip', { reason: '   ' });
      expect([blank.status, blank.body]).toEqual([
        400,
        refused({ path: 'reason', message: 'reason must not be blank' }),
      ]);
    });

    it('a skip without reason: one message, not three', async () => {
      const res = await ops(t.app).post('/wallet/outbox/1/skip', {});
      expect([res.status, res.body]).toEqual([
        400,
        refused({ path: 'reason', message: 'reason must be a string' }),
      ]);
    });

    it('an empty resolution: one message per field', async () => {
      const res = await ops(t.app).post(
        '/coupons/PV-NONE/resolution',
        {},
        { 'idempotency-key': 'pv-once-4' },
      );
      expect([res.status, res.body]).toEqual([
        400,
        refused(
          {
            path: 'realWin',
            message: 'realWin must be a decimal string with at most 4 fraction digits, not negative',
          },
          { path: 'reason', message: 'reason must be a string' },
          { path: 'resolvedBy', message: 'resolvedBy must be a string' },
        ),
      ]);
    });

    it('a registration with every field wrong: one message per field', async () => {
      const res = await ops(t.app).post('/coupons', {
        coupon_code: 7,
        accountId: 'a b',
        stake: '-1',
        currency: 'eur',
      });
      expect([res.status, res.body]).toEqual([
        400,
        refused(
          { path: 'coupon_code', message: 'coupon_code must be a string' },
          { path: 'accountId', message: 'accountId must be 1..64 of A-Z a-z 0-9 . _ @ -' },
          {
            path: 'stake',
            message: 'stake must be a decimal string with at most 4 fraction digits, greater than zero',
          },
          {
            path: 'currency',
            message:
              'currency must be an allowed currency code (3..8 of A-Z 0-9, ISO 4217 or CURRENCY_MINOR_UNITS)',
          },
        ),
      ]);
    });

    it('a bad limit names its range once', async () => {
      const res = await ops(t.app).get('/callbacks/quarantine?limit=0');
      expect([res.status, res.body]).toEqual([
        400,
        refused({ path: 'limit', message: 'limit must be an integer from 1 to 200' }),
      ]);
    });

    it.each([
      '/callbacks/quarantine',
      '/callbacks/deliveries',
      '/callbacks/inbox',
      '/wallet/outbox',
      '/coupons',
      '/operator-actions',
    ])('%s pages by the one rule: limit 1..200', async (list) => {
      expect((await ops(t.app).get(`${list}?limit=200`)).status).toBe(200);
      const res = await ops(t.app).get(`${list}?limit=201`);
      expect([res.status, res.body]).toEqual([
        400,
        refused({ path: 'limit', message: 'limit must be an integer from 1 to 200' }),
      ]);
    });
  });
});
