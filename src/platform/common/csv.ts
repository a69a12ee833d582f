import { Readable } from 'node:stream';
import { stringify } from 'csv-stringify';

/**
 * Text that a spreadsheet or an importer may read as a formula (CSV injection, OWASP): a first
 * character `=`, `+`, `-`, `@` (or their full-width forms), tab, CR or LF; or such a formula
 * character after leading white space or invisible characters that an importer may trim or a
 * person does not see (JavaScript's `\s`: space, tab, LF, CR, U+00A0, U+FEFF, …; and the
 * zero-width U+200B..U+200D, U+2060).
 */
const FORMULA_START = /^(?:[\t\r\n]|[\s\u200B-\u200D\u2060]*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20])/;

/**
 * A text cell of data that came from outside (coupon codes, keys, reasons): prefixed with `'` when
 * it starts like a formula ({@link FORMULA_START}: `=1+2`, ` =1+2`, `\u200B=1+2`, `\n…`), so a
 * spreadsheet shows it as text instead of running it. Amounts are not passed through this: they
 * are decimal strings the receiver writes, and stay numbers a spreadsheet can sum.
 */
export function textCell(value: string | null): string {
  if (value === null) return '';
  return FORMULA_START.test(value) ? `'${value}` : value;
}

/**
 * A CSV document (RFC 4180: comma-separated, CRLF line ends, fields holding a comma, quote or line
 * break quoted, quotes doubled; csv-stringify) of `header` and then every record of `records`, as a
 * stream: pages are read one after the other while the answer is written, never all at once.
 */
export function csvStream(header: string[], records: AsyncIterable<string[][]>): Readable {
  // A bare CR or LF is quoted too (csv-stringify quotes only the record delimiter, CRLF, by itself).
  const csv = stringify({ record_delimiter: 'windows', quoted_match: /[\r\n]/, escape_formulas: false });
  csv.write(header);
  void (async () => {
    try {
      for await (const page of records) {
        for (const record of page) {
          if (!csv.write(record)) await new Promise((resume) => csv.once('drain', resume));
        }
      }
      csv.end();
    } catch (err) {
      csv.destroy(err as Error);
    }
  })();
  return csv;
}
