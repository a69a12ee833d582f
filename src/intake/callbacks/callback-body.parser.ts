import { createHash } from 'node:crypto';
import { batchIdHint, parseBatch } from '../../core/settlement/batch-parser.js';
import type { ParsedBatch } from '../../core/settlement/parsed-batch.js';
import type { CallbackRequestState } from './callback-request.js';

/**
 * {@link parseBatch} of a delivery whose signature was verified, noting `batchId`, `couponCount`
 * and `payloadHash` (SHA-256 of the raw body) on the request state for the delivery audit and the
 * quarantine (a best-effort `batchId` when the body is refused). @throws what {@link parseBatch}
 * throws.
 */
export function parseDelivery(state: CallbackRequestState, maxMinorUnits: number): ParsedBatch {
  const rawBody = state.rawBody ?? Buffer.alloc(0);
  try {
    const batch = parseBatch(rawBody, maxMinorUnits);
    state.batchId = batch.batchId;
    state.couponCount = batch.couponCount;
    state.payloadHash = batch.payloadHash;
    return batch;
  } catch (err) {
    state.batchId = batchIdHint(rawBody);
    state.payloadHash ??= createHash('sha256').update(rawBody).digest('hex');
    throw err;
  }
}
