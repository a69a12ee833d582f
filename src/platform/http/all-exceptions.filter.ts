import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { DeadlineExceededError } from '../database/transaction.js';
import { TransientError } from '../common/transient-error.js';
import { dataExceptionRefusal, isTransient } from '../database/pg-errors.js';
import { DomainException, ErrorCode, HTTP_STATUS_OF } from '../common/domain.exception.js';

const HTTP_CODE: Record<number, ErrorCode> = {
  400: ErrorCode.VALIDATION_FAILED,
  401: ErrorCode.UNAUTHORIZED,
  404: ErrorCode.NOT_FOUND,
  409: ErrorCode.COUPON_CONFLICT,
  413: ErrorCode.PAYLOAD_TOO_LARGE,
  415: ErrorCode.UNSUPPORTED_MEDIA_TYPE,
  503: ErrorCode.TRANSIENT_FAILURE,
};

const transient = () =>
  new DomainException(ErrorCode.TRANSIENT_FAILURE, 'temporarily unavailable, retry later');

/**
 * The answer to an exception (CONTRACT §5): {@link DomainException} codes (module exceptions
 * such as the ledger's extend it) through {@link HTTP_STATUS_OF}; data exceptions (SQLSTATE class
 * 22, CHECK) 400; transient database trouble and deadlines 503 `transient_failure`; anything
 * unexpected 500, or 503 when `retryable` (the callback: its sender retries, so it never gets a
 * 500). Messages are safe to show: never stacks, SQL or secrets.
 */
export function classifyException(
  exception: unknown,
  retryable: boolean,
): { status: number; domain: DomainException } {
  let status: number;
  let domain: DomainException;
  if (exception instanceof DomainException) {
    status = HTTP_STATUS_OF[exception.code];
    domain = exception;
  } else if (exception instanceof HttpException) {
    status = exception.getStatus();
    const code = HTTP_CODE[status] ?? (status >= 500 ? ErrorCode.INTERNAL : ErrorCode.VALIDATION_FAILED);
    const message = status === 404 ? 'no such route' : status >= 500 ? 'internal error' : exception.message;
    domain = new DomainException(code, message);
  } else {
    const refusal = dataExceptionRefusal(exception, 'a value in the request cannot be stored');
    if (refusal) return { status: 400, domain: refusal };
    const designed =
      exception instanceof DeadlineExceededError ||
      exception instanceof TransientError ||
      isTransient(exception);
    status = designed ? 503 : 500;
    domain = designed ? transient() : new DomainException(ErrorCode.INTERNAL, 'internal error');
  }
  if (retryable && status >= 500 && status !== 503) return { status: 503, domain: transient() };
  return { status, domain };
}

/**
 * Writes the error answer `{success: false, error: {code, message, fields?}}` with `status`, and
 * logs a 5xx: a designed answer (a DomainException such as SportAPI unavailable, a database outage
 * or the deadline) as a warning whose message says it all, anything else as an error with its
 * stack.
 */
export function answerError(
  logger: Logger,
  req: Request,
  res: Response,
  answer: { status: number; domain: DomainException },
  exception: unknown,
  context = '',
): void {
  const { status, domain } = answer;
  if (status >= 500) {
    const err = exception as Error;
    const line = `${req.method} ${req.path} → ${status} ${domain.code}${context}: ${err?.message ?? String(exception)}`;
    const designed =
      (exception instanceof DomainException && HTTP_STATUS_OF[exception.code] !== 500) ||
      exception instanceof DeadlineExceededError ||
      isTransient(exception);
    if (designed) logger.warn(line);
    else logger.error(line, err?.stack);
  }
  if (res.headersSent) return;
  res.status(status).json({
    success: false,
    error: {
      code: domain.code,
      message: domain.message,
      ...(domain.fields?.length ? { fields: domain.fields } : {}),
    },
  });
}

/** The global exception filter: every route but the callback, which has its own (CallbackExceptionFilter). */
@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger('Exceptions');

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    answerError(
      this.logger,
      ctx.getRequest<Request>(),
      ctx.getResponse<Response>(),
      classifyException(exception, false),
      exception,
    );
  }
}
