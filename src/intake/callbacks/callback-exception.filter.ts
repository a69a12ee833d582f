import { ArgumentsHost, Catch, ExceptionFilter, Injectable, Logger } from '@nestjs/common';
import type { Response } from 'express';
import { answerError, classifyException } from '../../platform/http/all-exceptions.filter.js';
import { DomainException, ErrorCode } from '../../platform/common/domain.exception.js';
import type { CallbackRequest } from './callback-request.js';
import { DeliveryAuditService } from './delivery-audit.service.js';

/**
 * The callback's exception filter (CONTRACT §5, §8): the answer of the global one, except that
 * nothing but a client error is final (anything else is 503, so SportAPI delivers again); a signed
 * 400/409 body is quarantined before answering, within the request's deadline (503 when it cannot
 * be kept); the failed attempt is recorded once the answer is written (DeliveryAuditService).
 */
@Catch()
@Injectable()
export class CallbackExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('Exceptions');

  constructor(private readonly audit: DeliveryAuditService) {}

  async catch(exception: unknown, host: ArgumentsHost): Promise<void> {
    const ctx = host.switchToHttp();
    const req = ctx.getRequest<CallbackRequest>();
    let answer = classifyException(exception, true);
    const res = ctx.getResponse<Response>();
    if (!(await this.audit.recordFailure(req, res, answer.status, answer.domain))) {
      answer = {
        status: 503,
        domain: new DomainException(ErrorCode.TRANSIENT_FAILURE, 'temporarily unavailable, retry later'),
      };
    }
    const context = ` (request ${req.callback?.requestId ?? '-'}, batch ${req.callback?.batchId ?? '-'})`;
    answerError(this.logger, req, res, answer, exception, context);
  }
}
