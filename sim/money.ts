/**
 * Amounts as integer cents (`bigint`), never floating point (CONTRACT §3, §7). The simulator
 * only writes amounts with two fraction digits, so cents are exact.
 */

const AMOUNT = /^(-?)(\d+)(?:\.(\d{1,2}))?$/;

/** `1234n` → `"12.34"`, `-5n` → `"-0.05"`. */
export function formatCents(cents: bigint): string {
  const negative = cents < 0n;
  const abs = negative ? -cents : cents;
  const text = `${abs / 100n}.${(abs % 100n).toString().padStart(2, '0')}`;
  return negative ? `-${text}` : text;
}

/**
 * `"12.3"` → `1230n`; a JSON number is read through its decimal text. Throws on more than two
 * fraction digits or anything that is not a plain decimal.
 */
export function parseCents(value: string | number): bigint {
  const text = typeof value === 'number' ? String(value) : value.trim();
  const match = AMOUNT.exec(text);
  if (!match) throw new Error(`not an amount with at most 2 fraction digits: ${JSON.stringify(value)}`);
  const cents = BigInt(match[2]) * 100n + BigInt((match[3] ?? '').padEnd(2, '0'));
  return match[1] === '-' ? -cents : cents;
}

/** The two-decimal form of an amount (`"0"` → `"0.00"`), or null for null/undefined. */
export function canonicalAmount(value: string | number | null | undefined): string | null {
  return value === null || value === undefined ? null : formatCents(parseCents(value));
}
