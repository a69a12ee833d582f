import { AsyncLocalStorage } from 'node:async_hooks';
import type { NextFunction, Response } from 'express';
import type { CallbackRequest } from '../callbacks/callback-request.js';

/** The request being handled, for log lines written anywhere below it (CONTRACT §3: X-Request-Id next to batchId). */
const current = new AsyncLocalStorage<CallbackRequest>();

/** Express middleware: runs the rest of the request inside its log context. */
export function logContextMiddleware(req: CallbackRequest, _res: Response, next: NextFunction): void {
  current.run(req, next);
}

/** True inside a request passed through {@link logContextMiddleware} (its lines carry `requestId`). */
export function inRequestContext(): boolean {
  return current.getStore() !== undefined;
}

/**
 * pino `mixin`: adds the callback's `batchId` to every log line once the body pipe has read it
 * (lines before that, e.g. a 401 on an unreadable body, have none). The request id is bound by
 * pino-http itself.
 */
export function logContextMixin(): { batchId?: string } {
  const batchId = current.getStore()?.callback?.batchId;
  return batchId === undefined ? {} : { batchId };
}
