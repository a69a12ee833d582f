import { opCount } from '../support/rows.js';
import { sleep } from '../support/wait.js';
import {
  DeliveryAnswer,
  fundCoupons,
  portRange,
  post,
  useReceivers,
  verifyLedger,
} from './support/receiver.js';

// CONTRACT §4 (one transaction, consistent lock order, a concurrent duplicate waits and answers
// 200), §5 (never 500), §7 (one operation per key): three receiver processes on one database.

type Coupon = {
  coupon_code: string;
  status: number;
  realWin: string | null;
  events: { uuid: string; status: number }[];
};

function coupon(code: string, status: number, realWin: string | null): Coupon {
  return { coupon_code: code, status, realWin, events: [{ uuid: `${code}-e1`, status }] };
}

function batch(batchId: string, coupons: Coupon[]) {
  return { batchId, couponCount: coupons.length, coupons };
}

describe('three receivers on one database (CONTRACT §4, §5, §7)', () => {
  const suite = useReceivers(portRange(0, 3));
  const { receivers } = suite;
  const answers: DeliveryAnswer[] = [];

  /** Delivers to `url` and, like SportAPI, redelivers after a 503 (or a transport error) until 200. */
  async function deliverRetrying(url: string, body: unknown, attempts = 8): Promise<DeliveryAnswer> {
    for (let i = 0; ; i++) {
      const a = await post(url, body);
      answers.push(a);
      if (a.status === 200 || i + 1 >= attempts || (a.status !== 503 && a.status !== 0)) return a;
      await sleep(50 + Math.random() * 100);
    }
  }

  beforeAll(async () => {
    // Coupon i registered on receiver i % 3.
    await fundCoupons(
      receivers.map((r) => r.url),
      { id: 'p-race', amount: '10000.00', key: 'race-dep', reason: 'race' },
      Array.from({ length: 40 }, (_, i) => `R${String(i).padStart(3, '0')}`),
      '1.00',
    );
  }, 120_000);

  afterAll(() => {
    for (const r of receivers)
      expect(r.output()).not.toMatch(/\b500\b.*Internal|UnhandledPromiseRejection|FATAL/);
  });

  it('the same batch to all three at once (twice each): all 200, one processed, the rest duplicates', async () => {
    for (let round = 0; round < 5; round++) {
      const code = `R${String(round).padStart(3, '0')}`;
      const b = batch(`same-${round}`, [coupon(code, 2, '3.50')]);
      const res = await Promise.all([...receivers, ...receivers].map((r) => post(r.url, b)));
      answers.push(...res);
      expect(res.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
      expect(res.filter((a) => (a.body as { duplicate?: boolean }).duplicate === true)).toHaveLength(5);
      expect(await opCount(suite.db.pool, `${code}:0:final_credit`)).toBe(1);
      const { rows } = await suite.db.pool.query(
        `SELECT outcome, count(*)::int AS n FROM delivery_attempts WHERE batch_id = $1 GROUP BY outcome ORDER BY outcome`,
        [`same-${round}`],
      );
      expect(rows).toEqual([
        { outcome: 'duplicate', n: 5 },
        { outcome: 'processed', n: 1 },
      ]);
    }
  });

  it('overlapping batches with shared coupons in opposite orders: 200 or 503, never 500; one credit per coupon', async () => {
    // Coupons R010..R029 in three batches: ascending, descending and interleaved, all at once on
    // different instances; each coupon settled for the same amount in every batch.
    const codes = Array.from({ length: 20 }, (_, i) => `R${String(10 + i).padStart(3, '0')}`);
    const asc = codes.map((c) => coupon(c, 2, '2.00'));
    const desc = [...asc].reverse();
    const mixed = [...asc.filter((_, i) => i % 2), ...desc.filter((_, i) => i % 2)];
    const first = await Promise.all([
      post(receivers[0].url, batch('ovl-asc', asc)),
      post(receivers[1].url, batch('ovl-desc', desc)),
      post(receivers[2].url, batch('ovl-mixed', mixed)),
    ]);
    answers.push(...first);
    for (const a of first) expect([200, 503]).toContain(a.status);
    // Redeliver what was refused, as SportAPI does.
    const ids = ['ovl-asc', 'ovl-desc', 'ovl-mixed'];
    const bodies = [asc, desc, mixed];
    const final = await Promise.all(
      first.map((a, i) =>
        a.status === 200 ? a : deliverRetrying(receivers[(i + 1) % 3].url, batch(ids[i], bodies[i])),
      ),
    );
    expect(final.map((a) => a.status)).toEqual([200, 200, 200]);
    for (const c of codes) expect(await opCount(suite.db.pool, `${c}:0:final_credit`)).toBe(1);
    const { rows } = await suite.db.pool.query(
      `SELECT count(*)::int AS n, sum(amount)::text AS total FROM financial_operations WHERE coupon_code = ANY($1) AND type = 'final_credit'`,
      [codes],
    );
    expect(rows[0]).toEqual({ n: 20, total: '40.00000000' });
  });

  it('the same final result in different batches at once: one final_credit; a recalculation raced likewise: one debit', async () => {
    const code = 'R030';
    const res = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        deliverRetrying(receivers[i % 3].url, batch(`final-${i}`, [coupon(code, 2, '12.25')])),
      ),
    );
    expect(res.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(await opCount(suite.db.pool, `${code}:0:final_credit`)).toBe(1);
    const recalc = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        deliverRetrying(receivers[i % 3].url, batch(`recalc-${i}`, [coupon(code, 15, '5.00')])),
      ),
    );
    expect(recalc.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
    const { rows } = await suite.db.pool.query(
      `SELECT operation_key, amount::text FROM financial_operations WHERE coupon_code = $1 ORDER BY id`,
      [code],
    );
    expect(rows).toEqual([
      { operation_key: 'R030:0:stake_debit', amount: '1.00000000' },
      { operation_key: 'R030:0:final_credit', amount: '12.25000000' },
      { operation_key: 'R030:1:recalculation_debit', amount: '12.25000000' },
      { operation_key: 'R030:1:final_credit', amount: '5.00000000' },
    ]);
  });

  it('a storm of mixed batches on all three: every answer 200 or 503, one operation per key, ledger verify clean', async () => {
    // 30 batches of 5 coupons drawn from R031..R039, each sent twice to two instances at once.
    const jobs: Promise<DeliveryAnswer>[] = [];
    for (let i = 0; i < 30; i++) {
      // Five distinct coupons: 2 is coprime with 9.
      const picked = [0, 1, 2, 3, 4].map((k) => 31 + ((i + 2 * k) % 9));
      const cs = picked.map((n) =>
        coupon(`R${String(n).padStart(3, '0')}`, i % 4 === 3 ? 15 : 2, i % 4 === 3 ? null : '1.10'),
      );
      const b = batch(`storm-${i}`, i % 2 ? cs.reverse() : cs);
      jobs.push(deliverRetrying(receivers[i % 3].url, b), deliverRetrying(receivers[(i + 1) % 3].url, b));
    }
    const res = await Promise.all(jobs);
    expect(res.filter((a) => a.status !== 200).map((a) => `${a.status} ${a.text}`)).toEqual([]);
    for (const a of answers) expect([200, 503]).toContain(a.status);
    const { rows } = await suite.db.pool.query(
      `SELECT operation_key FROM financial_operations GROUP BY operation_key HAVING count(*) > 1`,
    );
    expect(rows).toEqual([]);
    const report = await verifyLedger(suite.db.url);
    expect(report.violations).toEqual([]);
    expect(report.summary.batches).toBe(5 + 3 + 12 + 30);
  });
});
