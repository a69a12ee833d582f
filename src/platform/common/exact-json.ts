import { isLosslessNumber, isSafeNumber, parse, stringify } from 'lossless-json';

/** Deepest nesting accepted in a request body (objects and arrays); deeper is a 400. */
export const MAX_JSON_DEPTH = 32;

/** A parsed JSON document and whether it still holds `LosslessNumber`s. */
export interface ExactJson {
  value: unknown;
  /** true when some number kept its original digits (too big or precise for a double, or kept as text). */
  lossless: boolean;
  /**
   * true when some number is extreme: more than 1000 characters or an exponent beyond ±1000,
   * whether or not a double holds it (`0e-20000` is 0 for a double, yet PostgreSQL refuses it).
   * PostgreSQL's `numeric` (and so `jsonb`) may not hold it, so such a body is not converted to
   * jsonb as a whole; {@link stringifyExactJson} writes such numbers as strings.
   */
  extreme: boolean;
}

/** A number's text longer than this, or with an exponent beyond it, counts as extreme. */
const EXTREME_NUMBER = 1000;

function isExtremeNumber(text: string): boolean {
  if (text.length > EXTREME_NUMBER) return true;
  const e = text.search(/[eE]/);
  return e >= 0 && Math.abs(Number(text.slice(e + 1))) > EXTREME_NUMBER;
}

const NO_KEYS: ReadonlySet<string> = new Set();

/** Keys a reviver also gets for values outside objects: `""` (the document) and array indices. */
const REVIVER_NON_OBJECT_KEY = /^(?:0|[1-9][0-9]*)?$/;

const isJsonWhitespace = (c: number) => c === 0x20 || c === 0x0a || c === 0x09 || c === 0x0d;
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
/** A character of a JSON number token after its first: digit, `.`, `e`, `E`, `+`, `-`. */
const isNumberTail = (c: number) =>
  isDigit(c) || c === 0x2e || c === 0x65 || c === 0x45 || c === 0x2b || c === 0x2d;

/**
 * Whether the number token `text[start, end)` is an integer of at most 15 digits: a double holds
 * it exactly and it is not extreme, so it needs no further check (and no substring).
 */
function isShortInteger(text: string, start: number, end: number): boolean {
  const first = text.charCodeAt(start) === 0x2d ? start + 1 : start;
  if (end - first > 15) return false;
  for (let i = first; i < end; i++) if (!isDigit(text.charCodeAt(i))) return false;
  return true;
}

/**
 * The checks of {@link parseNative} on valid JSON text without backslashes, in one pass that
 * allocates only for long or fractional numbers: every number is safe (lossless-json's
 * `isSafeNumber`) and not extreme, none is the value of a key in `keepAsText`, and there are as
 * many colons outside strings as `keys` (outside strings a colon only ends a key).
 */
function nativeTokensAgree(text: string, keepAsText: ReadonlySet<string>, keys: number): boolean {
  const keptLengths = new Set([...keepAsText].map((k) => k.length));
  let colons = 0;
  // The last string's quotes; `keyed`: the token before this value was that string and a colon.
  let stringStart = 0;
  let stringEnd = 0;
  let lastWasString = false;
  let keyed = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (isJsonWhitespace(c)) continue;
    if (c === 0x22) {
      // Without backslashes the next quote closes the string.
      stringStart = i + 1;
      stringEnd = text.indexOf('"', stringStart);
      i = stringEnd;
      lastWasString = true;
      keyed = false;
      continue;
    }
    if (c === 0x3a) {
      colons++;
      keyed = lastWasString;
    } else if (c === 0x2d || isDigit(c)) {
      let end = i + 1;
      while (end < text.length && isNumberTail(text.charCodeAt(end))) end++;
      if (
        keyed &&
        keptLengths.has(stringEnd - stringStart) &&
        keepAsText.has(text.slice(stringStart, stringEnd))
      )
        return false;
      if (!isShortInteger(text, i, end)) {
        const digits = text.slice(i, end);
        if (!isSafeNumber(digits) || isExtremeNumber(digits)) return false;
      }
      i = end - 1;
      keyed = false;
    } else keyed = false;
    lastWasString = false;
  }
  return colons === keys;
}

/**
 * Own keys of every object in a `JSON.parse` result, or -1 when objects/arrays nest deeper than
 * `max` (the rule of {@link depthExceeds}; recursion stops there).
 */
function countKeys(value: unknown, max: number, depth = 0): number {
  if (value === null || typeof value !== 'object') return 0;
  if (depth >= max) return -1;
  let n = 0;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const c = countKeys(value[i], max, depth + 1);
      if (c < 0) return -1;
      n += c;
    }
    return n;
  }
  for (const key in value) {
    const c = countKeys((value as Record<string, unknown>)[key], max, depth + 1);
    if (c < 0) return -1;
    n += 1 + c;
  }
  return n;
}

/**
 * `JSON.parse(text)` when its result is provably the one {@link parseLosslessJson} gives, else
 * undefined (the caller then takes the lossless parse, which also words the errors). That holds
 * when the text has no backslash (strings are then plain `"…"` tokens), no `__proto__`, no key of
 * `keepAsText` with a number (and none of them `""` or an array index, which the reviver also
 * meets outside objects), every number passes lossless-json's own `isSafeNumber` (the
 * reviver's test) and is not extreme, nesting is within `maxDepth`, and no object has a key twice: outside strings a
 * colon only ends a key, so there are as many colons as parsed keys. For a 36 KB batch of 100
 * coupons: 0.41 ms, of which `JSON.parse` 0.25; lossless-json 2.1 ms (bench/RESULTS.md).
 */
function parseNative(text: string, keepAsText: ReadonlySet<string>, maxDepth: number): unknown {
  if (text.includes('\\') || text.includes('__proto__')) return undefined;
  for (const key of keepAsText) if (REVIVER_NON_OBJECT_KEY.test(key)) return undefined;
  let value: unknown;
  let keys: number;
  try {
    value = JSON.parse(text);
    keys = countKeys(value, maxDepth); // a RangeError when nested deeper than the stack allows
  } catch {
    return undefined;
  }
  if (keys < 0) return undefined;
  return nativeTokensAgree(text, keepAsText, keys) ? value : undefined;
}

/**
 * What becomes of a `__proto__` key: `drop` (stored payloads: CONTRACT §3 keeps unknown fields,
 * but this one would be a trap for any code that copies the object) or `keep` as an own data
 * property (never the prototype), for the partner API to refuse it as an undeclared field.
 */
export type ProtoKeys = 'drop' | 'keep';

/**
 * JSON without floating point (CONTRACT §3: amounts never pass through it; other fields are kept
 * as they came): numbers a double holds exactly become JS numbers, every other number stays a
 * `LosslessNumber` carrying its original digits, as do the numbers under `keepAsText` keys.
 * `__proto__` keys are dropped, or kept as own properties ({@link ProtoKeys}). A key twice in one
 * object is refused, whatever its values. A body that needs none of this (the usual case) is read
 * by `JSON.parse`, with the result {@link parseLosslessJson} would give; any other body by
 * {@link parseLosslessJson}.
 * @throws SyntaxError for invalid JSON, duplicate keys or nesting deeper than `maxDepth`.
 */
export function parseExactJson(
  text: string,
  keepAsText: ReadonlySet<string> = NO_KEYS,
  maxDepth = MAX_JSON_DEPTH,
  protoKeys: ProtoKeys = 'drop',
): ExactJson {
  const value = parseNative(text, keepAsText, maxDepth);
  if (value !== undefined) return { value, lossless: false, extreme: false };
  return parseLosslessJson(text, keepAsText, maxDepth, protoKeys);
}

/**
 * {@link parseExactJson} by lossless-json alone, character by character (~6× slower than
 * `JSON.parse`): the reference the native path is tested against.
 * @throws SyntaxError as {@link parseExactJson}.
 */
export function parseLosslessJson(
  text: string,
  keepAsText: ReadonlySet<string> = NO_KEYS,
  maxDepth = MAX_JSON_DEPTH,
  protoKeys: ProtoKeys = 'drop',
): ExactJson {
  let lossless = false;
  let extreme = false;
  let value: unknown;
  try {
    value = parse(text, (key: string, v: unknown) => {
      if (key === '__proto__' && protoKeys === 'drop') return undefined;
      if (isLosslessNumber(v)) {
        const digits = v.toString();
        if (!extreme && isExtremeNumber(digits)) extreme = true;
        if (!keepAsText.has(key) && isSafeNumber(digits)) return Number(digits);
        lossless = true;
      }
      return v;
    });
  } catch (err) {
    if (err instanceof RangeError)
      throw new SyntaxError(`nested deeper than ${maxDepth} levels`, { cause: err });
    throw err;
  }
  if (depthExceeds(value, maxDepth)) throw new SyntaxError(`nested deeper than ${maxDepth} levels`);
  // lossless-json refuses a repeated key only when its values differ by its own comparison, which
  // takes [] for {} and a LosslessNumber for an object with its fields: refuse every repeat.
  const repeated = repeatedKey(text);
  if (repeated)
    throw new SyntaxError(`Duplicate key '${repeated.key}' encountered at position ${repeated.position}`);
  return { value, lossless, extreme };
}

/**
 * The first key that appears twice in one object of `text`, which must be valid JSON (decoded:
 * `"\u0061"` repeats `"a"`), with the 1-based position of its opening quote; or undefined.
 */
function repeatedKey(text: string): { key: string; position: number } | undefined {
  const objects: (Set<string> | null)[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x7b) objects.push(new Set());
    else if (c === 0x5b) objects.push(null);
    else if (c === 0x7d || c === 0x5d) objects.pop();
    else if (c === 0x22) {
      const start = i;
      for (i++; text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c) i++;
      let next = i + 1;
      while (isJsonWhitespace(text.charCodeAt(next))) next++;
      const keys = objects[objects.length - 1];
      if (keys && text.charCodeAt(next) === 0x3a) {
        const key = JSON.parse(text.slice(start, i + 1)) as string;
        if (keys.has(key)) return { key, position: start + 1 };
        keys.add(key);
      }
    }
  }
  return undefined;
}

/**
 * JSON text of a value for a `jsonb` column: `LosslessNumber`s (when `lossless`) are written
 * with their digits, except extreme ones (see {@link ExactJson.extreme}), which PostgreSQL's
 * `numeric` cannot hold (`1e200000`): those are written as JSON strings of their digits, so a
 * valid body is never refused for an unknown field's number (CONTRACT §3). The raw body keeps
 * every byte as sent.
 */
export function stringifyExactJson(value: unknown, lossless = true): string {
  return lossless ? (stringify(value, storableNumber) as string) : JSON.stringify(value);
}

function storableNumber(_key: string, value: unknown): unknown {
  return isLosslessNumber(value) && isExtremeNumber(value.toString()) ? value.toString() : value;
}

/**
 * The value prepared for class-transformer and class-validator: every `LosslessNumber` (a number a
 * double cannot hold exactly) replaced by `NaN`, which no rule accepts, so no text field takes a
 * number's digits. `constructorKeys: 'drop'` (the callback, which accepts unknown fields) drops
 * every `constructor` key, which class-transformer would take for a nested object's class (a
 * TypeError, answered 5xx instead of 400); `keep` leaves it for the partner API's validation
 * pipe to refuse (it deletes it before class-transformer runs). The stored payload is not this
 * copy: unknown fields keep their values there.
 */
export function validationCopy(value: unknown, constructorKeys: 'drop' | 'keep' = 'drop'): unknown {
  if (isLosslessNumber(value)) return NaN;
  if (Array.isArray(value)) return value.map((v) => validationCopy(v, constructorKeys));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([k]) => constructorKeys === 'keep' || k !== 'constructor')
        .map(([k, v]) => [k, validationCopy(v, constructorKeys)]),
    );
  }
  return value;
}

/** Whether objects/arrays nest deeper than `max` (checked without recursion). */
export function depthExceeds(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [v, depth] = stack.pop() as [unknown, number];
    if (v === null || typeof v !== 'object' || isLosslessNumber(v)) continue;
    if (depth + 1 > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1]);
  }
  return false;
}
