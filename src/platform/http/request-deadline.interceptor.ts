import { CallHandler, ExecutionContext, Inject, Injectable, NestInterceptor } from '@nestjs/common';
import { catchError, Observable, throwError, timeout, TimeoutError } from 'rxjs';
import { TRANSACTION_CONFIG } from '../database/transaction.config.js';
import type { TransactionConfig } from '../database/transaction.config.js';
import { DeadlineExceededError } from '../database/transaction.js';

/**
 * Every HTTP request is answered within `CALLBACK_DEADLINE_MS` (+250 ms) of its arrival: past it,
 * 503 `transient_failure` (CONTRACT §5), whatever the database or SportAPI does. The work left
 * behind ends at its own deadline (its transaction is rolled back, or commits: the partner API's
 * writes are idempotent, so a retry finds the first result).
 */
@Injectable()
export class RequestDeadlineInterceptor implements NestInterceptor {
  constructor(@Inject(TRANSACTION_CONFIG) private readonly transaction: TransactionConfig) {}

  intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(
      timeout(this.transaction.callbackDeadlineMs + 250),
      catchError((err: unknown) =>
        throwError(() => (err instanceof TimeoutError ? new DeadlineExceededError() : err)),
      ),
    );
  }
}
