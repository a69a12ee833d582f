import { createHash } from 'node:crypto';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { isLosslessNumber } from 'lossless-json';
import { validationCopy, parseExactJson } from '../../platform/common/exact-json.js';
import { DomainException, ErrorCode, FieldError } from '../../platform/common/domain.exception.js';
import { formatAmount, parseAmount } from '../../platform/common/money.js';
import {
  flattenValidationErrors,
  identifierProblem,
  toStorable,
  toStorableText,
} from '../../platform/common/validation.js';
import { CallbackBatchDto } from './dto/callback-batch.dto.js';
import { ParsedBatch, ParsedCoupon } from './parsed-batch.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** JSON text that may decode to such characters: only escapes can (raw ones are invalid JSON/UTF-8). */
const UNSTORABLE_ESCAPE = /\\u(?:0000|d[89a-f][0-9a-f]{2})/i;

/** Keys whose numbers always keep their digits (amounts: CONTRACT §3). */
const AMOUNT_KEYS: ReadonlySet<string> = new Set(['realWin']);

/** The text of an amount as sent: a string, or a JSON number's original digits. */
function amountText(value: unknown): unknown {
  return isLosslessNumber(value) ? value.toString() : value;
}

/**
 * A `realWin` with at most `maxMinorUnits` fraction digits in canonical form: 2 fraction digits, or
 * as many as its value needs (`"185.50"`, `"12.345"`; 0 when no allowed currency has any), or null.
 */
function canonicalRealWin(value: unknown, maxMinorUnits: number): string | null {
  const parsed = parseAmount(value, maxMinorUnits);
  return parsed === null ? null : formatAmount(parsed, Math.min(2, maxMinorUnits));
}

/** A batch that passed validation: identifiers, statuses and canonical `realWin`s, in body order. */
interface ValidBatch {
  batchId: string;
  couponCount: number;
  coupons: {
    coupon_code: string;
    status: number;
    realWin: string | null;
    events: { uuid: string; status: number }[];
  }[];
}

/** Printable ASCII of 1..max characters: its length is the same in UTF-16 units and code points. */
function isIdentifier(v: unknown, max: 32 | 64): v is string {
  if (typeof v !== 'string' || v.length < 1 || v.length > max) return false;
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}
const isInt4 = (v: unknown): v is number =>
  typeof v === 'number' && Number.isInteger(v) && v >= -2147483648 && v <= 2147483647;
const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !isLosslessNumber(v);

/**
 * The hot-path check of CONTRACT §3 (the rules of {@link CallbackBatchDto} plus the batch rules of
 * {@link parseBatch}), written out by hand: class-validator and class-transformer cost ~5 ms per
 * 100-coupon batch. It is deliberately narrower than the DTO: it returns the batch only when every
 * rule holds and every identifier is printable ASCII (so lengths and storability need no code
 * point counting), and `undefined` for anything else, which then goes through the DTO for its
 * verdict and error paths. So a body is never accepted here that the DTO would refuse, and the
 * unit tests compare both paths on the same bodies.
 */
export function readValidBatch(parsed: unknown, maxMinorUnits: number): ValidBatch | undefined {
  if (!isPlainObject(parsed)) return undefined;
  const { batchId, couponCount, coupons } = parsed;
  if (!isIdentifier(batchId, 64) || !isInt4(couponCount) || !Array.isArray(coupons)) return undefined;
  if (coupons.length < 1 || coupons.length > 100 || couponCount !== coupons.length) return undefined;
  const codes = new Set<string>();
  const out: ValidBatch['coupons'] = new Array(coupons.length);
  for (let i = 0; i < coupons.length; i++) {
    const c: unknown = coupons[i];
    if (!isPlainObject(c)) return undefined;
    const code = c.coupon_code;
    if (!isIdentifier(code, 32) || codes.has(code) || !isInt4(c.status)) return undefined;
    codes.add(code);
    let realWin: string | null = null;
    const win = c.realWin;
    if (win !== null && win !== undefined) {
      if (typeof win !== 'string' && typeof win !== 'number' && !isLosslessNumber(win)) return undefined;
      realWin = canonicalRealWin(amountText(win), maxMinorUnits);
      if (realWin === null) return undefined;
    }
    const events = c.events;
    if (!Array.isArray(events) || events.length > 1000) return undefined;
    const uuids = new Set<string>();
    const outEvents: ValidBatch['coupons'][number]['events'] = new Array(events.length);
    for (let j = 0; j < events.length; j++) {
      const e: unknown = events[j];
      if (!isPlainObject(e) || !isIdentifier(e.uuid, 64) || uuids.has(e.uuid) || !isInt4(e.status))
        return undefined;
      uuids.add(e.uuid);
      outEvents[j] = { uuid: e.uuid, status: e.status };
    }
    out[i] = { coupon_code: code, status: c.status, realWin, events: outEvents };
  }
  return { batchId, couponCount, coupons: out };
}

/**
 * `must be an object` at each coupon and event that is not a JSON object. class-validator's
 * `@ValidateNested` passes an array item over unchecked, which then broke the rules after it (a
 * TypeError answered 503, so the sender retried a bad body for ever).
 */
function nonObjectItems(parsed: Record<string, unknown>): FieldError[] {
  const out: FieldError[] = [];
  const coupons = Array.isArray(parsed.coupons) ? (parsed.coupons as unknown[]) : [];
  coupons.forEach((c, i) => {
    if (!isPlainObject(c)) return out.push({ path: `coupons[${i}]`, message: 'must be an object' });
    if (Array.isArray(c.events))
      (c.events as unknown[]).forEach((e, j) => {
        if (!isPlainObject(e)) out.push({ path: `coupons[${i}].events[${j}]`, message: 'must be an object' });
      });
  });
  return out;
}

/**
 * The DTO path: class-transformer + class-validator, then the rules the DTO cannot express.
 * @throws DomainException VALIDATION_FAILED with every failing path.
 */
function validateWithDto(parsed: Record<string, unknown>, maxMinorUnits: number): ValidBatch {
  const shape = nonObjectItems(parsed);
  if (shape.length)
    throw new DomainException(ErrorCode.VALIDATION_FAILED, 'the batch does not match the contract', shape);
  // realWin is read from the parsed JSON itself: a JSON number's original digits (LosslessNumber)
  // do not survive class-transformer.
  const realWinOf = (i: number): unknown =>
    amountText((parsed as { coupons: Record<string, unknown>[] }).coupons[i].realWin);
  const dto = plainToInstance(CallbackBatchDto, validationCopy(parsed));
  const fields: FieldError[] = flattenValidationErrors(validateSync(dto, { forbidUnknownValues: false }));
  if (!fields.length) {
    if (dto.couponCount !== dto.coupons.length) {
      fields.push({
        path: 'couponCount',
        message: `couponCount ${dto.couponCount} != coupons.length ${dto.coupons.length}`,
      });
    }
    const seen = new Set<string>();
    dto.coupons.forEach((c, i) => {
      if (seen.has(c.coupon_code))
        fields.push({ path: `coupons[${i}].coupon_code`, message: 'coupon_code appears twice in the batch' });
      seen.add(c.coupon_code);
      const uuids = new Set<string>();
      c.events.forEach((e, j) => {
        if (uuids.has(e.uuid))
          fields.push({
            path: `coupons[${i}].events[${j}].uuid`,
            message: 'uuid appears twice in the coupon',
          });
        uuids.add(e.uuid);
      });
      if (
        c.realWin !== null &&
        c.realWin !== undefined &&
        canonicalRealWin(realWinOf(i), maxMinorUnits) === null
      ) {
        fields.push({
          path: `coupons[${i}].realWin`,
          message: `realWin must be a non-negative decimal with at most ${maxMinorUnits} fraction digits (the most any allowed currency has)`,
        });
      }
    });
  }
  if (fields.length)
    throw new DomainException(ErrorCode.VALIDATION_FAILED, 'the batch does not match the contract', fields);
  return {
    batchId: dto.batchId,
    couponCount: dto.couponCount,
    coupons: dto.coupons.map((c, i) => ({
      coupon_code: c.coupon_code,
      status: c.status,
      realWin:
        c.realWin === null || c.realWin === undefined ? null : canonicalRealWin(realWinOf(i), maxMinorUnits),
      events: c.events.map((e) => ({ uuid: e.uuid, status: e.status })),
    })),
  };
}

/**
 * Parses and validates a batch whose signature was verified (CONTRACT §3, §4 step 2): UTF-8 JSON,
 * the DTO's rules, `couponCount` = `coupons.length`, no `coupon_code` twice, no `uuid` twice in a
 * coupon, `realWin` with at most `maxMinorUnits` fraction digits (the most any allowed currency
 * has; a registered coupon's own currency is checked when it is settled), storable identifiers. The usual
 * body is decided by {@link readValidBatch}; any other goes through class-validator and the DTO
 * (`options.compiled: false` forces that path), so the verdict and field paths are the DTO's.
 * @throws DomainException MALFORMED_JSON or VALIDATION_FAILED (400) with the failing paths.
 */
export function parseBatch(
  rawBody: Buffer,
  maxMinorUnits: number,
  options: { compiled?: boolean } = {},
): ParsedBatch {
  let parsed: unknown;
  let lossless: boolean;
  let extreme: boolean;
  let text: string;
  try {
    text = utf8.decode(rawBody);
    ({ value: parsed, lossless, extreme } = parseExactJson(text, AMOUNT_KEYS));
  } catch (err) {
    // The parser's message may quote the body: keep it short and storable (it goes to the quarantine).
    const reason = err instanceof SyntaxError ? toStorableText(err.message).slice(0, 200) : 'not UTF-8';
    throw new DomainException(ErrorCode.MALFORMED_JSON, `the body is not valid UTF-8 JSON (${reason})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new DomainException(ErrorCode.VALIDATION_FAILED, 'the body must be a JSON object', [
      { path: '', message: 'must be an object' },
    ]);
  }
  const fast = options.compiled === false ? undefined : readValidBatch(parsed, maxMinorUnits);
  const valid = fast ?? validateWithDto(parsed as Record<string, unknown>, maxMinorUnits);
  const source = (UNSTORABLE_ESCAPE.test(text) ? toStorable(parsed) : parsed) as {
    coupons: Record<string, unknown>[];
  };
  const coupons: ParsedCoupon[] = valid.coupons.map((c, i) => ({
    couponCode: c.coupon_code,
    status: c.status,
    realWin: c.realWin,
    events: c.events.map((e, j) => ({
      uuid: e.uuid,
      status: e.status,
      payload: (source.coupons[i].events as Record<string, unknown>[])[j],
    })),
    payload: source.coupons[i],
  }));
  return {
    batchId: valid.batchId,
    couponCount: valid.couponCount,
    coupons,
    rawBody,
    payloadHash: createHash('sha256').update(rawBody).digest('hex'),
    losslessNumbers: lossless,
    // jsonb of these bytes holds the same keys and strings as the parsed payloads: no escapes
    // that decode to U+0000, surrogates or a disguised `__proto__`, no `__proto__` key, no BOM;
    // and PostgreSQL can hold every number of the whole body, unknown fields outside `coupons`
    // included (an exponent such as 1e1000000 or a very long digit run may not fit `numeric`;
    // the coupons' own payloads then go as lossless JSON text).
    payloadsAsSent: rawBody[0] !== 0xef && !text.includes('\\u') && !text.includes('__proto__') && !extreme,
  };
}

/**
 * Best-effort `batchId` of a rejected body, for the audit only (the quarantine row's `batch_id`):
 * the value of the **first** top-level `batchId` key, when the body is JSON and that value is a
 * storable string of 1..64 characters. A body with the key twice is refused (duplicate keys), and
 * is filed under the value a reader sees first, not under `JSON.parse`'s last.
 */
export function batchIdHint(rawBody: Buffer): string | undefined {
  try {
    const text = rawBody.toString('utf8');
    if (!isPlainObject(JSON.parse(text))) return undefined;
    const v = firstTopLevelString(text, 'batchId');
    return v !== undefined && identifierProblem(v, 64) === undefined ? v : undefined;
  } catch {
    return undefined;
  }
}

/** Index just past the JSON string token whose opening quote is at `start`. */
function stringEnd(text: string, start: number): number {
  let i = start + 1;
  while (text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
  return i + 1;
}

/**
 * The value of the first `key` of the top-level object of valid JSON `text`, when it is a string;
 * else undefined. Scans the tokens, skipping strings and nested values, without building them.
 */
function firstTopLevelString(text: string, key: string): string | undefined {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
    else if (c === '"') {
      const end = stringEnd(text, i);
      let next = end;
      while (/\s/.test(text[next] ?? '')) next++;
      if (depth === 1 && text[next] === ':' && JSON.parse(text.slice(i, end)) === key) {
        let value = next + 1;
        while (/\s/.test(text[value] ?? '')) value++;
        if (text[value] !== '"') return undefined;
        return JSON.parse(text.slice(value, stringEnd(text, value))) as string;
      }
      i = end - 1;
    }
  }
  return undefined;
}
