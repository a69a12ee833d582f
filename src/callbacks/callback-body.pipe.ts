import { createHash } from 'node:crypto';
import { Inject, Injectable, PipeTransform } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { isLosslessNumber } from 'lossless-json';
import { losslessToText, parseExactJson } from '../common/exact-json.js';
import { APP_CONFIG } from '../config/configuration.js';
import type { AppConfig } from '../config/configuration.js';
import { DomainException, ErrorCode, FieldError } from '../common/domain.exception.js';
import { parseAmount } from '../common/money.js';
import type { CallbackRequestState } from '../common/request-context.js';
import { DeadlineExceededError } from '../database/transaction.js';
import {
  flattenValidationErrors,
  toStorable,
  toStorableText,
  UNSTORABLE_TEXT,
} from '../common/validation.js';
import { CallbackBatchDto } from './dto/callback-batch.dto.js';
import { ParsedBatch, ParsedCoupon } from './parsed-batch.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** JSON text that may decode to such characters: only escapes can (raw ones are invalid JSON/UTF-8). */
const UNSTORABLE_ESCAPE = /\\u(?:0000|d[89a-f][0-9a-f]{2})/i;

/**
 * What keeps `value` from being stored as an identifier of at most `max` characters (code points,
 * as the database's CHECK constraints count them), or undefined. Such a body must be a 400, not a
 * database error answered 503 and retried forever.
 */
function identifierProblem(value: string, max: number): string | undefined {
  if (UNSTORABLE_TEXT.test(value)) return 'must not contain U+0000 or unpaired surrogates';
  if ([...value].length > max) return `must be at most ${max} characters`;
  return undefined;
}

/** Keys whose numbers always keep their digits (amounts: CONTRACT §3). */
const AMOUNT_KEYS: ReadonlySet<string> = new Set(['realWin']);

/** The text of an amount as sent: a string, or a JSON number's original digits. */
function amountText(value: unknown): unknown {
  return isLosslessNumber(value) ? value.toString() : value;
}

/**
 * Parses and validates a batch whose signature was verified (CONTRACT §3, §4 step 2): UTF-8 JSON,
 * the DTO's field rules, `couponCount` = `coupons.length`, no `coupon_code` twice in the batch, no
 * `uuid` twice in a coupon, `realWin` a decimal with at most `AMOUNT_SCALE` fraction digits.
 * `batchId`, `coupon_code` and `uuid` must be storable text (no U+0000 or unpaired surrogates, length
 * in code points); other strings are stored with such characters replaced by U+FFFD.
 * @throws DomainException MALFORMED_JSON or VALIDATION_FAILED (400) with the failing paths.
 */
export function parseBatch(rawBody: Buffer, amountScale: number): ParsedBatch {
  let parsed: unknown;
  let lossless: boolean;
  let text: string;
  try {
    text = utf8.decode(rawBody);
    ({ value: parsed, lossless } = parseExactJson(text, AMOUNT_KEYS));
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
  // realWin is read from the parsed JSON itself: a JSON number's original digits (LosslessNumber)
  // do not survive class-transformer.
  const realWinOf = (i: number): unknown =>
    amountText((parsed as { coupons: Record<string, unknown>[] }).coupons[i].realWin);
  const dto = plainToInstance(CallbackBatchDto, losslessToText(parsed));
  const fields: FieldError[] = flattenValidationErrors(validateSync(dto, { forbidUnknownValues: false }));
  if (!fields.length) {
    if (dto.couponCount !== dto.coupons.length) {
      fields.push({
        path: 'couponCount',
        message: `couponCount ${dto.couponCount} != coupons.length ${dto.coupons.length}`,
      });
    }
    const identifier = (path: string, value: string, max: number) => {
      const problem = identifierProblem(value, max);
      if (problem) fields.push({ path, message: `${path.replace(/^.*\./, '')} ${problem}` });
    };
    identifier('batchId', dto.batchId, 64);
    const seen = new Set<string>();
    dto.coupons.forEach((c, i) => {
      identifier(`coupons[${i}].coupon_code`, c.coupon_code, 32);
      c.events.forEach((e, j) => identifier(`coupons[${i}].events[${j}].uuid`, e.uuid, 64));
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
      if (c.realWin !== null && c.realWin !== undefined && parseAmount(realWinOf(i), amountScale) === null) {
        fields.push({
          path: `coupons[${i}].realWin`,
          message: `realWin must be a non-negative decimal with at most ${amountScale} fraction digits`,
        });
      }
    });
  }
  if (fields.length)
    throw new DomainException(ErrorCode.VALIDATION_FAILED, 'the batch does not match the contract', fields);

  const source = (UNSTORABLE_ESCAPE.test(text) ? toStorable(parsed) : parsed) as {
    coupons: Record<string, unknown>[];
  };
  const coupons: ParsedCoupon[] = dto.coupons.map((c, i) => ({
    couponCode: c.coupon_code,
    status: c.status,
    realWin: c.realWin === null || c.realWin === undefined ? null : parseAmount(realWinOf(i), amountScale),
    events: c.events.map((e, j) => ({
      uuid: e.uuid,
      status: e.status,
      payload: (source.coupons[i].events as Record<string, unknown>[])[j],
    })),
    payload: source.coupons[i],
  }));
  return {
    batchId: dto.batchId,
    couponCount: dto.couponCount,
    coupons,
    rawBody,
    payloadHash: createHash('sha256').update(rawBody).digest('hex'),
    losslessNumbers: lossless,
  };
}

/** Pipe form of {@link parseBatch}; records `batchId` on the request for the delivery audit. */
@Injectable()
export class CallbackBodyPipe implements PipeTransform<CallbackRequestState, ParsedBatch> {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  transform(state: CallbackRequestState): ParsedBatch {
    // Under a burst of large batches parsing queues behind other work; a request that has already
    // used three quarters of its deadline is answered 503 at once instead of being parsed.
    if (Date.now() - state.receivedAt > this.config.callbackDeadlineMs * 0.75)
      throw new DeadlineExceededError();
    const rawBody = state.rawBody ?? Buffer.alloc(0);
    state.payloadHash = createHash('sha256').update(rawBody).digest('hex');
    try {
      const batch = parseBatch(rawBody, this.config.amountScale);
      state.batchId = batch.batchId;
      state.couponCount = batch.couponCount;
      return batch;
    } catch (err) {
      state.batchId = batchIdHint(rawBody);
      throw err;
    }
  }
}

/** Best-effort `batchId` of a rejected body, for the audit only. */
function batchIdHint(rawBody: Buffer): string | undefined {
  try {
    const v = (JSON.parse(rawBody.toString('utf8')) as { batchId?: unknown }).batchId;
    return typeof v === 'string' && identifierProblem(v, 64) === undefined ? v : undefined;
  } catch {
    return undefined;
  }
}
