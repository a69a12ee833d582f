import type { ServerResponse } from 'node:http';
import { Injectable, Logger } from '@nestjs/common';
import { DomainException, ErrorCode } from '../../platform/common/domain.exception.js';
import type { CallbackRequest } from './callback-request.js';
import { toStorable } from '../../platform/common/validation.js';
import { TransactionRunner } from '../../platform/database/transaction.js';
import { DeliveryObserver } from '../../platform/deliveries/delivery-observer.js';
import { DeliveryAttemptWriter } from '../../platform/deliveries/delivery-attempt.writer.js';
import {
  DeliveryAttemptRow,
  DeliveryAttemptRepository,
} from '../../platform/deliveries/delivery-attempt.repository.js';
import { QuarantineRepository } from '../quarantine/quarantine.repository.js';
import { DeliveryOutcome } from '../../platform/deliveries/delivery.types.js';

/** Outcome recorded for a failed delivery answered with `status`. */
export function outcomeOf(status: number): DeliveryOutcome {
  if (status === 401) return DeliveryOutcome.UNAUTHORIZED;
  if (status === 409) return DeliveryOutcome.CONFLICT;
  if (status >= 400 && status < 500) return DeliveryOutcome.REJECTED;
  return DeliveryOutcome.FAILED;
}

/**
 * Records failed deliveries (CONTRACT §8) without ever delaying an answer past the deadline: a
 * signed body rejected with 400/409 is quarantined verbatim, with its attempt, within the time
 * its request has left (else the answer becomes 503, so it is delivered again); every other
 * failed attempt is written after its answer, in the background ({@link DeliveryAttemptWriter}).
 * Bodies that were not signed are never stored. Every answer reaches the {@link DeliveryObserver}
 * once written.
 */
@Injectable()
export class DeliveryAuditService {
  private readonly logger = new Logger('DeliveryAudit');

  constructor(
    private readonly transactions: TransactionRunner,
    private readonly attempts: DeliveryAttemptRepository,
    private readonly quarantine: QuarantineRepository,
    private readonly writer: DeliveryAttemptWriter,
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
      traceId: state?.traceId ?? null,
    };
  }

  /**
   * Records a failed delivery answered `status` on `res`: a body to quarantine now (before the
   * answer, within the request's deadline), any other attempt once the answer is written.
   * @returns false when a body that had to be quarantined could not be kept: the caller then
   *   answers 503 so the sender delivers it again, rather than a final 4xx that would lose it.
   */
  async recordFailure(
    req: CallbackRequest,
    res: ServerResponse,
    status: number,
    error: DomainException | undefined,
  ): Promise<boolean> {
    const state = req.callback;
    const code = error?.code ?? ErrorCode.TRANSIENT_FAILURE;
    const quarantine = Boolean(
      state?.signatureVerified && state.rawBody && (status === 400 || status === 409),
    );
    if (quarantine && state?.rawBody) {
      const attempt = this.attemptOf(req, status, outcomeOf(status), code);
      try {
        await this.transactions.run(
          (tx) =>
            tx.commitWith({
              attempt: this.attempts.insertStatement(attempt),
              quarantine: this.quarantine.insertStatement({
                batchId: state.batchId ?? null,
                reason: code,
                // Messages and paths may quote the body: stored with unstorable characters replaced.
                details: toStorable(error?.fields ?? { message: error?.message }),
                httpStatus: status,
                body: state.rawBody as Buffer,
                contentType: String(req.headers['content-type'] ?? '') || null,
                payloadHash: state.payloadHash ?? '',
              }),
            }),
          { startedAt: state.receivedAt, retries: 1 },
        );
        this.observer.whenAnswered(res, attempt);
        return true;
      } catch (err) {
        this.logger.error(
          `could not quarantine the body of request ${attempt.requestId} (batch ${attempt.batchId}, status ${status}): ${(err as Error).message}; answered 503`,
        );
        status = 503;
      }
    }
    const attempt = this.attemptOf(
      req,
      status,
      outcomeOf(status),
      status === 503 ? ErrorCode.TRANSIENT_FAILURE : code,
    );
    this.observer.whenAnswered(res, attempt, status, (answered) => this.writer.enqueue(answered));
    return !quarantine;
  }
}
