import { parseBatch } from '../../src/callbacks/callback-body.pipe.js';
import { DomainException } from '../../src/common/domain.exception.js';

const coupon = (code: string, extra: Record<string, unknown> = {}) => ({
  coupon_code: code,
  status: 2,
  realWin: '10.00',
  events: [{ uuid: `${code}-1`, status: 2 }],
  ...extra,
});
const batch = (over: Record<string, unknown> = {}) => ({
  batchId: 'b-1',
  couponCount: 1,
  coupons: [coupon('001')],
  ...over,
});
const raw = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v));

function failure(v: unknown): { code: string; paths: string[] } {
  try {
    parseBatch(raw(v), 2);
  } catch (err) {
    const e = err as DomainException;
    return { code: e.code, paths: (e.fields ?? []).map((f) => f.path) };
  }
  throw new Error('expected a validation failure');
}

describe('parseBatch (CONTRACT §3, §4 step 2)', () => {
  it('accepts a valid batch, canonicalises realWin and keeps unknown fields', () => {
    const body = {
      batchId: 'b-1',
      couponCount: 2,
      extra: { a: 1 },
      coupons: [
        coupon('000000000272', { realWin: 185.5, note: 'kept' }),
        { coupon_code: '000000000273', status: 1, events: [{ uuid: 'u', status: 0, odds: '1.85' }] },
      ],
    };
    const parsed = parseBatch(raw(body), 2);
    expect(parsed.batchId).toBe('b-1');
    expect(parsed.coupons.map((c) => [c.couponCode, c.realWin])).toEqual([
      ['000000000272', '185.50'],
      ['000000000273', null],
    ]);
    expect(parsed.coupons[0].payload.note).toBe('kept');
    expect(parsed.coupons[1].events[0].payload).toEqual({ uuid: 'u', status: 0, odds: '1.85' });
    expect(parsed.payloadHash).toMatch(/^[0-9a-f]{64}$/);
  });

  it.each([
    ['couponCount mismatch', batch({ couponCount: 2 }), 'validation_failed', ['couponCount']],
    ['empty coupons', batch({ couponCount: 0, coupons: [] }), 'validation_failed', ['coupons']],
    [
      '101 coupons',
      batch({ couponCount: 101, coupons: Array.from({ length: 101 }, (_, i) => coupon(String(i))) }),
      'validation_failed',
      ['coupons'],
    ],
    [
      'duplicate coupon_code',
      batch({ couponCount: 2, coupons: [coupon('1'), coupon('1')] }),
      'validation_failed',
      ['coupons[1].coupon_code'],
    ],
    [
      'duplicate uuid',
      batch({
        coupons: [
          coupon('1', {
            events: [
              { uuid: 'x', status: 1 },
              { uuid: 'x', status: 2 },
            ],
          }),
        ],
      }),
      'validation_failed',
      ['coupons[0].events[1].uuid'],
    ],
    [
      'realWin not a number',
      batch({ coupons: [coupon('1', { realWin: 'abc' })] }),
      'validation_failed',
      ['coupons[0].realWin'],
    ],
    [
      'realWin with 3 decimals',
      batch({ coupons: [coupon('1', { realWin: '1.005' })] }),
      'validation_failed',
      ['coupons[0].realWin'],
    ],
    [
      'negative realWin',
      batch({ coupons: [coupon('1', { realWin: '-1.00' })] }),
      'validation_failed',
      ['coupons[0].realWin'],
    ],
    [
      'realWin an object',
      batch({ coupons: [coupon('1', { realWin: { v: 1 } })] }),
      'validation_failed',
      ['coupons[0].realWin'],
    ],
    ['missing batchId', { couponCount: 1, coupons: [coupon('1')] }, 'validation_failed', ['batchId']],
    ['batchId of 65 chars', batch({ batchId: 'x'.repeat(65) }), 'validation_failed', ['batchId']],
    [
      'coupon_code missing',
      batch({ coupons: [{ status: 2, realWin: '1', events: [] }] }),
      'validation_failed',
      ['coupons[0].coupon_code'],
    ],
    [
      'coupon_code of 33 chars',
      batch({ coupons: [coupon('x'.repeat(33))] }),
      'validation_failed',
      ['coupons[0].coupon_code'],
    ],
    [
      'status a string',
      batch({ coupons: [coupon('1', { status: '2' })] }),
      'validation_failed',
      ['coupons[0].status'],
    ],
    [
      'status beyond int4',
      batch({ coupons: [coupon('1', { status: 2 ** 31 })] }),
      'validation_failed',
      ['coupons[0].status'],
    ],
    [
      'events missing',
      batch({ coupons: [{ coupon_code: '1', status: 1 }] }),
      'validation_failed',
      ['coupons[0].events'],
    ],
    [
      'event uuid missing',
      batch({ coupons: [coupon('1', { events: [{ status: 1 }] })] }),
      'validation_failed',
      ['coupons[0].events[0].uuid'],
    ],
  ])('%s → 400 at the field', (_name, body, code, paths) => {
    const f = failure(body);
    expect(f.code).toBe(code);
    for (const p of paths as string[]) expect(f.paths).toContain(p);
  });

  it.each([
    ['truncated JSON', '{"batchId": "b-9", "couponCount": 1, "coupons": ['],
    ['not JSON', 'hello'],
    ['empty body', ''],
  ])('%s → malformed_json', (_name, text) => {
    expect(failure(text).code).toBe('malformed_json');
  });

  it('invalid UTF-8 → malformed_json', () => {
    expect(() => parseBatch(Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), 2)).toThrow(DomainException);
  });

  it('a JSON array or a string → validation_failed', () => {
    expect(failure('[]').code).toBe('validation_failed');
    expect(failure('"x"').code).toBe('validation_failed');
  });

  it('drops __proto__ keys so no prototype changes', () => {
    const text =
      '{"batchId":"b-1","couponCount":1,"__proto__":{"polluted":1},"coupons":[{"coupon_code":"1","status":2,"realWin":"1","events":[],"__proto__":{"x":1}}]}';
    const parsed = parseBatch(Buffer.from(text), 2);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.getPrototypeOf(parsed.coupons[0].payload)).toBe(Object.prototype);
  });
});
