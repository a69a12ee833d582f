import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Response } from 'express';
import { DeliveryAuditService } from '../callbacks/delivery-audit.service.js';
import { DeadlineExceededError } from '../database/transaction.js';
import { dataExceptionRefusal, isTransient } from '../database/pg-errors.js';
import { DomainException, ErrorCode, HTTP_STATUS_OF } from './domain.exception.js';
import type { CallbackRequest } from './request-context.js';

const HTTP_CODE: Record<number, ErrorCode> = {
  400: ErrorCode.VALIDATION_FAILED,
  401: ErrorCode.UNAUTHORIZED,
  404: ErrorCode.NOT_FOUND,
  409: ErrorCode.COUPON_CONFLICT,
  413: ErrorCode.PAYLOAD_TOO_LARGE,
  415: ErrorCode.UNSUPPORTED_MEDIA_TYPE,
  503: ErrorCode.TRANSIENT_FAILURE,
};

/**
 * The one exception filter (CONTRACT §5): maps {@link DomainException} codes to HTTP through
 * {@link HTTP_STATUS_OF}; transient database trouble and deadlines to 503 `transient_failure`;
 * anything unexpected to 503 on the callback (the sender retries) and 500 elsewhere. Bodies are
 * `{success: false, error: {code, message, fields?}}` and never carry stacks, SQL or secrets.
 * On the callback, the failed delivery is recorded (and a signed 400/409 body quarantined)
 * after the rollback, before answering (§8); a body that could not be quarantined is answered
 * 503 instead, so it is delivered again. Data exceptions (SQLSTATE class 22) are the caller's: 400.
 */
@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger('Exceptions');

  constructor(private readonly audit: DeliveryAuditService) {}

  async catch(exception: unknown, host: ArgumentsHost): Promise<void> {
    const ctx = host.switchToHttp();
    const req = ctx.getRequest<CallbackRequest>();
    const res = ctx.getResponse<Response>();
    const isCallback = req.callback !== undefined;
    let { status, domain } = this.classify(exception, isCallback);
    if (isCallback && !(await this.audit.recordFailure(req, status, domain))) {
      // A signed body to quarantine could not be kept: answer 503 so SportAPI sends it again.
      status = 503;
      domain = new DomainException(ErrorCode.TRANSIENT_FAILURE, 'temporarily unavailable, retry later');
    }
    const body = {
      success: false,
      error: {
        code: domain.code,
        message: domain.message,
        ...(domain.fields?.length ? { fields: domain.fields } : {}),
      },
    };
    if (status >= 500) {
      const err = exception as Error;
      const line =
        `${req.method} ${req.path} → ${status} ${domain.code}` +
        `${req.callback ? ` (request ${req.callback.requestId}, batch ${req.callback.batchId ?? '-'})` : ''}: ${err?.message ?? String(exception)}`;
      // A designed answer (a DomainException such as SportAPI unavailable, CONTRACT §9; a database
      // outage or the deadline, §5) is a warning whose message says it all; anything else is a
      // fault, logged as an error with its stack.
      const designed =
        exception instanceof DomainException ||
        exception instanceof DeadlineExceededError ||
        (status !== 500 && isTransient(exception));
      if (designed) this.logger.warn(line);
      else this.logger.error(line, err?.stack);
    }
    if (!res.headersSent) res.status(status).json(body);
  }

  private classify(exception: unknown, isCallback: boolean): { status: number; domain: DomainException } {
    if (exception instanceof DomainException)
      return { status: HTTP_STATUS_OF[exception.code], domain: exception };
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      const code = HTTP_CODE[status] ?? (status >= 500 ? ErrorCode.INTERNAL : ErrorCode.VALIDATION_FAILED);
      const message = status === 404 ? 'no such route' : status >= 500 ? 'internal error' : exception.message;
      return { status, domain: new DomainException(code, message) };
    }
    const refusal = dataExceptionRefusal(exception, 'a value in the request cannot be stored');
    if (refusal) return { status: 400, domain: refusal };
    if (exception instanceof DeadlineExceededError || isTransient(exception) || isCallback) {
      return {
        status: 503,
        domain: new DomainException(ErrorCode.TRANSIENT_FAILURE, 'temporarily unavailable, retry later'),
      };
    }
    return { status: 500, domain: new DomainException(ErrorCode.INTERNAL, 'internal error') };
  }
}
