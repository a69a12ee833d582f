import { isLosslessNumber, isSafeNumber, parse, stringify } from 'lossless-json';

/**
 * JSON without floating point (CONTRACT §3: amounts never pass through it; other fields are kept
 * as they came): numbers a double holds exactly become JS numbers, every other number stays a
 * `LosslessNumber` carrying its original digits, as do the numbers under `keepAsText` keys.
 * `__proto__` keys are dropped. Duplicate keys in one object are refused.
 * @throws SyntaxError for invalid JSON or duplicate keys; RangeError when nested too deeply.
 */
export function parseExactJson(text: string, keepAsText: ReadonlySet<string> = new Set()): unknown {
  return parse(text, (key: string, value: unknown) => {
    if (key === '__proto__') return undefined;
    if (isLosslessNumber(value) && !keepAsText.has(key) && isSafeNumber(value.toString())) {
      return Number(value.toString());
    }
    return value;
  });
}

/** JSON text of a value that may hold `LosslessNumber`s, written with their original digits. */
export function stringifyExactJson(value: unknown): string {
  return stringify(value) as string;
}
