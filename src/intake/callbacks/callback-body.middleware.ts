import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { raw } from 'express';
import { DomainException, ErrorCode } from '../../platform/common/domain.exception.js';
import type { CallbackRequest, CallbackRequestState } from './callback-request.js';
import { requestIdOf } from '../../platform/observability/request-id.js';
import { contextOf, startServerSpan } from '../../platform/observability/tracing.js';
import { context } from '@opentelemetry/api';

const ACCEPTED_ENCODINGS = new Set(['identity', 'gzip', 'x-gzip', 'deflate']);

/**
 * The accepted `Content-Encoding` values as an ECMA-262 pattern for the API description: any case,
 * spelt out by hand (OpenAPI patterns have no flags).
 */
export const CONTENT_ENCODING_PATTERN = `^(?:${[...ACCEPTED_ENCODINGS]
  .map((e) => e.replace(/[a-z]/g, (c) => `[${c}${c.toUpperCase()}]`))
  .join('|')})$`;
const JSON_TYPE = /^application\/json\s*(;\s*charset\s*=\s*"?utf-?8"?\s*)?$/i;

/**
 * Reads the callback's body as raw bytes, before anything parses it (CONTRACT §3, §4 step 1):
 * `application/json` (charset utf-8 allowed) only, `gzip`/`deflate` decoded, at most `limit`
 * decoded bytes. Problems are not answered here: they are kept on `req.callback.bodyError` and
 * thrown by the signature guard, so every delivery goes through the same filter and audit.
 * Bodies being processed at once are limited to `maxInflightBytes` (a 503 beyond it).
 * `received` is told of each delivery at once; what it returns is called when its answer is
 * written or its connection closed (the governor's callbacks in flight, docs/background-work.md).
 */
export function callbackBodyMiddleware(
  limit: number,
  maxInflightBytes: number,
  received?: () => () => void,
): RequestHandler {
  let inflightBytes = 0;
  const parser = raw({ type: () => true, limit, inflate: true });
  return (req: Request, res: Response, proceed: NextFunction) => {
    const state: CallbackRequestState = { receivedAt: Date.now(), requestId: requestIdOf(req) };
    (req as CallbackRequest).callback = state;
    if (received) res.once('close', received());
    res.setHeader('X-Request-Id', state.requestId);
    // Tracing on: the delivery's span, ended once the answer is written; the rest runs inside it.
    const span = startServerSpan('callback', req.headers, { 'http.request.method': req.method });
    let next = proceed;
    if (span) {
      state.traceId = span.spanContext().traceId;
      const active = contextOf(span);
      next = (err?: unknown) => context.with(active, () => proceed(err));
      res.once('close', () => {
        span.setAttribute('http.response.status_code', res.statusCode);
        const c = (req as CallbackRequest).callback;
        if (c?.batchId) span.setAttribute('settlement.batch_id', c.batchId);
        span.end();
      });
    }
    const fail = (error: DomainException) => {
      (req as CallbackRequest).callback = { ...state, bodyError: error };
      req.resume();
      next();
    };
    if (req.method !== 'POST') return next();
    if (!JSON_TYPE.test(String(req.headers['content-type'] ?? ''))) {
      return fail(
        new DomainException(ErrorCode.UNSUPPORTED_MEDIA_TYPE, 'Content-Type must be application/json'),
      );
    }
    const encoding = String(req.headers['content-encoding'] ?? 'identity')
      .toLowerCase()
      .trim();
    // x-gzip is gzip (RFC 9110 §8.4.1.3); body-parser knows the name gzip only.
    if (encoding === 'x-gzip') req.headers['content-encoding'] = 'gzip';
    if (!ACCEPTED_ENCODINGS.has(encoding)) {
      return fail(
        new DomainException(
          ErrorCode.UNSUPPORTED_MEDIA_TYPE,
          'Content-Encoding must be gzip, deflate or identity',
        ),
      );
    }
    parser(req, res, (err?: unknown) => {
      if (err) {
        const e = err as { type?: string; status?: number };
        const error =
          e.type === 'entity.too.large'
            ? new DomainException(ErrorCode.PAYLOAD_TOO_LARGE, `body over ${limit} bytes`)
            : e.status === 415
              ? new DomainException(ErrorCode.UNSUPPORTED_MEDIA_TYPE, 'unsupported encoding')
              : new DomainException(ErrorCode.MALFORMED_JSON, 'the body could not be read or decoded');
        (req as CallbackRequest).callback = { ...state, bodyError: error };
        return next();
      }
      const body: unknown = req.body;
      const rawBody = Buffer.isBuffer(body) ? body : Buffer.alloc(0);
      // Admission: parsing and validation are CPU work on one thread. Past `maxInflightBytes` of
      // bodies being processed at once, a delivery is answered 503 at once (SportAPI retries it)
      // instead of queueing behind the others until every answer misses the deadline.
      if (inflightBytes + rawBody.length > maxInflightBytes && inflightBytes > 0) {
        (req as CallbackRequest).callback = {
          ...state,
          bodyError: new DomainException(ErrorCode.TRANSIENT_FAILURE, 'busy, retry later'),
        };
        return next();
      }
      inflightBytes += rawBody.length;
      res.once('close', () => {
        inflightBytes -= rawBody.length;
      });
      (req as CallbackRequest).callback = { ...state, rawBody };
      next();
    });
  };
}
