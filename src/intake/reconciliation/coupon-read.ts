import { createHash } from 'node:crypto';
import { DomainException, ErrorCode } from '../../platform/common/domain.exception.js';
import { parseExactJson, stringifyExactJson } from '../../platform/common/exact-json.js';
import { parseBatch } from '../../core/settlement/batch-parser.js';
import type { ParsedBatch } from '../../core/settlement/parsed-batch.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });
/** Keys whose numbers keep their digits in a coupon read (amounts: CONTRACT §3). */
const REAL_WIN_AS_TEXT: ReadonlySet<string> = new Set(['realWin']);

/** A validated coupon read: its compact JSON, that JSON's SHA-256, and the coupon as a one-coupon batch. */
export interface CouponRead {
  couponJson: string;
  hash: string;
  parsed: ParsedBatch;
}

/**
 * One coupon read (CONTRACT §9): the body parsed exactly (numbers keep their digits), written
 * back as compact JSON (the coupon JSON, whose SHA-256 names the batch), then validated as the
 * one coupon of a callback batch.
 * @throws DomainException SPORTAPI_BAD_RESPONSE naming what is wrong.
 */
export function pollRead(couponCode: string, body: Buffer, maxMinorUnits: number): CouponRead {
  let couponJson: string;
  try {
    const { value, lossless } = parseExactJson(utf8.decode(body), REAL_WIN_AS_TEXT);
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw new SyntaxError('not a JSON object');
    couponJson = stringifyExactJson(value, lossless);
  } catch (err) {
    throw new DomainException(
      ErrorCode.SPORTAPI_BAD_RESPONSE,
      `SportAPI's coupon read is not a JSON object (${err instanceof SyntaxError ? err.message.slice(0, 200) : 'not UTF-8'})`,
    );
  }
  let parsed: ParsedBatch;
  try {
    // Validated as a callback batch; the real batch id (longer than a callback's 64) is set after.
    parsed = parseBatch(
      Buffer.from(`{"batchId":"poll","couponCount":1,"coupons":[${couponJson}]}`),
      maxMinorUnits,
    );
  } catch (err) {
    if (!(err instanceof DomainException)) throw err;
    throw new DomainException(
      ErrorCode.SPORTAPI_BAD_RESPONSE,
      `SportAPI's coupon read is not a valid coupon: ${err.message}`,
      err.fields?.map((f) => ({ path: f.path.replace(/^coupons\[0\]\.?/, ''), message: f.message })),
    );
  }
  if (parsed.coupons[0].couponCode !== couponCode) {
    throw new DomainException(
      ErrorCode.SPORTAPI_BAD_RESPONSE,
      `SportAPI answered the read of coupon ${couponCode} with another coupon_code`,
      [{ path: 'coupon_code', message: `must be ${couponCode}` }],
    );
  }
  return { couponJson, hash: createHash('sha256').update(couponJson).digest('hex'), parsed };
}

/** The synthetic batch `batchId` of a validated coupon read. */
export function pollBatch(batchId: string, read: CouponRead): ParsedBatch {
  const rawBody = Buffer.from(
    `{"batchId":${JSON.stringify(batchId)},"couponCount":1,"coupons":[${read.couponJson}]}`,
  );
  return {
    ...read.parsed,
    batchId,
    rawBody,
    payloadHash: createHash('sha256').update(rawBody).digest('hex'),
  };
}
