import Joi from 'joi';
import { CURRENCY_CODE, CurrencyTable, LEGACY_MINOR_UNITS, MAX_MINOR_UNITS } from '../common/currency.js';
import { ConfigFragment, csv, duration } from './config-fragment.js';

export { csv, duration };

/**
 * Typed configuration of the receiver, read once from the environment at start-up: the shared
 * fields here, and each feature's, added to this interface by its own fragment through
 * declaration merging (e.g. `wallet` in `src/wallet/wallet.config.ts`; the app's list of
 * fragments: `src/app.config.ts`). Money-related limits are plain integers (digits), never
 * amounts. Source: CONTRACT §3, §5, §10.
 */
export interface AppConfig {
  port: number;
  host: string;
  /** Milliseconds the callback may take end to end before it is rolled back and answered 503. */
  callbackDeadlineMs: number;
  /** In-process re-runs of a whole transaction after 40001/40P01. */
  transientRetries: number;
  callbackPath: string;
  signatureHeader: string;
  webhookSecrets: string[];
  /** Bytes; a larger decoded body is answered 413. */
  bodyLimitBytes: number;
  /** Bytes of callback bodies processed at once; beyond it a delivery is answered 503. */
  maxInflightBytes: number;
  /**
   * Deprecated (`AMOUNT_SCALE`): minor units of a currency stored before per-currency precision
   * that neither ISO 4217 nor `CURRENCY_MINOR_UNITS` knows; every other currency has its own.
   */
  amountScale: number;
  /** Allowed currencies and every known currency's minor units (CONTRACT §3). */
  currencies: CurrencyTable;
  /** House settlement sub-accounts per currency; a posting takes a free one (CONTRACT §7). */
  houseSubAccounts: number;
  /** Start-up warnings (deprecated variables), logged once the logger is up. */
  warnings: string[];
  /** Status code → kind; defaults of CONTRACT §6 when unset. */
  statusMap: Record<number, string>;
  swaggerEnabled: boolean;
  /** Folder of the built operator console served at `/ops` (docs/console.md). */
  consoleDir: string;
  /**
   * `inline`: the callback applies the batch before answering (CONTRACT §4). `inbox`: it commits
   * the verified, validated batch to `callback_inbox` and answers 200; workers apply it later.
   */
  callbackMode: 'inline' | 'inbox';
  /** Milliseconds an idle inbox worker waits before looking for work again. */
  inboxPollIntervalMs: number;
  /** Inbox workers per process (each applies one batch at a time). */
  inboxConcurrency: number;
  /** Failed applications of an inbox row before it goes to the quarantine. */
  inboxMaxAttempts: number;
  /** Milliseconds; retry delay after the first failure, doubled per attempt up to the maximum. */
  inboxRetryBaseMs: number;
  inboxRetryMaxMs: number;
  /** pino level: fatal, error, warn, info, debug, trace or silent. */
  logLevel: string;
  /**
   * V8's old-generation growing factor, in percent over the live heap after a full GC
   * (`--heap-growing-percent`, set at start); 0 keeps V8's own factor (up to 4×).
   */
  heapGrowingPercent: number;
  /** IP addresses and CIDR blocks allowed to read `GET /metrics` without a bearer key. */
  metricsAllowedNetworks: string[];
  /** SportAPI's coupon read method (CONTRACT §9); polling is disabled when `baseUrl` is unset. */
  sportApi: SportApiConfig;
  /** The scheduled reconciliation (CONTRACT §9). */
  reconciliation: ReconciliationConfig;
  /** The operator console's background work (docs/api.md#operator-console-api). */
  console: ConsoleConfig;
  /** The background-work governor (docs/background-work.md). */
  background: BackgroundConfig;
}

/** Background work of the operator console's API; durations in milliseconds, 0: off. */
export interface ConsoleConfig {
  /** How often the overview's rollup job counts closed minutes of delivery attempts. */
  rollupIntervalMs: number;
  /** How often an idle bulk action worker looks for running bulk actions (also woken on a new one). */
  bulkPollIntervalMs: number;
}

/** The background-work governor: the callback comes first (docs/background-work.md). */
export interface BackgroundConfig {
  /** false: every kind of background work keeps its configured concurrency. */
  enabled: boolean;
  /** Milliseconds; the callback's answer p99 above which background work backs off. */
  targetMs: number;
  /** Milliseconds; the event loop's delay p99 above which background work backs off. */
  eventLoopDelayMs: number;
  /** Milliseconds of answers the p99 is taken over; also the quiet needed before growing again. */
  windowMs: number;
}

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

/** Characters each of `SPORTAPI_WEBHOOK_SECRETS` has at least (as a plain key of `OPS_API_KEYS`). */
export const MIN_SECRET_LENGTH = 16;

/** Joi schema of every environment variable the receiver reads (see `.env.example`). */
export const envSchema = Joi.object({
  PORT: Joi.number().port().default(3000),
  HOST: Joi.string().default('0.0.0.0'),
  CALLBACK_DEADLINE_MS: Joi.number().integer().min(500).max(9500).default(8000),
  CALLBACK_TRANSIENT_RETRIES: Joi.number().integer().min(0).max(10).default(3),
  CALLBACK_PATH: Joi.string()
    .pattern(/^\/[A-Za-z0-9/_-]*$/)
    .default('/sportapi/callback'),
  SIGNATURE_HEADER: Joi.string()
    .pattern(/^[A-Za-z0-9-]+$/)
    .default('X-Signature'),
  SPORTAPI_WEBHOOK_SECRETS: Joi.string()
    .required()
    .custom((v: string, helpers) => {
      const secrets = csv(v);
      if (!secrets.length) return helpers.message({ custom: 'lists no secret' });
      // Named by position, never by value: a short HMAC secret is guessable from one signed body.
      const short = secrets.flatMap((s, i) => (s.length < MIN_SECRET_LENGTH ? [i + 1] : []));
      return short.length
        ? helpers.message({
            custom: `secret ${short.join(', ')} of ${secrets.length} is shorter than ${MIN_SECRET_LENGTH} characters (e.g. openssl rand -hex 32)`,
          })
        : v;
    }),
  CALLBACK_BODY_LIMIT_BYTES: Joi.number()
    .integer()
    .min(1024)
    .default(2 * 1024 * 1024),
  CALLBACK_MAX_INFLIGHT_BYTES: Joi.number()
    .integer()
    .min(1024)
    .default(8 * 1024 * 1024),
  HOUSE_SUB_ACCOUNTS: Joi.number().integer().min(1).max(256).default(16),
  // Deprecated: only the minor units of a currency neither ISO 4217 nor CURRENCY_MINOR_UNITS knows.
  AMOUNT_SCALE: Joi.number().integer().min(0).max(2).optional(),
  CURRENCY_MINOR_UNITS: Joi.string()
    .custom((v: string, helpers) => {
      const bad = csv(v).filter((pair) => !MINOR_UNITS_PAIR.test(pair));
      const codes = csv(v).map((pair) => pair.split(':')[0].trim());
      const twice = codes.filter((c, i) => codes.indexOf(c) !== i);
      if (bad.length || twice.length)
        return helpers.message({
          custom: `CURRENCY_MINOR_UNITS must look like "USDT:6,BTC:8,JPY:0" (code of 3..8 A-Z 0-9, digits 0..${MAX_MINOR_UNITS}, each code once): ${[...bad, ...twice].join(', ')}`,
        });
      return v;
    })
    .optional(),
  CURRENCIES: Joi.string()
    .custom((v: string, helpers) => {
      const bad = csv(v).filter((c) => !CURRENCY_CODE.test(c));
      if (bad.length || !csv(v).length)
        return helpers.message({
          custom: `CURRENCIES must be comma-separated currency codes (3..8 of A-Z 0-9): ${bad.join(', ') || 'none given'}`,
        });
      return v;
    })
    .optional(),
  STATUS_MAP: Joi.string()
    .pattern(
      /^\s*\d+\s*:\s*(PENDING|WIN|REFUND|LOSS|RECALCULATION)\s*(,\s*\d+\s*:\s*(PENDING|WIN|REFUND|LOSS|RECALCULATION)\s*)*$/,
    )
    .optional()
    .messages({
      'string.pattern.base': 'STATUS_MAP must look like "1:PENDING,2:WIN,3:REFUND,4:LOSS,15:RECALCULATION"',
    }),
  SWAGGER_ENABLED: Joi.boolean().truthy('1').falsy('0').default(true),
  CONSOLE_DIR: Joi.string().default('dist/console'),
  SPORTAPI_BASE_URL: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .optional(),
  SPORTAPI_COUPON_PATH: Joi.string()
    .pattern(/^\/.*\{coupon_code\}/)
    .default('/coupons/{coupon_code}')
    .messages({ 'string.pattern.base': 'SPORTAPI_COUPON_PATH must start with / and contain {coupon_code}' }),
  SPORTAPI_API_KEY: Joi.string().optional(),
  SPORTAPI_AUTH_HEADER: Joi.string()
    .pattern(/^[A-Za-z0-9-]+$/)
    .default('Authorization'),
  SPORTAPI_TIMEOUT_MS: Joi.number().integer().min(100).max(60_000).default(5000),
  SPORTAPI_RETRIES: Joi.number().integer().min(0).max(10).default(2),
  RECONCILE_INTERVAL: duration(true).default(5 * 60_000),
  RECONCILE_AFTER: duration().default(90 * 60_000),
  RECONCILE_BATCH_SIZE: Joi.number().integer().min(1).max(10_000).default(100),
  LOG_LEVEL: Joi.string().valid('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent').default('info'),
  HEAP_GROWING_PERCENT: Joi.number().integer().min(0).max(300).default(100),
  METRICS_ALLOWED_NETWORKS: Joi.string()
    .custom((v: string, helpers) => {
      const ip = Joi.string().ip({ cidr: 'optional' });
      const bad = csv(v).filter((entry) => ip.validate(entry).error);
      return bad.length
        ? helpers.message({
            custom: `METRICS_ALLOWED_NETWORKS: not an IP address or CIDR block: ${bad.join(', ')}`,
          })
        : v;
    })
    .optional(),
  CALLBACK_MODE: Joi.string().valid('inline', 'inbox').default('inline'),
  INBOX_POLL_INTERVAL_MS: Joi.number().integer().min(10).max(60_000).default(500),
  INBOX_CONCURRENCY: Joi.number().integer().min(1).max(32).default(8),
  INBOX_MAX_ATTEMPTS: Joi.number().integer().min(1).max(1000).default(10),
  INBOX_RETRY_BASE_MS: Joi.number().integer().min(10).max(3_600_000).default(1000),
  INBOX_RETRY_MAX_MS: Joi.number()
    .integer()
    .min(Joi.ref('INBOX_RETRY_BASE_MS'))
    .max(86_400_000)
    .default(300_000)
    .messages({ 'number.min': 'INBOX_RETRY_MAX_MS must not be below INBOX_RETRY_BASE_MS' }),
  DELIVERY_ROLLUP_INTERVAL: duration(true).default(30_000),
  BULK_ACTION_POLL_INTERVAL: duration(true).default(1000),
  BACKGROUND_GOVERNOR: Joi.boolean().truthy('1').falsy('0').default(true),
  BACKGROUND_TARGET_MS: Joi.number()
    .integer()
    .min(10)
    .max(4750)
    .default(500)
    .custom((v: number, helpers) => {
      const deadline = (helpers.state.ancestors[0] as Record<string, unknown>).CALLBACK_DEADLINE_MS;
      return typeof deadline === 'number' && v > deadline / 2
        ? helpers.message({ custom: 'BACKGROUND_TARGET_MS must be at most half of CALLBACK_DEADLINE_MS' })
        : v;
    }),
  BACKGROUND_EVENT_LOOP_DELAY_MS: Joi.number().integer().min(10).max(5000).default(200),
  BACKGROUND_WINDOW_MS: Joi.number().integer().min(1000).max(60_000).default(2000),
}).unknown(true);

/** One `CODE:digits` of CURRENCY_MINOR_UNITS. */
const MINOR_UNITS_PAIR = new RegExp(`^[A-Z0-9]{3,8}\\s*:\\s*[0-${MAX_MINOR_UNITS}]$`);

/**
 * The currency table of `CURRENCY_MINOR_UNITS`, `CURRENCIES` and `AMOUNT_SCALE` (values as Joi
 * validated them). @throws Error naming the variable when `CURRENCIES` lists an unknown code.
 */
function currencyTable(v: Record<string, unknown>): CurrencyTable {
  const overrides = Object.fromEntries(
    csv(v.CURRENCY_MINOR_UNITS as string | undefined).map((pair) => {
      const [code, digits] = pair.split(':').map((s) => s.trim());
      return [code, Number(digits)];
    }),
  );
  const allowed = v.CURRENCIES === undefined ? null : csv(v.CURRENCIES as string);
  try {
    return CurrencyTable.of(overrides, allowed, (v.AMOUNT_SCALE as number | undefined) ?? LEGACY_MINOR_UNITS);
  } catch (err) {
    throw new Error(`Invalid configuration:\n  - CURRENCIES: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * The currency table alone, from the environment (`npm run ledger:verify` needs no secrets).
 * @throws Error naming a wrong currency variable.
 */
export function loadCurrencyTable(env: NodeJS.ProcessEnv = process.env): CurrencyTable {
  const v: Record<string, unknown> = {};
  for (const name of ['CURRENCY_MINOR_UNITS', 'CURRENCIES', 'AMOUNT_SCALE']) {
    if (env[name] === undefined || env[name] === '') continue;
    const { error, value } = envSchema.extract(name).validate(env[name], { convert: true });
    if (error) throw new Error(`Invalid configuration:\n  - ${name}: ${error.message}`);
    v[name] = value;
  }
  return currencyTable(v);
}

/** Default status-code map of CONTRACT §6. */
export const DEFAULT_STATUS_MAP: Record<number, string> = {
  1: 'PENDING',
  2: 'WIN',
  3: 'REFUND',
  4: 'LOSS',
  15: 'RECALCULATION',
};

/**
 * Validates `env` against the shared variables and every fragment's, and returns the typed
 * configuration: the shared fields and each fragment's (the app's list: `src/app.config.ts`).
 * @throws Error naming every wrong or missing variable (the app does not start).
 */
export function loadConfigWith(env: NodeJS.ProcessEnv, fragments: readonly ConfigFragment[]): AppConfig {
  // An empty variable counts as unset (e.g. `DATABASE_URL=` selects the embedded server).
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const schema = fragments.reduce((all, f) => all.keys(f.schema), envSchema);
  const { error, value } = schema.validate(present, { abortEarly: false, convert: true });
  if (error) {
    const lines = error.details.map((d) => `  - ${d.context?.label ?? d.path.join('.')}: ${d.message}`);
    throw new Error(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const v = value as Record<string, unknown>;
  const statusMap: Record<number, string> = v.STATUS_MAP ? {} : { ...DEFAULT_STATUS_MAP };
  for (const pair of csv(v.STATUS_MAP as string | undefined)) {
    const [code, kind] = pair.split(':').map((s) => s.trim());
    statusMap[Number(code)] = kind;
  }
  const shared = {
    port: v.PORT as number,
    host: v.HOST as string,
    callbackDeadlineMs: v.CALLBACK_DEADLINE_MS as number,
    transientRetries: v.CALLBACK_TRANSIENT_RETRIES as number,
    callbackPath: v.CALLBACK_PATH as string,
    signatureHeader: (v.SIGNATURE_HEADER as string).toLowerCase(),
    webhookSecrets: csv(v.SPORTAPI_WEBHOOK_SECRETS as string),
    bodyLimitBytes: v.CALLBACK_BODY_LIMIT_BYTES as number,
    maxInflightBytes: v.CALLBACK_MAX_INFLIGHT_BYTES as number,
    amountScale: (v.AMOUNT_SCALE as number | undefined) ?? LEGACY_MINOR_UNITS,
    currencies: currencyTable(v),
    houseSubAccounts: v.HOUSE_SUB_ACCOUNTS as number,
    warnings:
      v.AMOUNT_SCALE === undefined
        ? []
        : [
            'AMOUNT_SCALE is deprecated: each currency has its own minor units (ISO 4217, CURRENCY_MINOR_UNITS); ' +
              'it now only sets those of a stored currency that neither knows (docs/configuration.md#currencies)',
          ],
    statusMap,
    swaggerEnabled: v.SWAGGER_ENABLED as boolean,
    consoleDir: v.CONSOLE_DIR as string,
    sportApi: {
      baseUrl: (v.SPORTAPI_BASE_URL as string | undefined)?.replace(/\/+$/, ''),
      couponPath: v.SPORTAPI_COUPON_PATH as string,
      apiKey: v.SPORTAPI_API_KEY as string | undefined,
      authHeader: (v.SPORTAPI_AUTH_HEADER as string).toLowerCase(),
      timeoutMs: v.SPORTAPI_TIMEOUT_MS as number,
      retries: v.SPORTAPI_RETRIES as number,
    },
    reconciliation: {
      intervalMs: v.RECONCILE_INTERVAL as number,
      afterMs: v.RECONCILE_AFTER as number,
      batchSize: v.RECONCILE_BATCH_SIZE as number,
    },
    logLevel: v.LOG_LEVEL as string,
    heapGrowingPercent: v.HEAP_GROWING_PERCENT as number,
    metricsAllowedNetworks: csv(v.METRICS_ALLOWED_NETWORKS as string | undefined),
    callbackMode: v.CALLBACK_MODE as 'inline' | 'inbox',
    inboxPollIntervalMs: v.INBOX_POLL_INTERVAL_MS as number,
    inboxConcurrency: v.INBOX_CONCURRENCY as number,
    inboxMaxAttempts: v.INBOX_MAX_ATTEMPTS as number,
    inboxRetryBaseMs: v.INBOX_RETRY_BASE_MS as number,
    inboxRetryMaxMs: v.INBOX_RETRY_MAX_MS as number,
    console: {
      rollupIntervalMs: v.DELIVERY_ROLLUP_INTERVAL as number,
      bulkPollIntervalMs: v.BULK_ACTION_POLL_INTERVAL as number,
    },
    background: {
      enabled: v.BACKGROUND_GOVERNOR as boolean,
      targetMs: v.BACKGROUND_TARGET_MS as number,
      eventLoopDelayMs: v.BACKGROUND_EVENT_LOOP_DELAY_MS as number,
      windowMs: v.BACKGROUND_WINDOW_MS as number,
    },
  };
  return Object.assign(shared, ...fragments.map((f) => f.build(v))) as AppConfig;
}

/** Injection token of the validated {@link AppConfig}. */
export const APP_CONFIG = Symbol('APP_CONFIG');
