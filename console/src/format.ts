/**
 * The one place where the console formats values. Amounts are shown exactly as the API gives
 * them (decimal strings, never through a number); times in UTC, with the browser's local time
 * as their hover title.
 */

/** `2026-11-30 12:00:00.512 UTC` of an ISO 8601 time; '' for none. */
export function utc(iso: string | null | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.toISOString().replace('T', ' ').replace('Z', '')} UTC`;
}

/** ISO 8601 times inside a text (a search hit's label), as the console shows times ({@link utc}). */
export const ISO_TIME = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})/g;

/**
 * A coupon status code with its kind (CONTRACT §6, the receiver's `STATUS_MAP` in `kinds`):
 * `2 WIN`, `99 UNKNOWN`; '' for none.
 */
export function statusText(status: number | null | undefined, kinds: Record<string, string>): string {
  if (status === null || status === undefined) return '';
  return `${status} ${kinds[String(status)] ?? 'UNKNOWN'}`;
}

/** The same time in the browser's time zone, for the title attribute. */
export function local(iso: string | null | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  return `${d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' })} (${zone}, local time)`;
}

/** An amount and its currency, the digits untouched: `185.50 EUR`; '—' for none. */
export function money(amount: string | null | undefined, currency?: string | null): string {
  if (amount === null || amount === undefined) return '—';
  return currency ? `${amount} ${currency}` : amount;
}

/** Seconds as `42 s`, `3 min 5 s`, `2 h 4 min`. */
export function duration(seconds: number): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** Bytes of a base64 string as hex lines: offset, 16 bytes in hex, and their printable ASCII. */
export function hexDump(base64: string): string {
  const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
  const lines: string[] = [];
  for (let offset = 0; offset < bytes.length; offset += 16) {
    const row = bytes.subarray(offset, offset + 16);
    const hex = Array.from(row, (b) => b.toString(16).padStart(2, '0')).join(' ');
    const text = Array.from(row, (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.')).join('');
    lines.push(`${offset.toString(16).padStart(8, '0')}  ${hex.padEnd(47)}  ${text}`);
  }
  return lines.join('\n');
}

/** JSON of a value for display (as text, never markup): indented, or on one line with `oneLine`. */
export const json = (value: unknown, oneLine = false): string =>
  oneLine ? JSON.stringify(value) : JSON.stringify(value, null, 2);

/** `<input type="datetime-local">` value (UTC, as the console shows times) to ISO 8601, or undefined. */
export function isoFromInput(value: string): string | undefined {
  return value ? `${value.length === 16 ? `${value}:00` : value}Z` : undefined;
}
