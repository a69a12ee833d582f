/**
 * Amounts as integer minor units (`bigint`) at a fixed number of fraction digits, never floating
 * point (CONTRACT §3, §7): cents for the 2-digit helpers, up to 10^-8 (BTC's satoshi) for a
 * sequence of several currencies.
 */

const AMOUNT = /^(-?)(\d+)(?:\.(\d+))?$/;

/**
 * `"12.3"` at scale 2 → `1230n`; a JSON number is read through its decimal text. Trailing zeros are
 * not digits (`"1500.00"` at scale 0 is `1500n`). Throws on a value finer than `scale` or anything
 * that is not a plain decimal.
 */
export function parseUnits(value: string | number, scale: number): bigint {
  const text = typeof value === 'number' ? String(value) : value.trim();
  const match = AMOUNT.exec(text);
  const fraction = (match?.[3] ?? '').replace(/0+$/, '');
  if (!match || fraction.length > scale)
    throw new Error(`not an amount with at most ${scale} fraction digits: ${JSON.stringify(value)}`);
  const units = BigInt(match[2]) * 10n ** BigInt(scale) + BigInt(fraction.padEnd(scale, '0') || '0');
  return match[1] === '-' ? -units : units;
}

/**
 * `units` at `scale` as decimal text with `digits` fraction digits, or more when the value needs
 * them (never rounded): `formatUnits(150000n, 2, 0)` → `"1500"`, `formatUnits(150050n, 2, 0)` →
 * `"1500.5"`, `formatUnits(1234n, 2)` → `"12.34"`.
 */
export function formatUnits(units: bigint, scale: number, digits = scale): string {
  const negative = units < 0n;
  const abs = negative ? -units : units;
  const base = 10n ** BigInt(scale);
  const fraction = (abs % base).toString().padStart(scale, '0').replace(/0+$/, '');
  const shown = fraction.padEnd(digits, '0');
  const text = `${abs / base}${shown ? `.${shown}` : ''}`;
  return negative ? `-${text}` : text;
}

/** Whether `units` at `scale` need no more than `digits` fraction digits (fit a currency). */
export function fitsUnits(units: bigint, scale: number, digits: number): boolean {
  return digits >= scale || units % 10n ** BigInt(scale - digits) === 0n;
}

/** `1234n` → `"12.34"`, `-5n` → `"-0.05"`. */
export function formatCents(cents: bigint): string {
  return formatUnits(cents, 2);
}

/** `"12.3"` → `1230n`. Throws on more than two fraction digits or anything that is not a plain decimal. */
export function parseCents(value: string | number): bigint {
  return parseUnits(value, 2);
}

/** The two-decimal form of an amount (`"0"` → `"0.00"`), or null for null/undefined. */
export function canonicalAmount(value: string | number | null | undefined): string | null {
  return value === null || value === undefined ? null : formatCents(parseCents(value));
}
