import { isLosslessNumber, isSafeNumber, parse, stringify } from 'lossless-json';

/** Deepest nesting accepted in a request body (objects and arrays); deeper is a 400. */
export const MAX_JSON_DEPTH = 32;

/** A parsed JSON document and whether it still holds `LosslessNumber`s. */
export interface ExactJson {
  value: unknown;
  /** true when some number kept its original digits (too big or precise for a double, or kept as text). */
  lossless: boolean;
  /**
   * true when some number is extreme: more than 1000 characters or an exponent beyond ±1000.
   * PostgreSQL's `numeric` (and so `jsonb`) may not hold it, so such a body is not converted to
   * jsonb as a whole.
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

/**
 * JSON without floating point (CONTRACT §3: amounts never pass through it; other fields are kept
 * as they came): numbers a double holds exactly become JS numbers, every other number stays a
 * `LosslessNumber` carrying its original digits, as do the numbers under `keepAsText` keys.
 * `__proto__` keys are dropped. Duplicate keys in one object are refused.
 * @throws SyntaxError for invalid JSON, duplicate keys or nesting deeper than `maxDepth`.
 */
export function parseExactJson(
  text: string,
  keepAsText: ReadonlySet<string> = new Set(),
  maxDepth = MAX_JSON_DEPTH,
): ExactJson {
  let lossless = false;
  let extreme = false;
  let value: unknown;
  try {
    value = parse(text, (key: string, v: unknown) => {
      if (key === '__proto__') return undefined;
      if (isLosslessNumber(v)) {
        const digits = v.toString();
        if (!keepAsText.has(key) && isSafeNumber(digits)) return Number(digits);
        lossless = true;
        if (!extreme && isExtremeNumber(digits)) extreme = true;
      }
      return v;
    });
  } catch (err) {
    if (err instanceof RangeError)
      throw new SyntaxError(`nested deeper than ${maxDepth} levels`, { cause: err });
    throw err;
  }
  if (depthExceeds(value, maxDepth)) throw new SyntaxError(`nested deeper than ${maxDepth} levels`);
  return { value, lossless, extreme };
}

/** JSON text of a value; `LosslessNumber`s (when `lossless`) are written with their digits. */
export function stringifyExactJson(value: unknown, lossless = true): string {
  return lossless ? (stringify(value) as string) : JSON.stringify(value);
}

/**
 * The value prepared for class-transformer: every `LosslessNumber` replaced by its digits as a
 * string, and every `constructor` key dropped. class-transformer takes `value.constructor` for the
 * class of a nested object, so `{"batchId": {"constructor": 1}}` threw a TypeError ("targetType is
 * not a constructor"), answered 503 on the callback (retried forever) and 500 on the partner API
 * instead of 400. No DTO field is named `constructor`; the callback stores the parsed body, not
 * this copy, so an unknown `constructor` field is still kept in the stored payload.
 */
export function losslessToText(value: unknown): unknown {
  if (isLosslessNumber(value)) return value.toString();
  if (Array.isArray(value)) return value.map(losslessToText);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([k]) => k !== 'constructor')
        .map(([k, v]) => [k, losslessToText(v)]),
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
