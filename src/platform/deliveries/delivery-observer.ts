import type { ServerResponse } from 'node:http';
import { startSpan } from '../observability/tracing.js';
import { Injectable, Logger } from '@nestjs/common';
import type { DeliveryAttemptRow } from './delivery-attempt.repository.js';
import { DeliveryOutcome } from './delivery.types.js';
import { inRequestContext } from '../observability/log-context.js';
import { DeliveryMetrics } from './delivery-metrics.js';

/**
 * The one place that learns the outcome of every callback delivery once it is decided (after
 * COMMIT for 200s, after the rollback and audit write for failures): counts it in
 * {@link DeliveryMetrics} and writes ONE summary log line
 * (`{requestId, batchId, outcome, status, coupons, durationMs}`; warn for 4xx, error for 5xx).
 * Never throws, never touches the database.
 */
@Injectable()
export class DeliveryObserver {
  private readonly logger = new Logger('Delivery');
  private readonly answeredListeners: ((durationMs: number) => void)[] = [];
  private readonly receivedListeners: (() => () => void)[] = [];

  constructor(private readonly metrics: DeliveryMetrics) {}

  /**
   * Calls {@link delivered} once the answer has been written to the client (or the connection
   * closed), with `durationMs` measured until then; `done` gets the same attempt (e.g. to store it).
   */
  whenAnswered(
    res: ServerResponse,
    attempt: DeliveryAttemptRow,
    status = attempt.httpStatus,
    done?: (a: DeliveryAttemptRow) => void,
  ): void {
    let seen = false;
    const span = startSpan('callback.answer', {
      'http.response.status_code': status,
      'delivery.outcome': attempt.outcome,
    });
    const answered = () => {
      if (seen) return;
      seen = true;
      span?.end();
      const final = { ...attempt, durationMs: Date.now() - attempt.receivedAt.getTime() };
      this.delivered(final, status);
      done?.(final);
    };
    res.once('finish', answered);
    res.once('close', answered);
  }

  /**
   * Calls `listener` with the milliseconds from receipt to answer of every delivery answered from
   * now on (the background-work governor's intake signal). It must not throw.
   */
  onAnswered(listener: (durationMs: number) => void): void {
    this.answeredListeners.push(listener);
  }

  /**
   * Calls `listener` at the receipt of every callback delivery from now on; the function it returns
   * is called once that delivery is answered or its connection closed (the governor's count of
   * callbacks in flight). Neither may throw.
   */
  onReceived(listener: () => () => void): void {
    this.receivedListeners.push(listener);
  }

  /**
   * A callback delivery was received (the body reader calls it first).
   * @returns the function to call once it is answered or its connection closed (idempotent).
   */
  received(): () => void {
    const ends = this.receivedListeners.map((listener) => listener());
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      for (const end of ends) end();
    };
  }

  /** @param attempt the delivery attempt as recorded; `status` is what was answered (may differ: 503). */
  delivered(attempt: DeliveryAttemptRow, status = attempt.httpStatus): void {
    const outcome = status === 503 ? DeliveryOutcome.FAILED : attempt.outcome;
    const durationMs = Math.max(0, attempt.durationMs);
    this.metrics.deliveryAnswered(outcome, durationMs / 1000, attempt.couponCount);
    for (const listener of this.answeredListeners) listener(durationMs);
    const line = {
      // Inside the request, pino binds requestId (and the mixin batchId) to every line already.
      ...(inRequestContext() ? {} : { requestId: attempt.requestId, batchId: attempt.batchId ?? undefined }),
      outcome,
      status,
      coupons: attempt.couponCount,
      durationMs,
      ...(attempt.errorCode ? { errorCode: attempt.errorCode } : {}),
    };
    const message = `delivery ${outcome} ${status}`;
    if (status >= 500) this.logger.error(line, message);
    else if (status >= 400) this.logger.warn(line, message);
    else this.logger.log(line, message);
  }
}
