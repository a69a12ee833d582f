import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { text } from 'express';
import { ErrorCode } from './domain.exception.js';
import { validationCopy, parseExactJson } from './exact-json.js';
import { toStorableText } from './validation.js';

/**
 * Reads partner API bodies (`application/json`, 100 KB): parsed with the exact JSON parser, so a
 * duplicate key (`{"amount":"1.00","amount":"-90.00"}`) or nesting deeper than 32 levels is a 400
 * instead of a silent last-wins or a stack overflow, and numbers keep their digits (an amount sent
 * as a JSON number still fails the decimal-string rule). A body of another (or no) content type
 * is a 415, not an empty body failing every field. Errors are answered here as JSON.
 */
export function partnerJsonMiddleware(): RequestHandler {
  const reader = text({ type: ['application/json', 'application/*+json'], limit: '100kb' });
  const fail = (res: Response, status: number, code: ErrorCode, message: string) =>
    res.status(status).json({ success: false, error: { code, message } });
  return (req: Request, res: Response, next: NextFunction) => {
    const hasBody =
      Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
    if (hasBody && !req.is(['application/json', 'application/*+json'])) {
      return fail(res, 415, ErrorCode.UNSUPPORTED_MEDIA_TYPE, 'the request body must be application/json');
    }
    reader(req, res, (err?: unknown) => {
      if (err) {
        const e = err as { status?: number };
        if (e.status === 413)
          return fail(res, 413, ErrorCode.PAYLOAD_TOO_LARGE, 'the request body is too large');
        if (e.status === 415)
          return fail(res, 415, ErrorCode.UNSUPPORTED_MEDIA_TYPE, 'unsupported charset or encoding');
        return fail(res, 400, ErrorCode.MALFORMED_JSON, 'the request body could not be read');
      }
      const body: unknown = req.body;
      if (typeof body !== 'string') return next();
      if (body.trim() === '') {
        req.body = undefined;
        return next();
      }
      try {
        req.body = validationCopy(parseExactJson(body).value);
      } catch (parseError) {
        const reason =
          parseError instanceof SyntaxError ? `: ${toStorableText(parseError.message).slice(0, 200)}` : '';
        return fail(res, 400, ErrorCode.MALFORMED_JSON, `the request body is not valid JSON${reason}`);
      }
      next();
    });
  };
}
