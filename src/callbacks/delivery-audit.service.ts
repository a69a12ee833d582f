import { Injectable, Logger } from '@nestjs/common';
import { DomainException, ErrorCode } from '../common/domain.exception.js';
import type { CallbackRequest } from './callback-request.js';
import { toStorable } from '../common/validation.js';
import { TransactionRunner } from '../database/transaction.js';
import { DeliveryObserver } from '../observability/delivery-observer.js';
import { DeliveryAttemptRow, DeliveryAuditRepository } from './delivery-audit.repository.js';
import { DeliveryOutcome } from './callback.types.js';

/** Outcome recorded for a failed delivery answered with `status`. */
export function outcomeOf(status: number): DeliveryOutcome {
  if (status === 401) return DeliveryOutcome.UNAUTHORIZED;
  if (status === 409) return DeliveryOutcome.CONFLICT;
  if (status >= 400 && status < 500) return DeliveryOutcome.REJECTED;
  return DeliveryOutcome.FAILED;
}

/**
 * Records failed deliveries after their transaction rolled back (CONTRACT §8): the attempt
 * always, and a signed body rejected with 400/409 verbatim in the quarantine. Bodies that were
 * not signed are never stored. Failures to record are logged, never thrown: the answer to the
 * sender does not depend on the audit write. Every failed delivery is passed to the
 * {@link DeliveryObserver} (metrics and the summary log line).
 */
@Injectable()
export class DeliveryAuditService {
  private readonly logger = new Logger('DeliveryAudit');

  constructor(
    private readonly transactions: TransactionRunner,
    private readonly audit: DeliveryAuditRepository,
    private readonly observer: DeliveryObserver,
  ) {}

  /** Attempt row of a request answered with `status`. */
  attemptOf(
    req: CallbackRequest,
    status: number,
    outcome: DeliveryOutcome,
    errorCode: string | null,
  ): DeliveryAttemptRow {
    const state = req.callback;
    const receivedAt = state?.receivedAt ?? Date.now();
    return {
      batchId: state?.batchId ?? null,
      requestId: state?.requestId ?? null,
      receivedAt: new Date(receivedAt),
      outcome,
      httpStatus: status,
      errorCode,
      couponCount: state?.couponCount ?? null,
      durationMs: Date.now() - receivedAt,
      payloadHash: state?.signatureVerified ? (state.payloadHash ?? null) : null,
    };
  }

  /**
   * Writes the attempt (and the quarantine entry, if due) in a short transaction of its own.
   * @returns false when a body that had to be quarantined could not be kept: the caller then
   *   answers 503 so the sender delivers it again, rather than a final 4xx that would lose it.
   */
  async recordFailure(
    req: CallbackRequest,
    status: number,
    error: DomainException | undefined,
  ): Promise<boolean> {
    const state = req.callback;
    const code = error?.code ?? ErrorCode.TRANSIENT_FAILURE;
    const attempt = this.attemptOf(req, status, outcomeOf(status), code);
    const quarantine = Boolean(
      state?.signatureVerified && state.rawBody && (status === 400 || status === 409),
    );
    try {
      await this.transactions.run(
        async (tx) => {
          await this.audit.insertAttempt(tx, attempt);
          if (quarantine && state?.rawBody) {
            await this.audit.insertQuarantine(tx, {
              batchId: state.batchId ?? null,
              reason: code,
              // Messages and paths may quote the body: stored with unstorable characters replaced.
              details: toStorable(error?.fields ?? { message: error?.message }),
              httpStatus: status,
              body: state.rawBody,
              contentType: String(req.headers['content-type'] ?? '') || null,
              payloadHash: state.payloadHash ?? '',
            });
          }
        },
        { deadline: Date.now() + 2000, retries: 1 },
      );
      this.observer.delivered(attempt);
      return true;
    } catch (err) {
      this.logger.error(
        `could not record delivery attempt (request ${attempt.requestId}, batch ${attempt.batchId}, status ${status}): ${(err as Error).message}`,
      );
      this.observer.delivered(attempt, quarantine ? 503 : status);
      return !quarantine;
    }
  }
}
