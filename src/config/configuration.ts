import Joi from 'joi';

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
  opsApiKeys: string[];
  /** Bytes; a larger decoded body is answered 413. */
  bodyLimitBytes: number;
  /** Bytes of callback bodies processed at once; beyond it a delivery is answered 503. */
  maxInflightBytes: number;
  /** Digits after the decimal point allowed in amounts (currency minor unit). */
  amountScale: number;
  /** Status code → kind; defaults of CONTRACT §6 when unset. */
  statusMap: Record<number, string>;
  swaggerEnabled: boolean;
  runMigrationsOnStart: boolean;
}

const csv = (v: string | undefined): string[] =>
  (v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);

/** Joi schema of every environment variable the receiver reads (see `.env.example`). */
export const envSchema = Joi.object({
  NODE_ENV: Joi.string().valid('development', 'production', 'test').default('development'),
  PORT: Joi.number().port().default(3000),
  HOST: Joi.string().default('0.0.0.0'),
  DATABASE_URL: Joi.string()
    .uri({ scheme: ['postgres', 'postgresql'] })
    .optional(),
  EMBEDDED_PG_DATA_DIR: Joi.string().default('.data/postgres'),
  EMBEDDED_PG_PORT: Joi.number().port().default(54329),
  DB_POOL_SIZE: Joi.number().integer().min(1).max(200).default(40),
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
    .custom((v: string, helpers) =>
      csv(v).length > 0 ? v : helpers.message({ custom: 'OPS_API_KEYS lists no key' }),
    ),
  CALLBACK_BODY_LIMIT_BYTES: Joi.number()
    .integer()
    .min(1024)
    .default(2 * 1024 * 1024),
  CALLBACK_MAX_INFLIGHT_BYTES: Joi.number()
    .integer()
    .min(1024)
    .default(8 * 1024 * 1024),
  // Amounts are stored as numeric(20,2): more digits would be rounded, so at most 2.
  AMOUNT_SCALE: Joi.number().integer().min(0).max(2).default(2),
  STATUS_MAP: Joi.string()
    .pattern(
      /^\s*\d+\s*:\s*(PENDING|WIN|REFUND|LOSS|RECALCULATION)\s*(,\s*\d+\s*:\s*(PENDING|WIN|REFUND|LOSS|RECALCULATION)\s*)*$/,
    )
    .optional()
    .messages({
      'string.pattern.base': 'STATUS_MAP must look like "1:PENDING,2:WIN,3:REFUND,4:LOSS,15:RECALCULATION"',
    }),
  SWAGGER_ENABLED: Joi.boolean().truthy('1').falsy('0').default(true),
  RUN_MIGRATIONS_ON_START: Joi.boolean().truthy('1').falsy('0').default(true),
}).unknown(true);

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
    dbPoolSize: v.DB_POOL_SIZE as number,
    statementTimeoutMs: v.DB_STATEMENT_TIMEOUT_MS as number,
    lockTimeoutMs: v.DB_LOCK_TIMEOUT_MS as number,
    idleInTransactionTimeoutMs: v.DB_IDLE_IN_TRANSACTION_TIMEOUT_MS as number,
    callbackDeadlineMs: v.CALLBACK_DEADLINE_MS as number,
    transientRetries: v.CALLBACK_TRANSIENT_RETRIES as number,
    callbackPath: v.CALLBACK_PATH as string,
    signatureHeader: (v.SIGNATURE_HEADER as string).toLowerCase(),
    webhookSecrets: csv(v.SPORTAPI_WEBHOOK_SECRETS as string),
    opsApiKeys: csv(v.OPS_API_KEYS as string),
    bodyLimitBytes: v.CALLBACK_BODY_LIMIT_BYTES as number,
    maxInflightBytes: v.CALLBACK_MAX_INFLIGHT_BYTES as number,
    amountScale: v.AMOUNT_SCALE as number,
    statusMap,
    swaggerEnabled: v.SWAGGER_ENABLED as boolean,
    runMigrationsOnStart: v.RUN_MIGRATIONS_ON_START as boolean,
  };
}

/** Injection token of the validated {@link AppConfig}. */
export const APP_CONFIG = Symbol('APP_CONFIG');
