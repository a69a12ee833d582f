import { isLosslessNumber, stringify as stringifyLossless } from 'lossless-json';
import { parseBatch } from '../../src/core/settlement/batch-parser.js';
import { DomainException } from '../../src/platform/common/domain.exception.js';

// parseBatch never passes a number through floating point (CONTRACT §3): realWin keeps the digits
// it was sent with, numbers a double cannot hold stay exact in the stored payload, and ambiguous
// JSON (duplicate keys) is refused.

/** One-coupon batch as JSON text; `coupon` is the raw JSON of the coupon's extra members. */
function body(coupon: string, status = '2'): Buffer {
  return Buffer.from(
    `{"batchId":"b-1","couponCount":1,"coupons":[{"coupon_code":"001","status":${status},${coupon}` +
      `"events":[{"uuid":"e-1","status":2}]}]}`,
  );
}

/** Error code and distinct field paths of a refused body. */
function failure(raw: Buffer): { code: string; paths: string[] } {
  try {
    parseBatch(raw, 2);
  } catch (err) {
    const e = err as DomainException;
    return { code: e.code, paths: [...new Set((e.fields ?? []).map((f) => f.path))] };
  }
  throw new Error('expected a failure');
}

describe('parseBatch without floating point (CONTRACT §3)', () => {
  it('realWin 185.499999999999999999 as a JSON number is refused (it is not 185.50)', () => {
    expect(failure(body('"realWin":185.499999999999999999,'))).toEqual({
      code: 'validation_failed',
      paths: ['coupons[0].realWin'],
    });
  });

  it('realWin 0.1000000000000000000001 as a JSON number is refused (more than 2 fraction digits)', () => {
    expect(failure(body('"realWin":0.1000000000000000000001,'))).toEqual({
      code: 'validation_failed',
      paths: ['coupons[0].realWin'],
    });
  });

  it.each([
    ['12.5', '12.50'],
    ['185.50', '185.50'],
    ['7', '7.00'],
    ['9999999999999.99', '9999999999999.99'],
  ])('realWin %s as a JSON number → %s', (json, expected) => {
    expect(parseBatch(body(`"realWin":${json},`), 2).coupons[0].realWin).toBe(expected);
  });

  it('realWin 10.000000000000000001 as a JSON number is refused (a double would make it 10)', () => {
    expect(failure(body('"realWin":10.000000000000000001,'))).toEqual({
      code: 'validation_failed',
      paths: ['coupons[0].realWin'],
    });
  });

  it('unknown numbers too big or too precise for a double are kept as sent; others are JS numbers', () => {
    const parsed = parseBatch(
      body('"realWin":"1.00","big":12345678901234567890,"precise":1.10000000000000000001,"odds":1.85,'),
      2,
    );
    const payload = parsed.coupons[0].payload;
    expect(isLosslessNumber(payload.big)).toBe(true);
    expect(String(payload.big)).toBe('12345678901234567890');
    expect(isLosslessNumber(payload.precise)).toBe(true);
    expect(String(payload.precise)).toBe('1.10000000000000000001');
    expect(payload.odds).toBe(1.85);
    expect(parsed.coupons[0].status).toBe(2);
    const text = stringifyLossless(payload) as string;
    expect(text).toContain('"big":12345678901234567890');
    expect(text).toContain('"precise":1.10000000000000000001');
  });

  it('event fields keep big numbers too', () => {
    const raw = Buffer.from(
      '{"batchId":"b-1","couponCount":1,"coupons":[{"coupon_code":"001","status":1,' +
        '"events":[{"uuid":"e-1","status":1,"id":98765432109876543210}]}]}',
    );
    const event = parseBatch(raw, 2).coupons[0].events[0];
    expect(event.status).toBe(1);
    expect(String(event.payload.id)).toBe('98765432109876543210');
    expect(stringifyLossless(event.payload)).toBe('{"uuid":"e-1","status":1,"id":98765432109876543210}');
  });

  it('a coupon status too big for a double → 400 at coupons[0].status', () => {
    expect(failure(body('"realWin":"1.00",', '12345678901234567890'))).toEqual({
      code: 'validation_failed',
      paths: ['coupons[0].status'],
    });
  });

  it('a coupon status of 2.0000000000000000001 is not taken for WIN (2) → 400 at coupons[0].status', () => {
    expect(failure(body('"realWin":"1.00",', '2.0000000000000000001'))).toEqual({
      code: 'validation_failed',
      paths: ['coupons[0].status'],
    });
  });

  it('an event status too big for a double → 400 at its path', () => {
    const raw = Buffer.from(
      '{"batchId":"b-1","couponCount":1,"coupons":[{"coupon_code":"001","status":1,' +
        '"events":[{"uuid":"e-1","status":98765432109876543210}]}]}',
    );
    expect(failure(raw)).toEqual({ code: 'validation_failed', paths: ['coupons[0].events[0].status'] });
  });

  it('a couponCount too big for a double → 400 at couponCount', () => {
    const raw = Buffer.from(
      '{"batchId":"b-1","couponCount":10000000000000000001,"coupons":[{"coupon_code":"001","status":1,' +
        '"events":[{"uuid":"e-1","status":1}]}]}',
    );
    expect(failure(raw)).toEqual({ code: 'validation_failed', paths: ['couponCount'] });
  });

  it.each([
    ['realWin in a coupon', body('"realWin":"1.00","realWin":"900.00",')],
    [
      'the batchId',
      Buffer.from(
        '{"batchId":"b-1","batchId":"b-2","couponCount":1,"coupons":[{"coupon_code":"001","status":1,' +
          '"events":[{"uuid":"e-1","status":1}]}]}',
      ),
    ],
    [
      'an event status',
      Buffer.from(
        '{"batchId":"b-1","couponCount":1,"coupons":[{"coupon_code":"001","status":1,' +
          '"events":[{"uuid":"e-1","status":1,"status":2}]}]}',
      ),
    ],
  ])('duplicate keys (%s) → 400 malformed_json', (_name, raw) => {
    expect(failure(raw)).toEqual({ code: 'malformed_json', paths: [] });
  });

  it.each([
    [
      'batchId',
      '{"batchId":1e200000,"couponCount":1,"coupons":[{"coupon_code":"001","status":1,"events":[]}]}',
      'batchId',
    ],
    [
      'batchId',
      '{"batchId":95707215400000000001,"couponCount":1,"coupons":[{"coupon_code":"001","status":1,"events":[]}]}',
      'batchId',
    ],
    [
      'coupon_code',
      '{"batchId":"b-1","couponCount":1,"coupons":[{"coupon_code":15707215400000000001,"status":1,"events":[]}]}',
      'coupons[0].coupon_code',
    ],
    [
      'uuid',
      '{"batchId":"b-1","couponCount":1,"coupons":[{"coupon_code":"001","status":1,' +
        '"events":[{"uuid":0.1000000000000000055511151231257827,"status":1}]}]}',
      'coupons[0].events[0].uuid',
    ],
  ])(
    'a %s sent as a JSON number a double cannot hold → 400 at its path (not taken as its digits)',
    (_n, raw, path) => {
      expect(failure(Buffer.from(raw))).toEqual({ code: 'validation_failed', paths: [path] });
    },
  );

  it('__proto__ keys are dropped and change no prototype', () => {
    const raw = Buffer.from(
      '{"batchId":"b-1","couponCount":1,"__proto__":{"polluted":true},"coupons":[{"coupon_code":"001",' +
        '"status":2,"realWin":"5.00","__proto__":{"realWin":"900.00","isAdmin":true},' +
        '"events":[{"uuid":"e-1","status":2,"__proto__":{"status":4}}]}]}',
    );
    const parsed = parseBatch(raw, 2);
    const coupon = parsed.coupons[0];
    expect(coupon.realWin).toBe('5.00');
    expect(Object.getPrototypeOf(coupon.payload)).toBe(Object.prototype);
    expect(Object.prototype.hasOwnProperty.call(coupon.payload, '__proto__')).toBe(false);
    expect((coupon.payload as { isAdmin?: unknown }).isAdmin).toBeUndefined();
    expect(coupon.events[0].status).toBe(2);
    expect(Object.getPrototypeOf(coupon.events[0].payload)).toBe(Object.prototype);
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
    expect(stringifyLossless(coupon.payload)).not.toContain('__proto__');
  });
});
