import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingMessage } from 'node:http';
import type { NextFunction, Response } from 'express';

/** The request being handled, for log lines written anywhere below it (CONTRACT §3: X-Request-Id next to batchId). */
const current = new AsyncLocalStorage<IncomingMessage>();

/** Express middleware: runs the rest of the request inside its log context. */
export function logContextMiddleware(req: IncomingMessage, _res: Response, next: NextFunction): void {
  current.run(req, next);
}

/** True inside a request passed through {@link logContextMiddleware} (its lines carry `requestId`). */
export function inRequestContext(): boolean {
  return current.getStore() !== undefined;
}

/**
 * pino `mixin`: the fields `requestFields` reads off the request being handled (the callback's
 * `batchId` once the body pipe has read it: lines before that, e.g. a 401 on an unreadable body,
 * have none). The request id is bound by pino-http itself.
 */
export function logContextMixin(
  requestFields: ((req: IncomingMessage) => Record<string, unknown>) | undefined,
): Record<string, unknown> {
  const req = current.getStore();
  return req && requestFields ? requestFields(req) : {};
}
