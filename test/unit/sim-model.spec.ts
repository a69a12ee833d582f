import { buildSequence, parseCurrencies } from '../../sim/generate.js';
import { CouponModel, CouponSnapshot } from '../../sim/model.js';
import {
  canonicalAmount,
  fitsUnits,
  formatCents,
  formatUnits,
  parseCents,
  parseUnits,
} from '../../sim/money.js';
import { Rng } from '../../sim/random.js';

// The simulator's own reference of CONTRACT §6/§7 (sim/model.ts), its cent arithmetic and its
// seeded randomness. The e2e tests compare the model with the receiver; these pin the model.

const snap = (status: number, realWin: string | null = null): CouponSnapshot => ({
  coupon_code: 'M1',
  status,
  realWin,
  events: [{ uuid: 'e1', status }],
});

describe('sim money', () => {
  it('converts between decimal text and cents without floating point', () => {
    expect(parseCents('185.5')).toBe(18550n);
    expect(parseCents('0')).toBe(0n);
    expect(parseCents(12.34)).toBe(1234n);
    expect(parseCents('-0.05')).toBe(-5n);
    expect(() => parseCents('1.999')).toThrow('at most 2 fraction digits');
    expect(formatCents(18550n)).toBe('185.50');
    expect(formatCents(-5n)).toBe('-0.05');
    expect(canonicalAmount('0')).toBe('0.00');
    expect(canonicalAmount(null)).toBeNull();
  });
});

describe('sim model (CONTRACT §6, §7)', () => {
  it('a win, its recalculation without realWin and the new loss (scenario 04)', () => {
    const m = new CouponModel('M1');
    m.register(1000n);
    m.apply(snap(1));
    m.apply(snap(2, '50.00'));
    m.apply(snap(15));
    m.apply(snap(15));
    m.apply(snap(4, '0'));
    expect({ status: m.status, realWin: m.realWin, generation: m.generation, review: m.needsReview }).toEqual(
      {
        status: 4,
        realWin: 0n,
        generation: 1,
        review: false,
      },
    );
    expect(m.operationList()).toEqual([
      'M1:0:final_credit=50.00',
      'M1:0:stake_debit=10.00',
      'M1:1:recalculation_debit=50.00',
    ]);
    expect(m.netCents).toBe(-1000n);
  });

  it('a recalculation carrying realWin settles the new generation at once; a stale pending changes nothing', () => {
    const m = new CouponModel('M1');
    m.register(1000n);
    m.apply(snap(2, '50.00'));
    m.apply(snap(15, '20.00'));
    m.apply(snap(1));
    m.apply(snap(2, '20.00'));
    expect([m.status, m.realWin, m.generation, m.recalculationOpen, m.needsReview]).toEqual([
      2,
      2000n,
      1,
      false,
      false,
    ]);
    expect(m.operationList()).toEqual([
      'M1:0:final_credit=50.00',
      'M1:0:stake_debit=10.00',
      'M1:1:final_credit=20.00',
      'M1:1:recalculation_debit=50.00',
    ]);
    expect(m.netCents).toBe(1000n);
  });

  it('flags a different result in a settled generation, and an unknown status, without money', () => {
    const m = new CouponModel('M1');
    m.apply(snap(2, '50.00'));
    m.apply(snap(2, '60.00'));
    expect([m.status, m.realWin, m.needsReview]).toEqual([2, 5000n, true]);
    const u = new CouponModel('M2');
    u.apply({ ...snap(99), coupon_code: 'M2' });
    expect([u.status, u.realWin, u.needsReview, u.operationList()]).toEqual([99, null, true, []]);
  });
});

describe('sim money and model at several precisions (issue 17, CONTRACT §3)', () => {
  it('reads and writes minor units at any scale without floating point, never rounding', () => {
    expect(parseUnits('1500.00', 0)).toBe(1500n);
    expect(parseUnits('12.345', 3)).toBe(12345n);
    expect(parseUnits('0.00012345', 8)).toBe(12345n);
    expect(parseUnits(12.5, 8)).toBe(1250000000n);
    expect(() => parseUnits('1500.5', 0)).toThrow('at most 0 fraction digits');
    expect(formatUnits(150000n, 2, 0)).toBe('1500');
    expect(formatUnits(150050n, 2, 0)).toBe('1500.5');
    expect(formatUnits(12345n, 8)).toBe('0.00012345');
    expect(formatUnits(-1234500000n, 8, 3)).toBe('-12.345');
    expect([fitsUnits(150000n, 2, 0), fitsUnits(150050n, 2, 0), fitsUnits(1n, 8, 8)]).toEqual([
      true,
      false,
      true,
    ]);
  });

  it('a registered JPY coupon: a finer result is flagged and not paid, the exact one is', () => {
    const m = new CouponModel('J1', 8);
    m.register(parseUnits('1000', 8), 0);
    m.apply(snap(2, '4350.5'));
    expect([m.status, m.settled, m.needsReview, m.operationList()]).toEqual([
      null,
      false,
      true,
      ['J1:0:stake_debit=1000'],
    ]);
    m.apply(snap(2, '4350'));
    expect(m.operationList()).toEqual(['J1:0:final_credit=4350', 'J1:0:stake_debit=1000']);
    expect(m.netCents).toBe(parseUnits('3350', 8));
  });

  it('unregistered: operations wait for the registration, which leaves out the finer ones and flags', () => {
    const m = new CouponModel('K1', 8);
    m.apply(snap(2, '10.0005'));
    m.apply(snap(15, '12.34'));
    m.register(parseUnits('1', 8), 3);
    expect([m.generation, m.settled, m.needsReview, m.show(m.settledAmount as bigint)]).toEqual([
      1,
      true,
      true,
      '12.340',
    ]);
    expect(m.operationList()).toEqual(['K1:0:stake_debit=1.000', 'K1:1:final_credit=12.340']);
    const u = new CouponModel('K2', 8);
    u.apply(snap(2, '10.0005'));
    u.register(parseUnits('1', 8), 3);
    expect([u.settled, u.settledAmount, u.needsReview, u.operationList()]).toEqual([
      false,
      null,
      true,
      ['K2:0:stake_debit=1.000'],
    ]);
  });

  it('builds a multi-currency sequence: accounts in turn, amounts at their precision, the same bytes again', () => {
    const currencies = [
      { code: 'JPY', minorUnits: 0 },
      { code: 'BTC', minorUnits: 8 },
    ];
    const a = buildSequence({ seed: 4, coupons: 40, batches: 6, currencies });
    const b = buildSequence({ seed: 4, coupons: 40, batches: 6, currencies });
    expect(JSON.stringify(a.manifest)).toBe(JSON.stringify(b.manifest));
    expect(a.manifest.accounts.map((x) => x.currency).slice(0, 4)).toEqual(['JPY', 'BTC', 'JPY', 'BTC']);
    for (const c of a.manifest.coupons) {
      if (c.currency === 'JPY') expect(c.stake).toMatch(/^\d+$/);
      else expect(c.stake).toMatch(/^\d+\.\d{8}$/);
    }
    expect(a.manifest.stats.finerThanCurrency).toBeGreaterThan(0);
    expect(() => parseCurrencies('JPY:0,JPY:2')).toThrow('twice');
    expect(() => parseCurrencies('ETH:18')).toThrow('CODE:digits');
  });
});

describe('sim randomness', () => {
  it('repeats its draws for a seed', () => {
    const draw = (seed: number) => {
      const r = new Rng(seed);
      return [r.int(0, 1000), r.int(0, 1000), r.uuid()];
    };
    expect(draw(9)).toEqual(draw(9));
    expect(draw(9)).not.toEqual(draw(10));
    expect(draw(9)[2]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(() => new Rng(-1)).toThrow('seed must be an integer');
  });

  it('builds the same sequence for the same options', () => {
    const a = buildSequence({ seed: 3, coupons: 12, batches: 6 });
    const b = buildSequence({ seed: 3, coupons: 12, batches: 6 });
    expect(a.files.map((f) => f.bytes)).toEqual(b.files.map((f) => f.bytes));
    expect(JSON.stringify(a.manifest)).toBe(JSON.stringify(b.manifest));
    expect(() => buildSequence({ seed: 3, prefix: 'bad prefix' })).toThrow('prefix must be');
  });
});
