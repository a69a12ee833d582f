import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { text } from 'express';
import type { Observable } from 'rxjs';
import { DomainException, ErrorCode } from './domain.exception.js';
import { validationCopy, parseExactJson } from './exact-json.js';
import { toStorableText } from './validation.js';

/** A partner API body as read before the route's guard: its text, or why it could not be read. */
interface PartnerBody {
  text?: string;
  error?: DomainException;
}

type PartnerRequest = Request & { partnerBody?: PartnerBody };

const JSON_TYPES = ['application/json', 'application/*+json'];

/**
 * Express middleware for every request but the callback: reads an `application/json` body of at
 * most 100 KB as text and notes it, or notes why it could not be (415 another or no content type,
 * 413 too large, 400 unreadable). Nothing is parsed or answered here: {@link PartnerBodyInterceptor}
 * does both after the route's guard, so a request without a valid key gets 401 (and counts as a
 * failed authentication) whatever its body.
 */
export function partnerBodyMiddleware(): RequestHandler {
  const reader = text({ type: JSON_TYPES, limit: '100kb' });
  return (req: PartnerRequest, res: Response, next: NextFunction) => {
    const fail = (code: ErrorCode, message: string) => {
      req.partnerBody = { error: new DomainException(code, message) };
      next();
    };
    const hasBody =
      Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;
    if (hasBody && !req.is(JSON_TYPES)) {
      req.resume();
      return fail(ErrorCode.UNSUPPORTED_MEDIA_TYPE, 'the request body must be application/json');
    }
    reader(req, res, (err?: unknown) => {
      if (err) {
        const e = err as { status?: number };
        if (e.status === 413) return fail(ErrorCode.PAYLOAD_TOO_LARGE, 'the request body is too large');
        if (e.status === 415)
          return fail(ErrorCode.UNSUPPORTED_MEDIA_TYPE, 'unsupported charset or encoding');
        return fail(ErrorCode.MALFORMED_JSON, 'the request body could not be read');
      }
      const body: unknown = req.body;
      req.body = undefined;
      if (typeof body === 'string' && body.trim() !== '') req.partnerBody = { text: body };
      next();
    });
  };
}

/**
 * A partner API body's JSON text as the validation pipe gets it: parsed exactly, numbers a double
 * cannot hold as `NaN` (see `validationCopy`), `__proto__` and `constructor` keys kept as own
 * properties so that `CurrencyValidationPipe` refuses them as undeclared fields.
 * @throws SyntaxError as `parseExactJson`.
 */
export function parsePartnerBody(text: string): unknown {
  return validationCopy(parseExactJson(text, undefined, undefined, 'keep').value, 'keep');
}

/**
 * Global interceptor (after the guards): the body {@link partnerBodyMiddleware} read becomes
 * `req.body`, parsed with the exact JSON parser, so a duplicate key
 * (`{"amount":"1.00","amount":"-90.00"}`) or nesting deeper than 32 levels is a 400 instead of a
 * silent last-wins or a stack overflow, and numbers keep their digits (an amount sent as a JSON
 * number still fails the decimal-string rule) ({@link parsePartnerBody}).
 * @throws DomainException MALFORMED_JSON (400), PAYLOAD_TOO_LARGE (413), UNSUPPORTED_MEDIA_TYPE (415).
 */
@Injectable()
export class PartnerBodyInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const req = context.switchToHttp().getRequest<PartnerRequest>();
    const body = req.partnerBody;
    if (body?.error) throw body.error;
    if (body?.text !== undefined) {
      try {
        req.body = parsePartnerBody(body.text);
      } catch (parseError) {
        const reason =
          parseError instanceof SyntaxError ? `: ${toStorableText(parseError.message).slice(0, 200)}` : '';
        throw new DomainException(ErrorCode.MALFORMED_JSON, `the request body is not valid JSON${reason}`);
      }
      req.partnerBody = undefined;
    }
    return next.handle();
  }
}
