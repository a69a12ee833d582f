import fc from 'fast-check';
import { batchIdHint, parseBatch, readValidBatch } from '../../src/core/settlement/batch-parser.js';
import { DomainException } from '../../src/platform/common/domain.exception.js';

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

  it.each([
    ['an array', []],
    ['null', null],
    ['a number', 1],
    ['a string', 'x'],
  ])('a coupon or an event that is %s → validation_failed at its path, not an exception', (_name, item) => {
    expect(failure(batch({ couponCount: 2, coupons: [coupon('001'), item] }))).toEqual({
      code: 'validation_failed',
      paths: ['coupons[1]'],
    });
    expect(
      failure(batch({ coupons: [coupon('001', { events: [{ uuid: 'u', status: 1 }, item] })] })),
    ).toEqual({
      code: 'validation_failed',
      paths: ['coupons[0].events[1]'],
    });
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

// The compiled check (readValidBatch) decides the hot path; the DTO decides everything it does not
// accept. A body the compiled check accepts must be one the DTO accepts, with the same result.
describe('compiled check and DTO agree (CONTRACT §3)', () => {
  const outcome = (text: string, compiled: boolean) => {
    try {
      const b = parseBatch(Buffer.from(text), 2, { compiled });
      return { ok: true, batchId: b.batchId, couponCount: b.couponCount, coupons: b.coupons };
    } catch (err) {
      const e = err as DomainException;
      return { ok: false, code: e.code, message: e.message, fields: e.fields };
    }
  };

  it('a typical batch is accepted by the compiled check itself', () => {
    const body = batch({
      couponCount: 2,
      coupons: [coupon('000000000272', { realWin: 185.5 }), coupon('000000000273', { realWin: null })],
    });
    const compiled = readValidBatch(JSON.parse(JSON.stringify(body)), 2);
    expect(compiled).toEqual({
      batchId: 'b-1',
      couponCount: 2,
      coupons: [
        {
          coupon_code: '000000000272',
          status: 2,
          realWin: '185.50',
          events: [{ uuid: '000000000272-1', status: 2 }],
        },
        {
          coupon_code: '000000000273',
          status: 2,
          realWin: null,
          events: [{ uuid: '000000000273-1', status: 2 }],
        },
      ],
    });
  });

  it.each([
    ['an identifier outside printable ASCII', batch({ batchId: 'b-é' })],
    ['an unsafe-number batchId', '{"batchId":12345678901234567890,"couponCount":1,"coupons":[]}'],
    [
      'status 2.0000000000000000001',
      '{"batchId":"b","couponCount":1,"coupons":[{"coupon_code":"1","status":2.0000000000000000001,"events":[]}]}',
    ],
    ['couponCount mismatch', batch({ couponCount: 2 })],
    ['duplicate coupon_code', batch({ couponCount: 2, coupons: [coupon('1'), coupon('1')] })],
  ])('%s is left to the DTO', (_name, body) => {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    expect(outcome(text, true)).toEqual(outcome(text, false));
  });

  // Values each field may take: valid ones and every kind of wrong one.
  const anyValue = fc.oneof(
    fc.string({ maxLength: 70 }),
    fc.string({ unit: 'grapheme', maxLength: 40 }),
    fc.constantFrom('', 'x'.repeat(32), 'x'.repeat(33), 'x'.repeat(64), 'x'.repeat(65), '\u0000', '\ud800'),
    fc.integer(),
    fc.constantFrom(2 ** 31, -(2 ** 31) - 1, 1.5, 0, -0, 1e21),
    fc.constantFrom('10', '10.5', '10.55', '10.555', '-1', '1e2', ' 1', '0.00', '9999999999999.99'),
    fc.constant(null),
    fc.boolean(),
    fc.constant([]),
    fc.constant({}),
  );
  const event = fc.record(
    { uuid: fc.oneof(fc.constantFrom('u-1', 'u-2'), anyValue), status: fc.oneof(fc.integer(), anyValue) },
    { requiredKeys: [] },
  );
  const couponArb = fc.record(
    {
      coupon_code: fc.oneof(fc.constantFrom('C1', 'C2', '000000000272'), anyValue),
      status: fc.oneof(fc.constantFrom(1, 2, 3, 4, 15), anyValue),
      realWin: fc.oneof(fc.constantFrom('10.00', '0', null), anyValue),
      events: fc.oneof(fc.array(event, { maxLength: 3 }), anyValue),
      extra: anyValue,
    },
    { requiredKeys: [] },
  );
  const body = fc.record(
    {
      batchId: fc.oneof(fc.constantFrom('b-1'), anyValue),
      couponCount: fc.oneof(fc.integer({ min: 0, max: 4 }), anyValue),
      coupons: fc.oneof(fc.array(fc.oneof(couponArb, anyValue), { maxLength: 4 }), anyValue),
    },
    { requiredKeys: [] },
  );

  it('any body: the same verdict, result, error paths and messages on both paths', () => {
    fc.assert(
      fc.property(body, (b) => {
        const text = JSON.stringify(b);
        expect(outcome(text, true)).toEqual(outcome(text, false));
      }),
      { numRuns: 3000 },
    );
  });

  it('near-valid bodies (one field off at most, often none): the same outcome, many of them accepted', () => {
    let accepted = 0;
    const validEvent = fc.record({
      uuid: fc.stringMatching(/^[\x20-\x7e]{1,8}$/),
      status: fc.integer({ min: -5, max: 20 }),
    });
    const validCoupon = fc.record({
      coupon_code: fc.stringMatching(/^[\x20-\x7e]{1,6}$/),
      status: fc.constantFrom(1, 2, 3, 4, 15, 99),
      realWin: fc.constantFrom('10.00', '0', '7.5', null, undefined),
      events: fc.array(validEvent, { maxLength: 4 }),
    });
    const near = fc
      .tuple(
        fc.array(validCoupon, { minLength: 1, maxLength: 6 }),
        fc.option(anyValue, { freq: 3 }),
        fc.nat(5),
      )
      .map(([coupons, odd, where]) => {
        const b: Record<string, unknown> = { batchId: 'b-9', couponCount: coupons.length, coupons };
        if (odd !== null) {
          const c = coupons[0] as Record<string, unknown>;
          const target = [b, b, c, c, c, (c.events as Record<string, unknown>[])[0] ?? c][where];
          const key = ['batchId', 'couponCount', 'coupon_code', 'status', 'realWin', 'uuid'][where];
          target[key] = odd;
        }
        return b;
      });
    fc.assert(
      fc.property(near, (b) => {
        const text = JSON.stringify(b);
        const fast = outcome(text, true);
        expect(fast).toEqual(outcome(text, false));
        if (fast.ok) accepted++;
      }),
      { numRuns: 2000 },
    );
    expect(accepted).toBeGreaterThan(400);
  });

  it('valid bodies with realWin numbers of any digits: the same verdict and amounts', () => {
    const amount = fc.oneof(
      fc.stringMatching(/^-?\d{1,16}(\.\d{1,4})?$/),
      fc.stringMatching(/^\d{1,3}(\.\d{1,3})?[eE][+-]?\d$/),
    );
    fc.assert(
      fc.property(amount, fc.boolean(), (a, asNumber) => {
        const text = `{"batchId":"b-1","couponCount":1,"coupons":[{"coupon_code":"C","status":2,"realWin":${
          asNumber ? a : JSON.stringify(a)
        },"events":[]}]}`;
        expect(outcome(text, true)).toEqual(outcome(text, false));
      }),
      { numRuns: 1000 },
    );
  });
});

describe('batchIdHint: the quarantine row of a rejected body (hostile report 2, finding 5)', () => {
  const hint = (text: string) => batchIdHint(Buffer.from(text, 'utf8'));

  it.each([
    ['{"batchId":"hxh-dkb","batchId":"hxh-dkb2","couponCount":0,"coupons":[]}', 'hxh-dkb'],
    ['{ "coupons": [{"batchId":"inner"}], "batchId" : "b-1", "batchId": "b-2" }', 'b-1'],
    ['{"x":{"batchId":"nested"},"batchId":"top"}', 'top'],
    ['{"note":"\\"batchId\\":\\"fake\\"","batchId":"real"}', 'real'],
    ['{"batch\\u0049d":"escaped-key","batchId":"plain"}', 'escaped-key'],
    ['{"batchId":"b\\u00e4"}', 'bä'],
    ['{"batchId":7,"batchId":"later"}', undefined],
    ['{"batchId":"a\\u0000b"}', undefined],
    [`{"batchId":"${'b'.repeat(65)}"}`, undefined],
    ['{"batchId":""}', undefined],
    ['{"x":{"batchId":"nested"}}', undefined],
    ['[{"batchId":"in-array"}]', undefined],
    ['{"batchId":"b-1"', undefined],
  ])('%s → %j', (text, expected) => {
    expect(hint(text)).toBe(expected);
  });
});
