import { Decimal } from 'decimal.js';

/**
 * Decimal money helpers. Amounts travel as decimal strings ("185.50") and are stored as
 * PostgreSQL `numeric`; they never pass through JavaScript floating point (CONTRACT §3, §7).
 */
export type Money = string;

/** Largest magnitude accepted for an amount: 13 integer digits (the money columns hold 18). */
const MAX_INTEGER_DIGITS = 13;

/** A plain decimal as JSON carries it: optional sign, 1..13 integer digits, an optional fraction. */
const DECIMAL_TEXT = new RegExp(`^(-?)\\d{1,${MAX_INTEGER_DIGITS}}(?:\\.(\\d+))?$`);

/**
 * Parses an amount as it came in JSON (a string, or a number whose shortest decimal form is used)
 * into a canonical decimal string with exactly `scale` fraction digits. The value counts, not the
 * text: `"1500.00"` fits scale 0 (it is 1500), `"1500.50"` does not; nothing is ever rounded.
 * @returns the canonical string, or `null` when the value is not a decimal of at most 13 integer
 *   digits whose fraction needs at most `scale` digits (also rejects NaN, exponents, whitespace,
 *   signs when `allowNegative` is false, and empty strings).
 */
export function parseAmount(value: unknown, scale: number, allowNegative = false): Money | null {
  let text: string;
  if (typeof value === 'string') text = value;
  else if (typeof value === 'number' && Number.isFinite(value)) text = String(value);
  else return null;
  const match = DECIMAL_TEXT.exec(text);
  if (!match || (match[1] === '-' && !allowNegative)) return null;
  if ((match[2] ?? '').replace(/0+$/, '').length > scale) return null;
  return new Decimal(text).toFixed(scale);
}

/**
 * Fraction digits the value of a decimal string needs (`"185.50000000"` → 1, `"1500.00"` → 0):
 * the finest minor unit it uses, compared with a currency's minor units (CONTRACT §3).
 */
export function fractionDigits(amount: Money): number {
  const point = amount.indexOf('.');
  return point < 0 ? 0 : amount.slice(point + 1).replace(/0+$/, '').length;
}

/**
 * A decimal string (or `numeric` value from pg) with at least `scale` fraction digits: exactly
 * `scale` unless the value needs more, which are then all kept (never rounded).
 */
export function formatAmount(value: string | Decimal, scale = 2): Money {
  const d = new Decimal(value);
  return d.toFixed(Math.max(scale, d.decimalPlaces()));
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

/** decimal.js rounds arithmetic to 20 significant digits by default; money needs 18 + 8 exactly. */
const ExactDecimal = Decimal.clone({ precision: 40 });

/** Sum of decimal strings, with at least `scale` fraction digits (never rounded). */
export function addAmounts(values: Money[], scale = 2): Money {
  return formatAmount(
    values.reduce((acc, v) => acc.plus(v), new ExactDecimal(0)),
    scale,
  );
}

/** Negation of a decimal string, with at least `scale` fraction digits (never rounded). */
export function negate(a: Money, scale = 2): Money {
  return formatAmount(new Decimal(a).negated(), scale);
}

/** `a < b` on decimal strings. */
export function lessThan(a: Money, b: Money): boolean {
  return new Decimal(a).lessThan(new Decimal(b));
}
