import type pg from 'pg';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { TransactionRunner } from '../../src/platform/database/transaction.js';
import { injectTrigger, whileLocked } from '../support/database-faults.js';
import { opCount, rowsOfBatch } from '../support/rows.js';
import {
  balance,
  batchOf,
  deliver,
  deposit,
  expectError,
  fieldPaths,
  operations,
  ops,
  OPS_KEY,
  register,
  useTestApp,
} from '../support/test-app.js';
import { sleep } from '../support/wait.js';

// Regression tests for the fixes of "Fixes from adversarial testing…" (CONTRACT §3–§8, §10):
// operation-key collisions, pg connection loss, session timeouts after migrations, a quarantine
// that cannot be written, concurrent duplicates past the lock timeout, strict partner input,
// the callback path's spelling, numbers that never pass through floating point, and results
// whose status contradicts their amount. Each test fails when its fix is reverted.

/** What a refused or rolled-back batch leaves in {@link rowsOfBatch}: nothing. */
const NOTHING_WRITTEN = { batches: 0, snapshots: 0, operations: 0 };

/** One-coupon batch as JSON text, with `@NAME@` placeholders replaced by raw JSON `raw[NAME]`. */
function rawBatch(batch: unknown, raw: Record<string, string>): string {
  let text = JSON.stringify(batch);
  for (const [name, value] of Object.entries(raw)) {
    const placeholder = `"@${name}@"`;
    if (!text.includes(placeholder)) throw new Error(`no placeholder ${placeholder}`);
    text = text.split(placeholder).join(value);
  }
  return text;
}

describe('hardening fixes (CONTRACT §3–§8, §10)', () => {
  const t = useTestApp();

  // Runs first, before traffic grows the pool: the connection the start-up migrator used is still
  // pooled, and every pooled connection is checked out at once. The timeouts are set by each
  // transaction (SET LOCAL, issue 39), never for a session: the migrator's `SET … = 0` stays on
  // its own pool, and nothing came at connection start (docs/production.md#pgbouncer).
  describe('session timeouts survive the start-up migrations', () => {
    it('every pooled connection runs its transactions under lock_timeout 3s and statement_timeout 5s, its session untouched', async () => {
      const n = t.config.database.dbPoolSize;
      let arrived = 0;
      let all: () => void = () => undefined;
      const together = new Promise<void>((ok) => (all = ok));
      const seen = await Promise.all(
        Array.from({ length: n }, () =>
          t.app.get(TransactionRunner).run(async (tx) => {
            const { rows } = await tx.query<{
              pid: number;
              lock: string;
              statement: string;
            }>(
              `SELECT pg_backend_pid() AS pid, current_setting('lock_timeout') AS lock,
                      current_setting('statement_timeout') AS statement`,
            );
            if (++arrived === n) all();
            await together; // every connection of the pool at once
            return rows[0];
          }),
        ),
      );
      expect(new Set(seen.map((r) => r.pid)).size).toBe(n);
      expect(seen.map((r) => `${r.lock}/${r.statement}`)).toEqual(Array(n).fill('3s/5s'));
      // Outside a transaction nothing of the session was set (SET LOCAL ended with each transaction):
      const after = (await t.app.get(DataSource).query(
        `SELECT string_agg(name || '=' || source, ',' ORDER BY name) AS sources FROM pg_settings
          WHERE name IN ('lock_timeout', 'statement_timeout')`,
      )) as { sources: string }[];
      expect(after[0].sources).not.toMatch(/=(session|client)/);
    });
  });

  describe('operation-key collisions (§7, §10)', () => {
    it('an Idempotency-Key shaped like a coupon operation key is refused: 400 idempotency_key_required', async () => {
      const res = await ops(t.app).post(
        '/accounts/p/adjustments',
        { amount: '5.00', currency: 'EUR', reason: 'collision attempt' },
        { 'idempotency-key': 'X:0:stake_debit' },
      );
      expectError(res, 400, 'idempotency_key_required');
      expect(await opCount(t.db, 'adjustment:X:0:stake_debit')).toBe(0);
      expect(
        (await t.db.query(`SELECT 1 FROM account_adjustments WHERE idempotency_key = 'X:0:stake_debit'`))
          .rowCount,
      ).toBe(0);
      expect((await ops(t.app).get('/accounts/p')).status).toBe(404);
    });

    it.each([
      { name: 'another account', code: 'CK', account: 'rogue-ck', amount: '25.00' },
      { name: 'another amount', code: 'CK2', account: 'p-ck2', amount: '1.00' },
    ])(
      'an existing $code:0:final_credit of $name makes the batch 503 and nothing of it is kept',
      async ({ code, account, amount }) => {
        const player = `p-${code.toLowerCase()}`;
        await deposit(t.app, player, '50.00');
        await register(t.app, code, player, '10.00');
        expect(await balance(t.app, player)).toBe('40.00');
        // A foreign operation already holds the key the coupon's final credit will use.
        await t.db.query(
          `INSERT INTO accounts (id, kind, currency) VALUES ($1, 'player', 'EUR'), ('house:EUR', 'house', 'EUR')
           ON CONFLICT (id) DO NOTHING`,
          [account],
        );
        await t.db.query(
          `INSERT INTO financial_operations (operation_key, type, coupon_code, generation, account_id, amount, currency)
           VALUES ($1, 'final_credit', $2, 0, $3, $4, 'EUR')`,
          [`${code}:0:final_credit`, code, account, amount],
        );
        const batchId = `b-${code}-win`;
        const res = await deliver(t.app, batchOf(batchId, { code, status: 2, realWin: '25.00' }));
        expectError(res, 503, 'transient_failure');
        expect(await rowsOfBatch(t.db, batchId)).toEqual(NOTHING_WRITTEN);
        expect(
          (await t.db.query(`SELECT 1 FROM coupon_snapshots WHERE coupon_code = $1`, [code])).rowCount,
        ).toBe(0);
        expect(await balance(t.app, player)).toBe('40.00');
        const coupon = (await ops(t.app).get(`/coupons/${code}`)).body;
        expect(coupon).toMatchObject({ status: null, realWin: null, settled: false });
        expect(await opCount(t.db, `${code}:0:final_credit`)).toBe(1);
      },
    );
  });

  describe('a signed 400 that cannot be quarantined (§8)', () => {
    it('is answered 503 while the quarantine is locked, 400 and kept once afterwards', async () => {
      const body = JSON.stringify({
        ...batchOf('b-quarantine-locked', { code: 'QL-1', status: 2, realWin: '5.00' }),
        couponCount: 2,
      });
      const quarantined = async () =>
        (
          await t.db.query(`SELECT count(*)::int AS n FROM quarantined_bodies WHERE body = $1`, [
            Buffer.from(body),
          ])
        ).rows[0].n as number;
      await whileLocked(t.db, 'LOCK TABLE quarantined_bodies IN ACCESS EXCLUSIVE MODE', async () => {
        const started = Date.now();
        const res = await deliver(t.app, body);
        expectError(res, 503, 'transient_failure');
        expect(Date.now() - started).toBeLessThan(3500);
      });
      expect(await quarantined()).toBe(0);
      const again = await deliver(t.app, body);
      expectError(again, 400, 'validation_failed');
      expect(fieldPaths(again)).toEqual(['couponCount']);
      expect(await quarantined()).toBe(1);
    }, 20_000);
  });

  describe('partner API input must be exact and storable (§10)', () => {
    const adjust = (account: string, body: unknown, key: string) =>
      ops(t.app).post(`/accounts/${account}/adjustments`, body, { 'idempotency-key': key });

    it.each([' 5.00', '5.00 ', '\t5', '5\n'])('adjustment amount %j → 400 at amount', async (amount) => {
      const res = await adjust('p-strict', { amount, currency: 'EUR', reason: 'strict' }, 'strict-amount');
      expectError(res, 400, 'validation_failed');
      expect(fieldPaths(res)).toEqual(['amount']);
    });

    it('coupon stake " 10" → 400 at stake, nothing registered', async () => {
      await deposit(t.app, 'p-stake-ws', '50.00');
      const res = await ops(t.app).post('/coupons', {
        coupon_code: 'STAKE-WS',
        accountId: 'p-stake-ws',
        stake: ' 10',
        currency: 'EUR',
      });
      expectError(res, 400, 'validation_failed');
      expect(fieldPaths(res)).toEqual(['stake']);
      expect((await ops(t.app).get('/coupons/STAKE-WS')).status).toBe(404);
      expect(await balance(t.app, 'p-stake-ws')).toBe('50.00');
    });

    it('an adjustment reason containing U+0000 → 400 at reason, no money', async () => {
      const res = await adjust(
        'p-nul-reason',
        { amount: '5.00', currency: 'EUR', reason: 'cash\u0000desk' },
        'nul-reason',
      );
      expectError(res, 400, 'validation_failed');
      expect(fieldPaths(res)).toEqual(['reason']);
      expect((await ops(t.app).get('/accounts/p-nul-reason')).status).toBe(404);
    });

    it.each([
      ['U+0000', 'NUL\u0000CODE'],
      ['a lone surrogate', 'LONE\ud800'],
    ])('a coupon_code with %s → 400 at coupon_code, nothing registered', async (_name, code) => {
      await deposit(t.app, 'p-bad-code', '50.00');
      const res = await ops(t.app).post('/coupons', {
        coupon_code: code,
        accountId: 'p-bad-code',
        stake: '10.00',
        currency: 'EUR',
      });
      expectError(res, 400, 'validation_failed');
      expect(fieldPaths(res)).toEqual(['coupon_code']);
      expect(await balance(t.app, 'p-bad-code')).toBe('50.00');
      expect((await t.db.query(`SELECT 1 FROM coupons WHERE account_id = 'p-bad-code'`)).rowCount).toBe(0);
    });

    it('GET /coupons/a%00b → 400, not 500', async () => {
      const res = await ops(t.app).get('/coupons/a%00b');
      expectError(res, 400, 'validation_failed');
    });

    it('GET /callbacks/batches/{%00, a%00b, x%00} 10 times each → 30 × 400 validation_failed at batchId', async () => {
      const answers: string[] = [];
      for (let i = 0; i < 10; i++)
        for (const id of ['%00', 'a%00b', 'hx-b1%00']) {
          const res = await ops(t.app).get(`/callbacks/batches/${id}`);
          expectError(res, 400, 'validation_failed');
          answers.push(`${res.status} ${fieldPaths(res).join(',')}`);
        }
      expect(answers).toEqual(Array.from({ length: 30 }, () => '400 batchId'));
    });

    it('GET /callbacks/batches/ of 129 characters → 400 validation_failed; of 128 unknown → 404', async () => {
      // 128: the stored batch ids' limit (synthetic poll:/resolution: batches are longer than 64).
      expectError(await ops(t.app).get(`/callbacks/batches/${'b'.repeat(129)}`), 400, 'validation_failed');
      expectError(await ops(t.app).get(`/callbacks/batches/${'b'.repeat(128)}`), 404, 'not_found');
    });

    it('a coupon_code of 17 × "❤️" (34 code points, over 32) → 400, not 500; nothing registered', async () => {
      await deposit(t.app, 'p-hearts', '50.00');
      const code = '❤️'.repeat(17);
      expect([...code]).toHaveLength(34);
      const res = await ops(t.app).post('/coupons', {
        coupon_code: code,
        accountId: 'p-hearts',
        stake: '10.00',
        currency: 'EUR',
      });
      expectError(res, 400, 'validation_failed');
      expect(await balance(t.app, 'p-hearts')).toBe('50.00');
      expect((await t.db.query(`SELECT 1 FROM coupons WHERE account_id = 'p-hearts'`)).rowCount).toBe(0);
    });
  });

  describe('the callback path is matched like Express routes (§3)', () => {
    it.each([
      ['/SPORTAPI/CALLBACK', 'PATH-UPPER'],
      ['/SportApi/Callback/', 'PATH-MIXED-SLASH'],
      ['/sportapi/callback/', 'PATH-SLASH'],
    ])('POST %s with a signed batch → 200 and applied once', async (path, code) => {
      const player = `p-${code.toLowerCase()}`;
      await deposit(t.app, player, '20.00');
      await register(t.app, code, player, '10.00');
      const body = JSON.stringify(batchOf(`b-${code}`, { code, status: 2, realWin: '15.00' }));
      const res = await deliver(t.app, body, { path });
      expect(res.status).toBe(200);
      expect(res.body).toStrictEqual({ success: true, processed: 1 });
      expect(await operations(t.app, code)).toEqual([
        `${code}:0:final_credit=15.00`,
        `${code}:0:stake_debit=10.00`,
      ]);
      expect(await balance(t.app, player)).toBe('25.00');
      expect((await deliver(t.app, body)).body).toStrictEqual({
        success: true,
        processed: 1,
        duplicate: true,
      });
      expect(await balance(t.app, player)).toBe('25.00');
    });
  });

  describe('numbers never pass through floating point (§3)', () => {
    it('realWin 185.499999999999999999 as a JSON number → 400 at coupons[0].realWin, nothing paid', async () => {
      await deposit(t.app, 'p-num-1', '20.00');
      await register(t.app, 'NUM-1', 'p-num-1', '10.00');
      const body = rawBatch(batchOf('b-num-1', { code: 'NUM-1', status: 2, realWin: '@RW@' }), {
        RW: '185.499999999999999999',
      });
      expect(body).toContain('"realWin":185.499999999999999999');
      const res = await deliver(t.app, body);
      expectError(res, 400, 'validation_failed');
      expect(fieldPaths(res)).toEqual(['coupons[0].realWin']);
      expect(await rowsOfBatch(t.db, 'b-num-1')).toEqual(NOTHING_WRITTEN);
      expect(await balance(t.app, 'p-num-1')).toBe('10.00');
    });

    it('realWin 12.5 as a JSON number → 12.50 credited', async () => {
      await deposit(t.app, 'p-num-2', '20.00');
      await register(t.app, 'NUM-2', 'p-num-2', '10.00');
      const res = await deliver(t.app, batchOf('b-num-2', { code: 'NUM-2', status: 2, realWin: 12.5 }));
      expect(res.status).toBe(200);
      expect((await ops(t.app).get('/coupons/NUM-2')).body.realWin).toBe('12.50');
      expect(await operations(t.app, 'NUM-2')).toEqual([
        'NUM-2:0:final_credit=12.50',
        'NUM-2:0:stake_debit=10.00',
      ]);
      expect(await balance(t.app, 'p-num-2')).toBe('22.50');
    });

    it('unknown big and precise numbers are stored and shown exactly as sent', async () => {
      const batch = {
        batchId: 'b-num-3',
        couponCount: 1,
        coupons: [
          {
            coupon_code: 'NUM-3',
            status: 1,
            realWin: null,
            big: '@BIG@',
            precise: '@PRECISE@',
            events: [{ uuid: 'NUM-3-e1', status: 1, big: '@BIG@', precise: '@PRECISE@', odds: 1.85 }],
          },
        ],
      };
      const body = rawBatch(batch, { BIG: '12345678901234567890', PRECISE: '1.10000000000000000001' });
      const res = await deliver(t.app, body);
      expect(res.status).toBe(200);
      const { rows } = await t.db.query(
        `SELECT payload->>'big' AS big, (payload->'big')::text AS big_json,
                (payload->'precise')::text AS precise FROM coupon_snapshots WHERE batch_id = 'b-num-3'`,
      );
      expect(rows).toEqual([
        { big: '12345678901234567890', big_json: '12345678901234567890', precise: '1.10000000000000000001' },
      ]);
      const bet = await t.db.query(
        `SELECT (payload->'big')::text AS big, (payload->'precise')::text AS precise, (payload->'odds')::text AS odds
         FROM bets WHERE coupon_code = 'NUM-3'`,
      );
      expect(bet.rows).toEqual([
        { big: '12345678901234567890', precise: '1.10000000000000000001', odds: '1.85' },
      ]);
      const view = await ops(t.app).get('/coupons/NUM-3');
      expect(view.status).toBe(200);
      expect(view.text).toMatch(/"big":12345678901234567890[,}]/);
      expect(view.text).toMatch(/"precise":1\.10000000000000000001[,}]/);
      expect(view.text).toMatch(/"odds":1\.85[,}]/);
      expect(view.headers['content-type']).toMatch(/^application\/json/);
      // Registering the coupon answers the same view, digits intact.
      await deposit(t.app, 'p-num-3', '20.00');
      const registered = await register(t.app, 'NUM-3', 'p-num-3', '10.00');
      expect(registered.status).toBe(201);
      expect(registered.text).toMatch(/"big":12345678901234567890[,}]/);
      expect(registered.text).toMatch(/"precise":1\.10000000000000000001[,}]/);
    });

    it('status 12345678901234567890 → 400 at coupons[0].status', async () => {
      const body = rawBatch(batchOf('b-num-4', { code: 'NUM-4', status: 1 }), {});
      const res = await deliver(
        t.app,
        body.replace('"status":1,"realWin"', '"status":12345678901234567890,"realWin"'),
      );
      expectError(res, 400, 'validation_failed');
      expect(fieldPaths(res)).toEqual(['coupons[0].status']);
      expect(await rowsOfBatch(t.db, 'b-num-4')).toEqual(NOTHING_WRITTEN);
    });

    it('status 2.0000000000000000001 is not taken for WIN → 400 at coupons[0].status, nothing paid', async () => {
      await deposit(t.app, 'p-num-4b', '20.00');
      await register(t.app, 'NUM-4B', 'p-num-4b', '10.00');
      const body = JSON.stringify(batchOf('b-num-4b', { code: 'NUM-4B', status: 2, realWin: '50.00' }));
      const res = await deliver(
        t.app,
        body.replace('"status":2,"realWin"', '"status":2.0000000000000000001,"realWin"'),
      );
      expectError(res, 400, 'validation_failed');
      expect(fieldPaths(res)).toEqual(['coupons[0].status']);
      expect(await rowsOfBatch(t.db, 'b-num-4b')).toEqual(NOTHING_WRITTEN);
      expect(await balance(t.app, 'p-num-4b')).toBe('10.00');
    });

    it('duplicate keys in a coupon → 400 malformed_json, nothing paid', async () => {
      await deposit(t.app, 'p-num-5', '20.00');
      await register(t.app, 'NUM-5', 'p-num-5', '10.00');
      const body =
        '{"batchId":"b-num-5","couponCount":1,"coupons":[{"coupon_code":"NUM-5","status":2,' +
        '"realWin":"1.00","realWin":"900.00","events":[{"uuid":"NUM-5-e1","status":2}]}]}';
      const res = await deliver(t.app, body);
      expectError(res, 400, 'malformed_json');
      expect(await rowsOfBatch(t.db, 'b-num-5')).toEqual(NOTHING_WRITTEN);
      expect(await operations(t.app, 'NUM-5')).toEqual(['NUM-5:0:stake_debit=10.00']);
      expect(await balance(t.app, 'p-num-5')).toBe('10.00');
    });

    it('a __proto__ key is dropped and changes no prototype', async () => {
      await deposit(t.app, 'p-num-6', '20.00');
      await register(t.app, 'NUM-6', 'p-num-6', '10.00');
      const body =
        '{"batchId":"b-num-6","couponCount":1,"__proto__":{"polluted":true},"coupons":[{"coupon_code":"NUM-6",' +
        '"status":2,"realWin":"5.00","__proto__":{"realWin":"900.00"},' +
        '"events":[{"uuid":"NUM-6-e1","status":2,"__proto__":{"status":4}}]}]}';
      const res = await deliver(t.app, body);
      expect(res.status).toBe(200);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect(await operations(t.app, 'NUM-6')).toEqual([
        'NUM-6:0:final_credit=5.00',
        'NUM-6:0:stake_debit=10.00',
      ]);
      const { rows } = await t.db.query(
        `SELECT payload ? '__proto__' AS has_proto FROM coupon_snapshots WHERE batch_id = 'b-num-6'`,
      );
      expect(rows).toEqual([{ has_proto: false }]);
    });
  });

  describe('a status contradicting its amount is not paid (§6)', () => {
    it.each([
      {
        name: 'WIN with realWin 0 → needs review (inconsistent_result), no final_credit',
        code: 'INC-1',
        status: 2,
        realWin: '0',
        view: { needsReview: true, reviewReason: 'inconsistent_result', settled: false },
      },
      {
        name: 'LOSS with realWin 50.00 → needs review (inconsistent_result), balance unchanged',
        code: 'INC-2',
        status: 4,
        realWin: '50.00',
        view: { needsReview: true, reviewReason: 'inconsistent_result', settled: false },
      },
      {
        name: 'REFUND with realWin 0 → settled for 0, no money, not flagged',
        code: 'INC-3',
        status: 3,
        realWin: '0',
        view: { status: 3, realWin: '0.00', settled: true, needsReview: false, reviewReason: null },
      },
    ])('$name', async ({ code, status, realWin, view }) => {
      const player = `p-${code.toLowerCase()}`;
      await deposit(t.app, player, '20.00');
      await register(t.app, code, player, '10.00');
      const res = await deliver(t.app, batchOf(`b-${code.toLowerCase()}`, { code, status, realWin }));
      expect(res.status).toBe(200);
      expect((await ops(t.app).get(`/coupons/${code}`)).body).toMatchObject(view);
      expect(await operations(t.app, code)).toEqual([`${code}:0:stake_debit=10.00`]);
      expect(await balance(t.app, player)).toBe('10.00');
    });
  });

  // Last in this app: it terminates the app's database connections.
  describe('database connections terminated by the server (§5)', () => {
    it('do not crash the process; the next deliveries succeed and credit exactly once', async () => {
      await deposit(t.app, 'p-term', '20.00');
      await register(t.app, 'TERM-1', 'p-term', '10.00');
      expect((await deliver(t.app, batchOf('b-term-0', { code: 'TERM-0', status: 1 }))).status).toBe(200);
      // Connections checked out of the pool and idle between statements: one through a TypeORM
      // query runner, one straight from the pg pool (as between pool hand-overs), which only the
      // receiver's own permanent 'error' listener covers. Without it the termination below would
      // emit an unhandled 'error' and end the process.
      const ds = t.app.get(DataSource);
      const held = ds.createQueryRunner();
      await held.connect();
      await held.query('SELECT 1');
      const pool = (ds.driver as unknown as { master: pg.Pool }).master;
      const raw = await pool.connect();
      try {
        expect(raw.listenerCount('error')).toBeGreaterThan(0);
        await raw.query('SELECT 1');
        const killed = await t.db.query(
          `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
           WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name = 'settlement-receiver'`,
        );
        expect(killed.rows.length).toBeGreaterThanOrEqual(2);
        expect(killed.rows.every((r) => r.ok === true)).toBe(true);
        await sleep(300);
        await expect(raw.query('SELECT 1')).rejects.toThrow();
      } finally {
        raw.release(true);
        await held.release().catch(() => undefined);
      }
      expect(
        (
          await t.db.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'settlement-receiver'`,
          )
        ).rows[0].n,
      ).toBe(0);

      const batch = batchOf('b-term-1', { code: 'TERM-1', status: 2, realWin: '30.00' });
      const statuses: number[] = [];
      for (let i = 0; i < 5 && statuses[statuses.length - 1] !== 200; i++) {
        const res = await deliver(t.app, batch);
        statuses.push(res.status);
        if (res.status !== 200) expectError(res, 503, 'transient_failure');
      }
      expect(statuses[statuses.length - 1]).toBe(200);
      expect((await deliver(t.app, batch)).body).toStrictEqual({
        success: true,
        processed: 1,
        duplicate: true,
      });
      expect(await operations(t.app, 'TERM-1')).toEqual([
        'TERM-1:0:final_credit=30.00',
        'TERM-1:0:stake_debit=10.00',
      ]);
      expect(await balance(t.app, 'p-term')).toBe('40.00');
    }, 30_000);
  });
});

describe('a concurrent duplicate waits past the lock timeout (§4 step 4)', () => {
  const t = useTestApp({ DB_LOCK_TIMEOUT_MS: '300' });

  it('both deliveries answer 200, one of them as the duplicate, one final_credit', async () => {
    await deposit(t.app, 'p-slow', '20.00');
    await register(t.app, 'SLOW-1', 'p-slow', '10.00');
    const remove = await injectTrigger(
      t.db,
      'slow_snapshot',
      'coupon_snapshots',
      `IF NEW.coupon_code = 'SLOW-1' THEN PERFORM pg_sleep(1.2); END IF;`,
    );
    try {
      const batch = batchOf('b-slow-1', { code: 'SLOW-1', status: 2, realWin: '30.00' });
      const [a, b] = await Promise.all([deliver(t.app, batch), deliver(t.app, batch)]);
      expect([a.status, b.status]).toEqual([200, 200]);
      expect([a.body, b.body].filter((x) => x.duplicate !== true)).toStrictEqual([
        { success: true, processed: 1 },
      ]);
      expect([a.body, b.body].filter((x) => x.duplicate === true)).toStrictEqual([
        { success: true, processed: 1, duplicate: true },
      ]);
      expect(await opCount(t.db, 'SLOW-1:0:final_credit')).toBe(1);
      expect(await operations(t.app, 'SLOW-1')).toEqual([
        'SLOW-1:0:final_credit=30.00',
        'SLOW-1:0:stake_debit=10.00',
      ]);
      expect(await balance(t.app, 'p-slow')).toBe('40.00');
    } finally {
      await remove();
    }
  }, 20_000);
});

// Second adversarial round: deep nesting, unstorable text in parser messages, duplicate keys on
// the partner API, the charset spelled utf8, and admission control under a burst of large bodies.
describe('second hardening round (CONTRACT §3, §5, §8, §10)', () => {
  const t = useTestApp({ CALLBACK_MAX_INFLIGHT_BYTES: '4096' });

  /** `reason:http_status` of the quarantine rows holding exactly these bytes. */
  const quarantined = async (body: string) => {
    const { rows } = await t.db.query(`SELECT reason, http_status FROM quarantined_bodies WHERE body = $1`, [
      Buffer.from(body),
    ]);
    return rows.map((r) => `${r.reason}:${r.http_status}`);
  };

  it('an unknown field nested deeper than 32 levels → 400 malformed_json, quarantined (not 503 forever)', async () => {
    const body = `{"batchId":"deep-1","couponCount":1,"coupons":[{"coupon_code":"DEEP1","status":1,"realWin":null,"x":${'['.repeat(3000)}1${']'.repeat(3000)},"events":[]}]}`;
    const res = await deliver(t.app, body);
    expectError(res, 400, 'malformed_json');
    expect(await quarantined(body)).toEqual(['malformed_json:400']);
    expect(await rowsOfBatch(t.db, 'deep-1')).toEqual(NOTHING_WRITTEN);
  });

  it('32 levels of nesting are still accepted', async () => {
    // batch object (1) > coupons array (2) > coupon (3) > x: 29 nested arrays → depth 32
    const body = `{"batchId":"deep-2","couponCount":1,"coupons":[{"coupon_code":"DEEP2","status":1,"realWin":null,"x":${'['.repeat(29)}1${']'.repeat(29)},"events":[]}]}`;
    expect((await deliver(t.app, body)).status).toBe(200);
  });

  it.each([
    [
      'a duplicate key named \\u0000',
      '{"batchId":"nul-1","couponCount":1,"coupons":[{"coupon_code":"NUL1","status":1,"events":[],"\\u0000":1,"\\u0000":2}]}',
    ],
    [
      'a duplicate key named \\ud800',
      '{"batchId":"nul-2","couponCount":1,"coupons":[{"coupon_code":"NUL2","status":1,"events":[],"\\ud800":1,"\\ud800":2}]}',
    ],
  ])('%s → 400 and quarantined (the parser message is stored with U+FFFD)', async (_name, body) => {
    const res = await deliver(t.app, body);
    expectError(res, 400, 'malformed_json');
    expect(await quarantined(body)).toEqual(['malformed_json:400']);
  });

  it('a raw NUL byte inside a string → 400 and quarantined', async () => {
    const body = Buffer.concat([
      Buffer.from('{"batchId":"b1'),
      Buffer.from([0]),
      Buffer.from('","couponCount":1,"coupons":[]}'),
    ]);
    const res = await deliver(t.app, body);
    expectError(res, 400, 'malformed_json');
    const { rows } = await t.db.query(`SELECT count(*)::int AS n FROM quarantined_bodies WHERE body = $1`, [
      body,
    ]);
    expect(rows[0].n).toBe(1);
  });

  it('partner API: duplicate keys → 400 (not last-wins), deep nesting → 400 (not 500)', async () => {
    await deposit(t.app, 'pdup', '100.00');
    const dup = await request(t.app.getHttpServer())
      .post('/accounts/pdup/adjustments')
      .set('authorization', `Bearer ${OPS_KEY}`)
      .set('idempotency-key', 'dup-1')
      .set('content-type', 'application/json')
      .send('{"amount":"1.00","amount":"-90.00","currency":"EUR","reason":"r"}');
    expectError(dup, 400, 'malformed_json');
    expect(await balance(t.app, 'pdup')).toBe('100.00');
    const deep = await request(t.app.getHttpServer())
      .post('/coupons')
      .set('authorization', `Bearer ${OPS_KEY}`)
      .set('content-type', 'application/json')
      .send(
        `{"coupon_code":"D","accountId":"pdup","stake":"1.00","currency":"EUR","x":${'['.repeat(2000)}${']'.repeat(2000)}}`,
      );
    expectError(deep, 400, 'malformed_json');
  });

  it('partner API: an amount sent as a JSON number is refused as a decimal string (400)', async () => {
    const res = await ops(t.app).post(
      '/accounts/pnum/adjustments',
      { amount: 10.5, currency: 'EUR', reason: 'r' },
      { 'idempotency-key': 'num-1' },
    );
    expectError(res, 400, 'validation_failed');
    expect(fieldPaths(res)).toEqual(['amount']);
  });

  it('Content-Type charset=utf8 (no hyphen) is accepted', async () => {
    const body = JSON.stringify(batchOf('utf8-1', { code: 'UTF8', status: 1 }));
    const res = await deliver(t.app, body, { headers: { 'content-type': 'application/json; charset=utf8' } });
    expect(res.status).toBe(200);
  });

  it('admission: bodies beyond CALLBACK_MAX_INFLIGHT_BYTES at once → 503 transient_failure at once, the rest 200', async () => {
    // 4 KiB in flight at most: two ~3 KiB batches sent together → one is processed, one refused.
    const big = (n: number) => ({
      batchId: `adm-${n}`,
      couponCount: 1,
      coupons: [
        {
          coupon_code: `ADM${n}`,
          status: 1,
          realWin: null,
          events: [{ uuid: 'e', status: 0 }],
          pad: 'x'.repeat(3000),
        },
      ],
    });
    const answers = await Promise.all([deliver(t.app, big(1)), deliver(t.app, big(2))]);
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 503]);
    const refused = answers.find((r) => r.status === 503) as request.Response;
    expectError(refused, 503, 'transient_failure');
    // Once the first is done, the refused one goes through on redelivery.
    const again = refused === answers[0] ? big(1) : big(2);
    expect((await deliver(t.app, again)).status).toBe(200);
  });
});
