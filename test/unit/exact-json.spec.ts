import { isLosslessNumber } from 'lossless-json';
import {
  ExactJson,
  parseExactJson,
  parseLosslessJson,
  stringifyExactJson,
} from '../../src/platform/common/exact-json.js';
import { LoadGenerator, prng } from '../../bench/load.js';

// parseExactJson reads most bodies with JSON.parse; it must give exactly what the lossless-json
// reference gives (CONTRACT §3: no number through floating point unless a double holds it
// exactly), or the same error.

/** A parse result with its number kinds, key order and -0 made visible to toEqual. */
function tagged(value: unknown): unknown {
  if (isLosslessNumber(value)) return { lossless: value.toString() };
  if (typeof value === 'number') return { number: Object.is(value, -0) ? '-0' : String(value) };
  if (Array.isArray(value)) return value.map(tagged);
  if (value !== null && typeof value === 'object') {
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    return Object.keys(value).map((k) => [k, tagged((value as Record<string, unknown>)[k])]);
  }
  return value;
}

type Outcome =
  { ok: true; value: unknown; lossless: boolean; extreme: boolean } | { ok: false; error: string };

function outcome(parse: () => ExactJson): Outcome {
  try {
    const r = parse();
    return { ok: true, value: tagged(r.value), lossless: r.lossless, extreme: r.extreme };
  } catch (err) {
    return { ok: false, error: `${(err as Error).name}: ${(err as Error).message}` };
  }
}

const AMOUNTS = new Set(['realWin']);

function expectSame(text: string, keepAsText: ReadonlySet<string> = AMOUNTS, maxDepth = 32): Outcome {
  const reference = outcome(() => parseLosslessJson(text, keepAsText, maxDepth));
  expect({ text, ...outcome(() => parseExactJson(text, keepAsText, maxDepth)) }).toEqual({
    text,
    ...reference,
  });
  return reference;
}

describe('parseExactJson equals the lossless-json reference (CONTRACT §3)', () => {
  it.each([
    [
      'a bench batch',
      new LoadGenerator({ pool: { coupons: 200, players: 5, seed: 7 }, secret: 's', batchPrefix: 'x' })
        .next()
        .body.toString(),
    ],
    ['realWin as a string', '{"coupons":[{"realWin":"185.50","status":2}]}'],
    ['realWin as a number (kept as text)', '{"coupons":[{"realWin":185.50,"status":2}]}'],
    ['realWin as a negative number', '{"realWin" : -1}'],
    ['realWin as a key inside a string value', '{"note":"realWin: 5","n":5}'],
    ['realWin as a string value before a number', '{"a":"realWin","b":5,"c":["realWin",7]}'],
    ['keys that only start or end like realWin', '{"realWinX":1.5,"xrealWin":2,"realWi":3}'],
    ['a 15-digit integer', '{"n":123456789012345}'],
    ['15- and 16-digit negative integers', '{"a":-123456789012345,"b":-1234567890123456}'],
    ['an unsafe negative integer', '{"n":-9007199254740993}'],
    ['a 16-digit unsafe integer', '{"n":9007199254740993}'],
    ['2^53 as a float', '{"n":9007199254740992.0}'],
    ['a 20-digit integer', '{"n":12345678901234567890}'],
    ['17 significant digits', '{"n":0.30000000000000004}'],
    ['22 significant digits', '{"n":1.100000000000000000001}'],
    ['trailing zeros', '{"n":1.10,"m":100,"k":0.000001}'],
    ['exponents', '{"a":1e5,"b":1E-7,"c":-2.5e+3,"d":1e400,"e":1e-400}'],
    ['an extreme exponent', '{"n":1e1001}'],
    ['negative zero', '{"a":-0,"b":-0.0,"c":0}'],
    ['equal duplicate keys', '{"a":1,"a":1}'],
    ['different duplicate keys', '{"a":1,"a":2}'],
    ['nested duplicate keys', '{"x":[{"uuid":"e","status":1,"status":2}]}'],
    ['an empty key twice', '{"":1,"":2}'],
    ['[] and {} under one key', '{"x":[],"x":{}}'],
    ['[5] and {"0":5} under one key', '{"x":[5],"x":{"0":5}}'],
    [
      'a LosslessNumber look-alike and a number under one key',
      '{"s":{"value":"4","isLosslessNumber":true},"s":4}',
    ],
    ['a key repeated through an escape', '{"a":1,"\\u0061":1}'],
    ['a safe but extreme number (0e-20000)', '{"x":0e-20000}'],
    ['a long run of zeros', `{"x":0.${'0'.repeat(1000)}}`],
    ['a __proto__ key', '{"__proto__":{"polluted":true},"a":1}'],
    ['__proto__ as a value', '{"a":"__proto__"}'],
    ['escaped quotes', '{"a":"x\\":1","b":2}'],
    ['escaped quotes hiding a duplicate key from a plain string scan', '{"a":"x\\"","a":"y\\""}'],
    ['a unicode escape', '{"a":"\\u0041","b":"\\u0000"}'],
    ['a colon in keys and values', '{"a:b":"c:d","e":": 1","f":"\\":"}'],
    ['digits in strings', '{"id":"12345678901234567890","u":"4e8eb2af-1e5"}'],
    ['whitespace everywhere', ' {\n\t"a" :\r 1 , "b"\n:\n[ 1 , 2 ] } '],
    ['an empty object and array', '{"a":{},"b":[],"c":[[]]}'],
    ['top-level scalars', '5'],
    ['top-level null', 'null'],
    ['top-level string', '"x"'],
    ['literals', '{"t":true,"f":false,"n":null}'],
    ['a trailing comma', '{"a":1,}'],
    ['single quotes', "{'a':1}"],
    ['NaN', '{"a":NaN}'],
    ['a leading zero', '{"a":01}'],
    ['a raw tab in a string', '{"a":"x\ty"}'],
    ['a BOM', '\ufeff{"a":1}'],
    ['two documents', '{"a":1}{"b":2}'],
    ['an empty text', ''],
    ['an unterminated string', '{"a":"x'],
  ])('%s', (_name, text) => {
    expectSame(text);
  });

  it.each([
    ['"" (the document itself)', '1171078241', ''],
    ['an array index', '[5,{"0":7},[1.5]]', '0'],
    ['an array index that is not the first', '[5,6]', '1'],
  ])('a kept-as-text key the reviver also meets outside objects: %s', (_name, text, key) => {
    expect(expectSame(text, new Set([key]))).toMatchObject({ ok: true, lossless: true });
  });

  it('nesting deeper than the stack allows, under a very large limit: the reference error', () => {
    const text = '['.repeat(20000) + ']'.repeat(20000);
    expect(expectSame(text, AMOUNTS, 1e9)).toEqual({
      ok: false,
      error: 'SyntaxError: nested deeper than 1000000000 levels',
    });
  });

  it.each([
    ['equal values', '{"a":1,"a":1}', 'a', 8],
    ['[] and {}', '{"x":[],"x":{}}', 'x', 9],
    ['an escaped repeat', '{"b":{"a":1,"\\u0061":1}}', 'a', 13],
  ])(
    'a key twice in one object is refused whatever its values (%s), at the repeat',
    (_name, text, key, position) => {
      expect(outcome(() => parseExactJson(text))).toEqual({
        ok: false,
        error: `SyntaxError: Duplicate key '${key}' encountered at position ${position}`,
      });
    },
  );

  it('the same key in sibling and nested objects is no repeat', () => {
    expect(parseExactJson('{"a":{"a":1},"b":[{"a":1},{"a":2}],"\\u0062x":1}').value).toEqual({
      a: { a: 1 },
      b: [{ a: 1 }, { a: 2 }],
      bx: 1,
    });
  });

  it('numbers PostgreSQL cannot hold are flagged extreme on both paths and stored as text', () => {
    expect(parseExactJson('{"x":0e-20000}')).toEqual({ value: { x: 0 }, lossless: false, extreme: true });
    const big = parseExactJson('{"x":1e200000,"y":12345678901234567890}');
    expect({ lossless: big.lossless, extreme: big.extreme }).toEqual({ lossless: true, extreme: true });
    expect(stringifyExactJson(big.value)).toBe('{"x":"1e200000","y":12345678901234567890}');
    expect(stringifyExactJson(parseExactJson('{"x":0e-20000}').value, false)).toBe('{"x":0}');
  });

  it('nesting at and beyond the limit: 32 levels parse, 33 are refused by both', () => {
    const nested = (n: number) => '['.repeat(n) + ']'.repeat(n);
    expect(expectSame(nested(32)).ok).toBe(true);
    expect(expectSame(nested(33))).toEqual({ ok: false, error: 'SyntaxError: nested deeper than 32 levels' });
    expect(expectSame(`{"a":${nested(31)}}`).ok).toBe(true);
    expect(expectSame(`{"a":${nested(32)}}`).ok).toBe(false);
  });

  it('a realWin kept as text under the native path: 185.50 stays "185.50", not 185.5', () => {
    const r = parseExactJson('{"realWin":185.50}', AMOUNTS);
    expect(r.lossless).toBe(true);
    expect(String((r.value as { realWin: unknown }).realWin)).toBe('185.50');
    expect(parseExactJson('{"realWin":185.50}').value).toEqual({ realWin: 185.5 });
  });

  it('5000 seeded mutations of a batch body: same value or same error', () => {
    const rnd = prng(20261130);
    const base =
      '{"batchId":"b-1","couponCount":2,"coupons":[{"coupon_code":"001","status":2,"realWin":"10.50",' +
      '"events":[{"uuid":"e-1","status":2,"odds":1.85}]},{"coupon_code":"002","status":1,"realWin":null,' +
      '"events":[{"uuid":"e-2","status":0},{"uuid":"e-3","status":1}]}]}';
    const alphabet = [
      '{',
      '}',
      '[',
      ']',
      '"',
      ',',
      ':',
      '0',
      '1',
      '9',
      '.',
      'e',
      'E',
      '-',
      '+',
      ' ',
      '\\',
      'a',
      '"realWin":',
      '"status":',
      '12345678901234567',
      '1e400',
      '"__proto__":',
      'true',
      'null',
    ];
    let accepted = 0;
    for (let i = 0; i < 5000; i++) {
      let text = base;
      const edits = 1 + Math.floor(rnd() * 3);
      for (let k = 0; k < edits; k++) {
        const at = Math.floor(rnd() * (text.length + 1));
        const piece = alphabet[Math.floor(rnd() * alphabet.length)];
        const op = rnd();
        if (op < 0.4) text = text.slice(0, at) + piece + text.slice(at);
        else if (op < 0.7) text = text.slice(0, at) + text.slice(at + 1);
        else text = text.slice(0, at) + piece + text.slice(at + 1);
      }
      if (expectSame(text).ok) accepted++;
    }
    // Enough of the mutants are still JSON for the comparison to mean something.
    expect(accepted).toBeGreaterThan(500);
  });

  it('2000 seeded random documents with duplicate keys, long and exponent numbers', () => {
    const rnd = prng(424242);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
    const numbers = [
      '0',
      '-0',
      '1',
      '1.10',
      '185.50',
      '1e5',
      '-2.5E-3',
      '123456789012345',
      '1234567890123456',
      '9007199254740993',
      '0.30000000000000004',
      '1e400',
      '12345678901234567890.5',
    ];
    const keys = ['a', 'b', 'realWin', 'status', '', 'x:y', '__proto__'];
    const ws = () => pick(['', '', ' ', '\n']);
    const value = (depth: number): string => {
      const r = rnd();
      if (depth > 4 || r < 0.45) return pick([...numbers, '"s"', '"1e5"', 'true', 'null', '"a\\"b"']);
      if (r < 0.75) {
        const n = Math.floor(rnd() * 4);
        const members = Array.from(
          { length: n },
          () => `${ws()}"${pick(keys)}"${ws()}:${ws()}${value(depth + 1)}`,
        );
        return `{${members.join(',')}${ws()}}`;
      }
      return `[${Array.from({ length: Math.floor(rnd() * 4) }, () => ws() + value(depth + 1)).join(',')}]`;
    };
    let accepted = 0;
    for (let i = 0; i < 2000; i++) if (expectSame(value(0)).ok) accepted++;
    expect(accepted).toBeGreaterThan(1000);
  });
});
