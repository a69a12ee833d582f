import { Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { Agent, Dispatcher, errors, request, RetryAgent } from 'undici';
import { HTTP_CONFIG } from '../../platform/http/http.config.js';
import type { HttpConfig } from '../../platform/http/http.config.js';
import { SPORTAPI_CONFIG } from './reconciliation.config.js';
import type { SportApiConfig } from './reconciliation.config.js';
import { DomainException, ErrorCode } from '../../platform/common/domain.exception.js';

/** Statuses of the read method retried (with backoff) before giving up. */
const RETRIED_STATUSES = [429, 500, 502, 503, 504];

/** Transport errors retried: undici's defaults plus its timeouts and closed sockets. */
const RETRIED_ERROR_CODES = [
  'ECONNRESET',
  'ECONNREFUSED',
  'ENOTFOUND',
  'ENETDOWN',
  'ENETUNREACH',
  'EHOSTDOWN',
  'EHOSTUNREACH',
  'EPIPE',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_SOCKET',
];

/** The coupon's bytes as SportAPI answered them (a callback coupon's shape, not yet validated). */
export interface SportApiCouponRead {
  body: Buffer;
  contentType: string | undefined;
}

/**
 * Client of SportAPI's coupon read method (CONTRACT §9), on undici: `GET {SPORTAPI_BASE_URL}` +
 * `SPORTAPI_COUPON_PATH` with `{coupon_code}` URL-encoded, the configured credential
 * (`Authorization: Bearer <key>` or the bare key in `SPORTAPI_AUTH_HEADER`), connect, header and
 * body timeouts of `SPORTAPI_TIMEOUT_MS` each, `SPORTAPI_RETRIES` retries with exponential backoff
 * (200 ms doubling, at most 2 s, `Retry-After` honoured) after transport errors, timeouts and
 * 429/500/502/503/504, and responses capped at `CALLBACK_BODY_LIMIT_BYTES`.
 */
@Injectable()
export class SportApiClient implements OnModuleDestroy {
  private readonly logger = new Logger('SportApiClient');
  private readonly agent: Agent | undefined;
  private readonly dispatcher: Dispatcher | undefined;

  constructor(
    @Inject(SPORTAPI_CONFIG) private readonly config: SportApiConfig,
    @Inject(HTTP_CONFIG) private readonly http: HttpConfig,
  ) {
    const { baseUrl, timeoutMs, retries } = config;
    if (baseUrl === undefined) return;
    this.agent = new Agent({
      connectTimeout: timeoutMs,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      maxResponseSize: http.bodyLimitBytes,
    });
    this.dispatcher = new RetryAgent(this.agent, {
      maxRetries: retries,
      minTimeout: 200,
      maxTimeout: 2000,
      timeoutFactor: 2,
      retryAfter: true,
      methods: ['GET'],
      statusCodes: RETRIED_STATUSES,
      errorCodes: RETRIED_ERROR_CODES,
    });
  }

  /** Whether `SPORTAPI_BASE_URL` is configured. */
  get enabled(): boolean {
    return this.dispatcher !== undefined;
  }

  /**
   * Reads one coupon.
   * @returns the response body of a 200.
   * @throws DomainException POLLING_DISABLED (no base URL); SPORTAPI_COUPON_NOT_FOUND (404);
   *   SPORTAPI_UNAVAILABLE (unreachable, timeouts, 429/5xx after the retries);
   *   SPORTAPI_BAD_RESPONSE (any other status, e.g. 401 for wrong credentials, or a too large body).
   */
  async readCoupon(couponCode: string): Promise<SportApiCouponRead> {
    const { baseUrl, couponPath, apiKey, authHeader } = this.config;
    if (!this.dispatcher || baseUrl === undefined) {
      throw new DomainException(
        ErrorCode.POLLING_DISABLED,
        'polling SportAPI is disabled: SPORTAPI_BASE_URL is not configured',
      );
    }
    const url = baseUrl + couponPath.replaceAll('{coupon_code}', encodeURIComponent(couponCode));
    const headers: Record<string, string> = { accept: 'application/json' };
    if (apiKey !== undefined)
      headers[authHeader] = authHeader === 'authorization' ? `Bearer ${apiKey}` : apiKey;
    let response: Dispatcher.ResponseData;
    try {
      response = await request(url, { method: 'GET', headers, dispatcher: this.dispatcher });
    } catch (err) {
      throw this.failure(couponCode, err);
    }
    const { statusCode } = response;
    let body: Buffer;
    try {
      body = Buffer.from(await response.body.arrayBuffer());
    } catch (err) {
      throw this.failure(couponCode, err);
    }
    if (statusCode === 200) {
      const type = response.headers['content-type'];
      return { body, contentType: Array.isArray(type) ? type[0] : type };
    }
    if (statusCode === 404) {
      throw new DomainException(
        ErrorCode.SPORTAPI_COUPON_NOT_FOUND,
        `SportAPI does not know coupon ${couponCode}`,
      );
    }
    if (RETRIED_STATUSES.includes(statusCode)) throw this.unavailable(couponCode, `status ${statusCode}`);
    this.logger.warn(`read of coupon ${couponCode}: SportAPI answered ${statusCode}`);
    throw new DomainException(
      ErrorCode.SPORTAPI_BAD_RESPONSE,
      `SportAPI answered the coupon read with HTTP ${statusCode}`,
    );
  }

  async onModuleDestroy(): Promise<void> {
    await this.agent?.close();
  }

  private failure(couponCode: string, err: unknown): DomainException {
    if (err instanceof errors.RequestRetryError) {
      // Retries exhausted on a retried status: SportAPI is having trouble.
      return this.unavailable(couponCode, `status ${err.statusCode}`);
    }
    if (err instanceof errors.ResponseExceededMaxSizeError) {
      return new DomainException(
        ErrorCode.SPORTAPI_BAD_RESPONSE,
        `SportAPI's coupon read is larger than ${this.http.bodyLimitBytes} bytes`,
      );
    }
    const code = (err as { code?: string }).code;
    return this.unavailable(couponCode, code ?? (err as Error).message);
  }

  private unavailable(couponCode: string, why: string): DomainException {
    this.logger.warn(`read of coupon ${couponCode} failed: ${why}`);
    return new DomainException(
      ErrorCode.SPORTAPI_UNAVAILABLE,
      'SportAPI is unreachable or failing, retry later',
    );
  }
}
