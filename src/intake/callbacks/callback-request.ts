import type { Request } from 'express';
import type { DomainException } from '../../platform/common/domain.exception.js';

/** What the callback pipeline learns about one request, carried on the Express request. */
export interface CallbackRequestState {
  /** Epoch milliseconds when the request arrived (start of the deadline). */
  receivedAt: number;
  requestId: string;
  /** Decoded body bytes, when they could be read. */
  rawBody?: Buffer;
  /** Error found while reading the body (413, 415, 400), thrown by the signature guard. */
  bodyError?: DomainException;
  /** Set once the signature matched: only signed bodies are quarantined (CONTRACT §8). */
  signatureVerified?: boolean;
  batchId?: string;
  couponCount?: number;
  payloadHash?: string;
  /** The delivery's trace id (32 hex) when tracing is on; stored with its attempt. */
  traceId?: string;
}

/** Express request with the callback state attached by the callback body middleware. */
export type CallbackRequest = Request & { callback?: CallbackRequestState };

/** The fields every log line written while a callback is handled carries: its batch id, once read. */
export function callbackLogFields(req: object): Record<string, unknown> {
  const batchId = (req as CallbackRequest).callback?.batchId;
  return batchId === undefined ? {} : { batchId };
}
