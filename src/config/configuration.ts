import Joi from 'joi';
import ms from 'ms';
import { parseApiKeys } from '../auth/api-keys.js';
import type { ApiKey } from '../auth/api-keys.js';
import { CURRENCY_CODE, CurrencyTable, LEGACY_MINOR_UNITS, MAX_MINOR_UNITS } from '../common/currency.js';
import { DEFAULT_CLUSTERS_DIR } from '../database/embedded-postgres.js';
import { OperationType } from '../ledger/ledger.types.js';

/**
 * Typed configuration of the receiver, read once from the environment at start-up.
 * Money-related limits are plain integers (digits), never amounts. Source: CONTRACT §3, §5, §10.
 */
export interface AppConfig {
  port: number;
  host: string;
  /** Absent: an embedded PostgreSQL under `embeddedDataDir` is started (CONTRACT §10). */
  databaseUrl: string | undefined;
  embeddedDataDir: string;
  embeddedPort: number;
  /** As root: where clusters of data folders in `.data` the postgres user cannot reach are kept. */
  embeddedClustersDir: string;
  dbPoolSize: number;
  /** Milliseconds; statement, lock and idle-in-transaction timeouts, all below the deadline. */
  statementTimeoutMs: number;
  lockTimeoutMs: number;
  idleInTransactionTimeoutMs: number;
  /** Milliseconds the callback may take end to end before it is rolled back and answered 503. */
  callbackDeadlineMs: number;
  /** In-process re-runs of a whole transaction after 40001/40P01. */
  transientRetries: number;
  callbackPath: string;
  signatureHeader: string;
  webhookSecrets: string[];
  /** The partner API's keys: name, scopes, SHA-256 of the secret (docs/api.md#keys-and-scopes). */
  opsApiKeys: ApiKey[];
  /** Failed authentications of one client address per window before it is answered 429. */
  authFailureLimit: number;
  /** Milliseconds of that window, counted from the first failure. */
  authFailureWindowMs: number;
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
  runMigrationsOnStart: boolean;
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
  /** The wallet outbox and its connector (docs/wallet.md). */
  wallet: WalletConfig;
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

/** Where settled money goes beyond the ledger: the wallet outbox and its connector (docs/wallet.md). */
export interface WalletConfig {
  /**
   * Name of the wallet connector (`src/wallet/wallet-connectors.ts`): `http` by default when
   * `WALLET_URL` is set; undefined: no connector, and no outbox row is written.
   */
  connector: string | undefined;
  /** Base URL of the HTTP connector (`POST {url}/transactions`). */
  url: string | undefined;
  /** HMAC-SHA256 key of the HTTP connector's `X-Signature`. */
  secret: string | undefined;
  /** Operation types written to the outbox: `WALLET_OPERATION_TYPES` with a connector, else none. */
  operationTypes: OperationType[];
  /** Milliseconds one delivery may take (connect, headers and body), then it is retried. */
  timeoutMs: number;
  /** Milliseconds a row is retried without a definite answer before it is parked. */
  retryForMs: number;
  /** Milliseconds; delay after the first failed attempt, doubled per attempt up to the maximum. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** Delivery workers per process. */
  concurrency: number;
  /** Rows (of distinct accounts) a worker claims at once and delivers in parallel. */
  claimSize: number;
  /**
   * Transactions per call: 1 sends one `POST /transactions` per operation; more sends arrays of up
   * to this many (the wallet must support the batch call, docs/wallet-http-contract.md).
   */
  batchSize: number;
  /** Milliseconds an idle delivery worker waits before looking for work again. */
  pollIntervalMs: number;
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

/**
 * A duration: milliseconds as a bare integer (`5400000`) or a number with a unit that the `ms`
 * package reads (`90m`, `1.5h`, `30s`, `2 days`). `allowOff` also accepts `off`/`false`/`0` as 0.
 */
function duration(allowOff = false) {
  return Joi.string().custom((v: string, helpers) => {
    const text = v.trim();
    if (allowOff && /^(off|false|0)$/i.test(text)) return 0;
    const value = /^\d+$/.test(text) ? Number(text) : ms(text as ms.StringValue);
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || !Number.isInteger(value))
      return helpers.message({
        custom: `{{#label}} must be milliseconds or a duration like "90m", "30s", "2h"${allowOff ? ', or "off"' : ''}`,
      });
    return value;
  });
}

const csv = (v: string | undefined): string[] =>
  (v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);

/** `WALLET_OPERATION_TYPES` when unset: the settlement's credits and their reversals (docs/wallet.md). */
export const DEFAULT_WALLET_OPERATION_TYPES = 'final_credit,recalculation_debit';

/** Joi schema of every environment variable the receiver reads (see `.env.example`). */
export const envSchema = Joi.object({
  PORT: Joi.number().port().default(3000),
  HOST: Joi.string().default('0.0.0.0'),
  DATABASE_URL: Joi.string()
    .uri({ scheme: ['postgres', 'postgresql'] })
    .optional(),
  EMBEDDED_PG_DATA_DIR: Joi.string().default('.data/postgres'),
  EMBEDDED_PG_PORT: Joi.number().port().default(54329),
  EMBEDDED_PG_CLUSTERS_DIR: Joi.string().default(DEFAULT_CLUSTERS_DIR),
  DB_POOL_SIZE: Joi.number().integer().min(1).max(200).default(16),
  DB_STATEMENT_TIMEOUT_MS: Joi.number().integer().min(100).max(7000).default(5000),
  DB_LOCK_TIMEOUT_MS: Joi.number().integer().min(50).max(7000).default(3000),
  DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: Joi.number().integer().min(100).max(7000).default(5000),
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
    .custom((v: string, helpers) =>
      csv(v).length > 0 ? v : helpers.message({ custom: 'SPORTAPI_WEBHOOK_SECRETS lists no secret' }),
    ),
  OPS_API_KEYS: Joi.string()
    .required()
    .custom((v: string, helpers) => {
      try {
        return parseApiKeys(v);
      } catch (err) {
        return helpers.message({ custom: (err as Error).message });
      }
    }),
  AUTH_FAILURE_LIMIT: Joi.number().integer().min(1).max(100_000).default(10),
  AUTH_FAILURE_WINDOW: duration()
    .custom((v: number, helpers) =>
      v >= 1000 && v <= 86_400_000
        ? v
        : helpers.message({ custom: 'AUTH_FAILURE_WINDOW must be from 1s to 24h' }),
    )
    .default(60_000),
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
  RUN_MIGRATIONS_ON_START: Joi.boolean().truthy('1').falsy('0').default(true),
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
  WALLET_CONNECTOR: Joi.string()
    .pattern(/^[a-z][a-z0-9-]{0,63}$/)
    .optional()
    .messages({ 'string.pattern.base': 'WALLET_CONNECTOR must be a connector name such as http, or none' }),
  WALLET_URL: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .optional(),
  WALLET_SECRET: Joi.string().min(16).optional(),
  WALLET_OPERATION_TYPES: Joi.string()
    .custom((v: string, helpers) => {
      const known = Object.values(OperationType) as string[];
      const bad = csv(v).filter((t) => !known.includes(t));
      return bad.length || !csv(v).length
        ? helpers.message({
            custom: `WALLET_OPERATION_TYPES must be comma-separated operation types (${known.join(', ')}): ${bad.join(', ') || 'none given'}`,
          })
        : v;
    })
    .default(DEFAULT_WALLET_OPERATION_TYPES),
  WALLET_TIMEOUT_MS: Joi.number().integer().min(100).max(60_000).default(5000),
  WALLET_RETRY_FOR: duration()
    .custom((v: number, helpers) =>
      v >= 1000 ? v : helpers.message({ custom: 'WALLET_RETRY_FOR must be at least 1s' }),
    )
    .default(24 * 3_600_000),
  WALLET_RETRY_BASE_MS: Joi.number().integer().min(10).max(3_600_000).default(1000),
  WALLET_RETRY_MAX_MS: Joi.number()
    .integer()
    .min(Joi.ref('WALLET_RETRY_BASE_MS'))
    .max(86_400_000)
    .default(300_000)
    .messages({ 'number.min': 'WALLET_RETRY_MAX_MS must not be below WALLET_RETRY_BASE_MS' }),
  WALLET_CONCURRENCY: Joi.number().integer().min(1).max(64).default(8),
  WALLET_CLAIM_SIZE: Joi.number().integer().min(1).max(64).default(8),
  WALLET_POLL_INTERVAL_MS: Joi.number().integer().min(10).max(60_000).default(250),
  DELIVERY_ROLLUP_INTERVAL: duration(true).default(30_000),
  BULK_ACTION_POLL_INTERVAL: duration(true).default(1000),
  WALLET_BATCH_SIZE: Joi.number().integer().min(1).max(256).default(1),
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

/**
 * The wallet settings (values as Joi validated them). @throws Error naming the variable when the
 * HTTP connector lacks its URL or secret.
 */
function walletConfig(v: Record<string, unknown>): WalletConfig {
  const url = (v.WALLET_URL as string | undefined)?.replace(/\/+$/, '');
  const named = v.WALLET_CONNECTOR as string | undefined;
  const connector = named === 'none' ? undefined : (named ?? (url ? 'http' : undefined));
  const missing = [
    connector === 'http' && !url ? 'WALLET_URL: required by the http wallet connector' : '',
    connector === 'http' && !v.WALLET_SECRET ? 'WALLET_SECRET: required by the http wallet connector' : '',
  ].filter(Boolean);
  if (missing.length) throw new Error(`Invalid configuration:\n${missing.map((m) => `  - ${m}`).join('\n')}`);
  return {
    connector,
    url,
    secret: v.WALLET_SECRET as string | undefined,
    operationTypes: connector ? (csv(v.WALLET_OPERATION_TYPES as string) as OperationType[]) : [],
    timeoutMs: v.WALLET_TIMEOUT_MS as number,
    retryForMs: v.WALLET_RETRY_FOR as number,
    retryBaseMs: v.WALLET_RETRY_BASE_MS as number,
    retryMaxMs: v.WALLET_RETRY_MAX_MS as number,
    concurrency: v.WALLET_CONCURRENCY as number,
    claimSize: v.WALLET_CLAIM_SIZE as number,
    batchSize: v.WALLET_BATCH_SIZE as number,
    pollIntervalMs: v.WALLET_POLL_INTERVAL_MS as number,
  };
}

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
 * Validates `env` and returns the typed configuration.
 * @throws Error naming every wrong or missing variable (the app does not start).
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  // An empty variable counts as unset (e.g. `DATABASE_URL=` selects the embedded server).
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const { error, value } = envSchema.validate(present, { abortEarly: false, convert: true });
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
  return {
    port: v.PORT as number,
    host: v.HOST as string,
    databaseUrl: v.DATABASE_URL as string | undefined,
    embeddedDataDir: v.EMBEDDED_PG_DATA_DIR as string,
    embeddedPort: v.EMBEDDED_PG_PORT as number,
    embeddedClustersDir: v.EMBEDDED_PG_CLUSTERS_DIR as string,
    dbPoolSize: v.DB_POOL_SIZE as number,
    statementTimeoutMs: v.DB_STATEMENT_TIMEOUT_MS as number,
    lockTimeoutMs: v.DB_LOCK_TIMEOUT_MS as number,
    idleInTransactionTimeoutMs: v.DB_IDLE_IN_TRANSACTION_TIMEOUT_MS as number,
    callbackDeadlineMs: v.CALLBACK_DEADLINE_MS as number,
    transientRetries: v.CALLBACK_TRANSIENT_RETRIES as number,
    callbackPath: v.CALLBACK_PATH as string,
    signatureHeader: (v.SIGNATURE_HEADER as string).toLowerCase(),
    webhookSecrets: csv(v.SPORTAPI_WEBHOOK_SECRETS as string),
    opsApiKeys: v.OPS_API_KEYS as ApiKey[],
    authFailureLimit: v.AUTH_FAILURE_LIMIT as number,
    authFailureWindowMs: v.AUTH_FAILURE_WINDOW as number,
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
    runMigrationsOnStart: v.RUN_MIGRATIONS_ON_START as boolean,
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
    wallet: walletConfig(v),
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
}

/** Injection token of the validated {@link AppConfig}. */
export const APP_CONFIG = Symbol('APP_CONFIG');
