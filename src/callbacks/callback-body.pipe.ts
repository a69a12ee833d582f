import { createHash } from 'node:crypto';
import { Inject, Injectable, PipeTransform } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { APP_CONFIG } from '../config/configuration.js';
import type { AppConfig } from '../config/configuration.js';
import { DomainException, ErrorCode, FieldError } from '../common/domain.exception.js';
import { parseAmount } from '../common/money.js';
import type { CallbackRequestState } from '../common/request-context.js';
import { flattenValidationErrors } from '../common/validation.js';
import { CallbackBatchDto } from './dto/callback-batch.dto.js';
import { ParsedBatch, ParsedCoupon } from './parsed-batch.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** JSON.parse that drops `__proto__` keys, so no parsed object can change a prototype. */
function parseJson(text: string): unknown {
  return JSON.parse(text, (key, value: unknown) => (key === '__proto__' ? undefined : value));
}

/**
 * Parses and validates a batch whose signature was verified (CONTRACT §3, §4 step 2): UTF-8 JSON,
 * the DTO's field rules, `couponCount` = `coupons.length`, no `coupon_code` twice in the batch, no
 * `uuid` twice in a coupon, `realWin` a decimal with at most `AMOUNT_SCALE` fraction digits.
 * @throws DomainException MALFORMED_JSON or VALIDATION_FAILED (400) with the failing paths.
 */
export function parseBatch(rawBody: Buffer, amountScale: number): ParsedBatch {
  let parsed: unknown;
  try {
    parsed = parseJson(utf8.decode(rawBody));
  } catch {
    throw new DomainException(ErrorCode.MALFORMED_JSON, 'the body is not valid UTF-8 JSON');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new DomainException(ErrorCode.VALIDATION_FAILED, 'the body must be a JSON object', [
      { path: '', message: 'must be an object' },
    ]);
  }
  const dto = plainToInstance(CallbackBatchDto, parsed);
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
      if (c.realWin !== null && c.realWin !== undefined && parseAmount(c.realWin, amountScale) === null) {
        fields.push({
          path: `coupons[${i}].realWin`,
          message: `realWin must be a non-negative decimal with at most ${amountScale} fraction digits`,
        });
      }
    });
  }
  if (fields.length)
    throw new DomainException(ErrorCode.VALIDATION_FAILED, 'the batch does not match the contract', fields);

  const source = parsed as { coupons: Record<string, unknown>[] };
  const coupons: ParsedCoupon[] = dto.coupons.map((c, i) => ({
    couponCode: c.coupon_code,
    status: c.status,
    realWin: c.realWin === null || c.realWin === undefined ? null : parseAmount(c.realWin, amountScale),
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
  };
}

/** Pipe form of {@link parseBatch}; records `batchId` on the request for the delivery audit. */
@Injectable()
export class CallbackBodyPipe implements PipeTransform<CallbackRequestState, ParsedBatch> {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  transform(state: CallbackRequestState): ParsedBatch {
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
    return typeof v === 'string' && v.length <= 64 ? v : undefined;
  } catch {
    return undefined;
  }
}
