import Joi from 'joi';
import { configFragment, duration } from '../../platform/config/config-fragment.js';

/** Where and how to read a coupon from SportAPI (CONTRACT §9). */
export interface SportApiConfig {
  /** e.g. `https://api.sportapi.example`; undefined: polling is disabled. */
  baseUrl: string | undefined;
  /** Path template with `{coupon_code}` (URL-encoded in), appended to `baseUrl`. */
  couponPath: string;
  /** Credential sent with every read; undefined: none. */
  apiKey: string | undefined;
  /** Lower-case header name; `authorization` sends `Bearer <apiKey>`, any other the bare key. */
  authHeader: string;
  /** Milliseconds for connecting, for the response headers and for the body, each. */
  timeoutMs: number;
  /** Retries of one read after a transport error, a timeout or 429/500/502/503/504. */
  retries: number;
}

/** The scheduled reconciliation (CONTRACT §9); durations in milliseconds. */
export interface ReconciliationConfig {
  /** Milliseconds between runs; 0: no scheduled runs (manual reconcile still works). */
  intervalMs: number;
  /** An unsettled coupon is read once it has not changed for this long; also the re-read spacing. */
  afterMs: number;
  /** Coupons read per run at most. */
  batchSize: number;
}

/** `SPORTAPI_*` but the webhook secrets: SportAPI's coupon read method (polling is off without `SPORTAPI_BASE_URL`). */
export const sportApiConfig = configFragment('sportApi', {
  schema: {
    SPORTAPI_BASE_URL: Joi.string()
      .uri({ scheme: ['http', 'https'] })
      .optional(),
    SPORTAPI_COUPON_PATH: Joi.string()
      .pattern(/^\/.*\{coupon_code\}/)
      .default('/coupons/{coupon_code}')
      .messages({
        'string.pattern.base': 'SPORTAPI_COUPON_PATH must start with / and contain {coupon_code}',
      }),
    SPORTAPI_API_KEY: Joi.string().optional(),
    SPORTAPI_AUTH_HEADER: Joi.string()
      .pattern(/^[A-Za-z0-9-]+$/)
      .default('Authorization'),
    SPORTAPI_TIMEOUT_MS: Joi.number().integer().min(100).max(60_000).default(5000),
    SPORTAPI_RETRIES: Joi.number().integer().min(0).max(10).default(2),
  },
  build: (v): SportApiConfig => ({
    baseUrl: (v.SPORTAPI_BASE_URL as string | undefined)?.replace(/\/+$/, ''),
    couponPath: v.SPORTAPI_COUPON_PATH as string,
    apiKey: v.SPORTAPI_API_KEY as string | undefined,
    authHeader: (v.SPORTAPI_AUTH_HEADER as string).toLowerCase(),
    timeoutMs: v.SPORTAPI_TIMEOUT_MS as number,
    retries: v.SPORTAPI_RETRIES as number,
  }),
});

/** Injection token of the {@link SportApiConfig} slice. */
export const SPORTAPI_CONFIG = sportApiConfig.token;

/** `RECONCILE_INTERVAL`, `RECONCILE_AFTER`, `RECONCILE_BATCH_SIZE`. */
export const reconciliationConfig = configFragment('reconciliation', {
  schema: {
    RECONCILE_INTERVAL: duration(true).default(5 * 60_000),
    RECONCILE_AFTER: duration().default(90 * 60_000),
    RECONCILE_BATCH_SIZE: Joi.number().integer().min(1).max(10_000).default(100),
  },
  build: (v): ReconciliationConfig => ({
    intervalMs: v.RECONCILE_INTERVAL as number,
    afterMs: v.RECONCILE_AFTER as number,
    batchSize: v.RECONCILE_BATCH_SIZE as number,
  }),
});

/** Injection token of the {@link ReconciliationConfig} slice. */
export const RECONCILIATION_CONFIG = reconciliationConfig.token;
