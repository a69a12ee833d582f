import { CallHandler, ExecutionContext, Inject, Injectable, NestInterceptor } from '@nestjs/common';
import type { Response } from 'express';
import { Observable, map, timeout, catchError, throwError, TimeoutError } from 'rxjs';
import { TRANSACTION_CONFIG } from '../../platform/database/transaction.config.js';
import type { TransactionConfig } from '../../platform/database/transaction.config.js';
import { DeadlineExceededError } from '../../platform/database/transaction.js';
import type { CallbackRequest } from './callback-request.js';
import type { CallbackResult } from './callback.service.js';
import { DeliveryObserver } from '../../platform/deliveries/delivery-observer.js';
import { DeliveryAuditService } from './delivery-audit.service.js';
import { DeliveryOutcome } from '../../platform/deliveries/delivery.types.js';

/**
 * The callback's response contract (CONTRACT §5): the handler's result (known only after COMMIT)
 * becomes exactly `200 {"success": true, "processed": n}` (plus `"duplicate": true`), never
 * 201/202/204; and the answer is never later than the server deadline: past it, 503.
 */
@Injectable()
export class CallbackResponseInterceptor implements NestInterceptor {
  constructor(
    @Inject(TRANSACTION_CONFIG) private readonly transaction: TransactionConfig,
    private readonly audit: DeliveryAuditService,
    private readonly observer: DeliveryObserver,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler<CallbackResult>): Observable<unknown> {
    const http = context.switchToHttp();
    const req = http.getRequest<CallbackRequest>();
    const res = http.getResponse<Response>();
    const receivedAt = req.callback?.receivedAt ?? Date.now();
    // The transaction stops itself at the deadline; this is the last guard for anything else.
    const left = Math.max(1, receivedAt + this.transaction.callbackDeadlineMs + 250 - Date.now());
    return next.handle().pipe(
      timeout(left),
      catchError((err: unknown) =>
        throwError(() => (err instanceof TimeoutError ? new DeadlineExceededError() : err)),
      ),
      map((result) => {
        res.status(200);
        const outcome = result.duplicate
          ? DeliveryOutcome.DUPLICATE
          : result.accepted
            ? DeliveryOutcome.ACCEPTED
            : DeliveryOutcome.PROCESSED;
        this.observer.whenAnswered(res, this.audit.attemptOf(req, 200, outcome, null));
        return result.duplicate
          ? { success: true, processed: result.processed, duplicate: true }
          : { success: true, processed: result.processed };
      }),
    );
  }
}
