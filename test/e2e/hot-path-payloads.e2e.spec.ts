import {
  balance,
  deliver,
  deposit,
  operations,
  register,
  TestContext,
  useTestApp,
} from '../support/test-app.js';
import { sleep } from '../support/wait.js';

// The inline hot path writes snapshots and bets from the stored body's jsonb when it can
// (CONTRACT §4 step 5). Regression tests of what adversarial testing found there: a valid body
// must never become a 400 because of how its numbers are written (§3: `2.0` is the integer 2;
// unknown fields anywhere are accepted), and new and existing coupons are locked in one ascending
// pass (§4 step 5), so a registration racing a batch cannot deadlock it.

describe('hot path: payloads from the stored body, lock order of new coupons', () => {
  const t = useTestApp();

  it('event status written 2.0 (and 100e-2) is a valid status: 200, credited once, bets stored with statuses 2 and 1', async () => {
    await deposit(t.app, 'hp-1', '100.00');
    await register(t.app, 'HP-1', 'hp-1', '10.00');
    const body =
      '{"batchId":"hp-b1","couponCount":1,"coupons":[{"coupon_code":"HP-1","status":2,"realWin":"50.00",' +
      '"events":[{"uuid":"HP-1-e1","status":2.0},{"uuid":"HP-1-e2","status":100e-2}]}]}';
    const res = await deliver(t.app, body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, processed: 1 });
    expect(await balance(t.app, 'hp-1')).toBe('140.00');
    expect(await operations(t.app, 'HP-1')).toEqual([
      'HP-1:0:final_credit=50.00',
      'HP-1:0:stake_debit=10.00',
    ]);
    const { rows } = await t.db.query(
      `SELECT uuid, status, payload->>'status' AS raw FROM bets WHERE coupon_code = 'HP-1' ORDER BY uuid`,
    );
    expect(rows).toEqual([
      { uuid: 'HP-1-e1', status: 2, raw: '2.0' },
      { uuid: 'HP-1-e2', status: 1, raw: '1.00' },
    ]);
  });

  it('an unknown top-level field PostgreSQL cannot hold as a number (1e1000000) is accepted: 200, applied, payload kept', async () => {
    const body =
      '{"batchId":"hp-b2","couponCount":1,"meta":1e1000000,"coupons":[{"coupon_code":"HP-2","status":1,' +
      '"realWin":null,"events":[{"uuid":"HP-2-e1","status":0}],"note":12345678901234567890.5}]}';
    const res = await deliver(t.app, body);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, processed: 1 });
    const { rows } = await t.db.query(
      `SELECT s.payload->>'note' AS note, (SELECT count(*)::int FROM bets WHERE coupon_code = 'HP-2') AS bets
       FROM coupon_snapshots s WHERE s.batch_id = 'hp-b2'`,
    );
    expect(rows).toEqual([{ note: '12345678901234567890.5', bets: 1 }]);
  });

  it.each([
    ['0e-20000 at the top level', 0, '"x":0e-20000,', '', '', null, null],
    ['0e-20000 in a coupon', 1, '', '"x":0e-20000,', '', '0', null],
    ['0e-20000 in an event', 2, '', '', ',"x":0e-20000', null, '0'],
    ['1e200000 in a coupon', 3, '', '"x":1e200000,', '', '1e200000', null],
    ['-1e-200000 in an event', 4, '', '', ',"x":-1e-200000', null, '-1e-200000'],
  ])(
    'a number PostgreSQL cannot hold (%s) is an unknown field like any other: 200, credited once, kept (as text when not a storable number)',
    async (_name, n, top, inCoupon, inEvent, couponX, eventX) => {
      const code = `HP-X${n}`;
      await deposit(t.app, `hp-x${n}`, '100.00');
      await register(t.app, code, `hp-x${n}`, '10.00');
      const body =
        `{"batchId":"hp-x${n}",${top}"couponCount":1,"coupons":[{"coupon_code":"${code}","status":2,` +
        `${inCoupon}"realWin":"25.00","events":[{"uuid":"${code}-e1","status":2${inEvent}}]}]}`;
      const res = await deliver(t.app, body);
      expect({ status: res.status, body: res.body }).toEqual({
        status: 200,
        body: { success: true, processed: 1 },
      });
      expect(await balance(t.app, `hp-x${n}`)).toBe('115.00');
      expect(await operations(t.app, code)).toEqual([
        `${code}:0:final_credit=25.00`,
        `${code}:0:stake_debit=10.00`,
      ]);
      const { rows } = await t.db.query(
        `SELECT s.payload->>'x' AS coupon_x, b.payload->>'x' AS event_x, b.status,
                convert_from(cb.payload, 'UTF8') AS raw
           FROM coupon_snapshots s JOIN bets b USING (coupon_code) JOIN callback_batches cb ON cb.batch_id = s.batch_id
          WHERE s.batch_id = $1`,
        [`hp-x${n}`],
      );
      expect(rows).toEqual([{ coupon_x: couponX, event_x: eventX, status: 2, raw: body }]);
      // A redelivery is a duplicate: no second credit.
      expect((await deliver(t.app, body)).body).toEqual({ success: true, processed: 1, duplicate: true });
      expect(await balance(t.app, `hp-x${n}`)).toBe('115.00');
    },
  );

  it('a registration inserting a lower new coupon while the batch holds a higher existing one: no deadlock', async () => {
    // HP-9 exists (an earlier batch); HP-3 does not. A registration-like session inserts HP-3 and
    // then locks HP-9, in contract order. The batch (HP-3, HP-9) must wait on HP-3 first.
    expect(
      (await deliver(t.app, { batchId: 'hp-b3', couponCount: 1, coupons: [coupon('HP-9')] })).status,
    ).toBe(200);
    const deadlocksBefore = await deadlocks(t);
    const session = await t.db.connect();
    try {
      await session.query('BEGIN');
      await session.query(`INSERT INTO coupons (coupon_code) VALUES ('HP-3')`);
      const pending = deliver(t.app, {
        batchId: 'hp-b4',
        couponCount: 2,
        coupons: [coupon('HP-9'), coupon('HP-3')],
      });
      const answer = pending.then((r) => r);
      await sleep(300);
      await session.query(`SELECT 1 FROM coupons WHERE coupon_code = 'HP-9' FOR UPDATE`);
      await session.query('COMMIT');
      const res = await answer;
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: true, processed: 2 });
    } finally {
      session.release();
    }
    expect(await deadlocks(t)).toBe(deadlocksBefore);
    const { rows } = await t.db.query(
      `SELECT count(*)::int AS n FROM coupon_snapshots WHERE batch_id = 'hp-b4'`,
    );
    expect(rows).toEqual([{ n: 2 }]);
  });
});

function coupon(code: string) {
  return { coupon_code: code, status: 1, realWin: null, events: [{ uuid: `${code}-e1`, status: 0 }] };
}

async function deadlocks(t: TestContext): Promise<number> {
  const { rows } = await t.db.query<{ n: string }>(
    'SELECT deadlocks::text AS n FROM pg_stat_database WHERE datname = current_database()',
  );
  return Number(rows[0].n);
}
