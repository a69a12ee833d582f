import { BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { Server } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import { TRANSACTION_CONFIG } from '../database/transaction.config.js';
import type { TransactionConfig } from '../database/transaction.config.js';
import { HTTP_CONFIG } from '../http/http.config.js';
import type { HttpConfig } from '../http/http.config.js';
import { ErrorCode } from '../common/domain.exception.js';
import { DeliveryOutcome } from '../deliveries/delivery.types.js';
import { DeliveryObserver } from '../deliveries/delivery-observer.js';
import { requestIdOf } from '../observability/request-id.js';

/** Paths still served while shutting down: probes and scrapes must see the real state. */
const SERVED_WHILE_CLOSING = /^\/(health|metrics)(\/|$)/i;

/**
 * The graceful-shutdown state (CONTRACT §5: "shutting down" is a 503). From SIGTERM/SIGINT
 * ({@link begin}): readiness and every new request 503 with `Connection: close`; requests in
 * flight finish or roll back at their deadline (waited for at most the deadline plus 300 ms in
 * {@link beforeApplicationShutdown}); then idle keep-alive connections close (docs/operating.md).
 */
@Injectable()
export class ShutdownState implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Shutdown');
  private closing = false;
  private inflight = 0;
  private idle: (() => void)[] = [];

  constructor(
    @Inject(HTTP_CONFIG) private readonly http: HttpConfig,
    @Inject(TRANSACTION_CONFIG) private readonly transaction: TransactionConfig,
    private readonly adapterHost: HttpAdapterHost,
    private readonly observer: DeliveryObserver,
  ) {}

  /** True from the first termination signal (or `app.close()`) on. */
  get shuttingDown(): boolean {
    return this.closing;
  }

  /** Requests being answered now (those that arrived before the shutdown began; probes excluded). */
  get inflightRequests(): number {
    return this.inflight;
  }

  /** Starts the shutdown: readiness 503, new requests 503. Idempotent. */
  begin(reason = 'shutdown'): void {
    if (this.closing) return;
    this.closing = true;
    this.logger.log(`${reason}: readiness 503, new requests answered 503, ${this.inflight} in flight`);
  }

  /**
   * Express middleware, installed before any other: counts requests in flight, and once shutting
   * down answers new ones 503 in the error shape of CONTRACT §5 (health and metrics excepted).
   */
  middleware(): (req: Request, res: Response, next: NextFunction) => void {
    return (req, res, next) => {
      const probe = SERVED_WHILE_CLOSING.test(req.path);
      if (this.closing) {
        res.setHeader('Connection', 'close');
        res.setHeader('X-Request-Id', requestIdOf(req));
        if (!probe) {
          req.resume();
          if (this.isCallback(req)) this.observer.delivered(this.refusedDelivery(req));
          res
            .status(503)
            .setHeader('Retry-After', '1')
            .json({
              success: false,
              error: { code: ErrorCode.TRANSIENT_FAILURE, message: 'shutting down, retry later' },
            });
          return;
        }
      }
      if (probe) return next(); // answered at once, nothing to drain
      this.inflight++;
      res.once('close', () => {
        this.inflight--;
        if (this.inflight === 0) for (const wake of this.idle.splice(0)) wake();
      });
      next();
    };
  }

  private isCallback(req: Request): boolean {
    return (
      req.method === 'POST' &&
      req.path.replace(/\/+$/, '').toLowerCase() === this.http.callbackPath.replace(/\/+$/, '').toLowerCase()
    );
  }

  /** A callback answered 503 before its body was read: counted and logged, not stored (no database). */
  private refusedDelivery(req: Request) {
    return {
      batchId: null,
      requestId: requestIdOf(req),
      receivedAt: new Date(),
      outcome: DeliveryOutcome.FAILED,
      httpStatus: 503,
      errorCode: ErrorCode.TRANSIENT_FAILURE,
      couponCount: null,
      durationMs: 0,
      payloadHash: null,
    };
  }

  /** Resolves when no request is in flight, or after `timeoutMs` (false then). */
  drained(timeoutMs: number): Promise<boolean> {
    if (this.inflight === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      timer.unref();
      this.idle.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /** Nest lifecycle (from `app.close()`): steps 1–3 of the class description. */
  async beforeApplicationShutdown(signal?: string): Promise<void> {
    this.begin(signal ?? 'close');
    const waitMs = this.transaction.callbackDeadlineMs + 300;
    if (!(await this.drained(waitMs)))
      this.logger.warn(`${this.inflight} request(s) still in flight after ${waitMs} ms; closing anyway`);
    const server = this.adapterHost.httpAdapter?.getHttpServer() as Server | undefined;
    server?.closeAllConnections?.();
  }
}
