import { Decimal } from 'decimal.js';

/**
 * Decimal money helpers. Amounts travel as decimal strings ("185.50") and are stored as
 * PostgreSQL `numeric`; they never pass through JavaScript floating point (CONTRACT §3, §7).
 */
export type Money = string;

/** Largest magnitude accepted for an amount: 13 integer digits, inside `numeric(20,2)`. */
const MAX_INTEGER_DIGITS = 13;

/**
 * Parses an amount as it came in JSON (a string, or a number whose shortest decimal form is used)
 * into a canonical decimal string with exactly `scale` fraction digits.
 * @returns the canonical string, or `null` when the value is not a decimal with at most `scale`
 *   fraction digits and at most 13 integer digits (also rejects NaN, exponents, whitespace, signs
 *   when `allowNegative` is false, and empty strings).
 */
export function parseAmount(value: unknown, scale: number, allowNegative = false): Money | null {
  let text: string;
  if (typeof value === 'string') text = value;
  else if (typeof value === 'number' && Number.isFinite(value)) text = String(value);
  else return null;
  const sign = allowNegative ? '-?' : '';
  const frac = scale > 0 ? `(\\.\\d{1,${scale}})?` : '';
  const re = new RegExp(`^${sign}\\d{1,${MAX_INTEGER_DIGITS}}${frac}$`);
  if (!re.test(text)) return null;
  return new Decimal(text).toFixed(scale);
}

/** Canonical form of a decimal string (or `numeric` value from pg) with `scale` fraction digits. */
export function formatAmount(value: string | Decimal, scale = 2): Money {
  return new Decimal(value).toFixed(scale);
}

/** Plain unsigned decimal text (digits, optional fraction): its sign and zero-ness show in the digits. */
const UNSIGNED_DECIMAL = /^\d+(?:\.\d+)?$/;

/** Exact equality of two decimal strings ("5" equals "5.00"). */
export function sameAmount(a: Money, b: Money): boolean {
  // Equal text is an equal amount (the usual case: canonical strings on both sides).
  return a === b || new Decimal(a).equals(new Decimal(b));
}

/** True when the decimal string is greater than zero. */
export function isPositive(a: Money): boolean {
  if (UNSIGNED_DECIMAL.test(a)) return /[1-9]/.test(a);
  return new Decimal(a).greaterThan(0);
}

/** Sum of decimal strings, as a canonical string with `scale` digits. */
export function addAmounts(values: Money[], scale = 2): Money {
  return values.reduce((acc, v) => acc.plus(v), new Decimal(0)).toFixed(scale);
}

/** Negation of a decimal string. */
export function negate(a: Money, scale = 2): Money {
  return new Decimal(a).negated().toFixed(scale);
}

/** `a < b` on decimal strings. */
export function lessThan(a: Money, b: Money): boolean {
  return new Decimal(a).lessThan(new Decimal(b));
}
