import Joi from 'joi';
import { configFragment } from '../config/config-fragment.js';
import { DEFAULT_CLUSTERS_DIR } from './embedded-postgres-root.js';

/** The database's slice of the configuration (docs/configuration.md#database). */
export interface DatabaseConfig {
  /** Absent: an embedded PostgreSQL under `embeddedDataDir` is started (CONTRACT §10). */
  databaseUrl: string | undefined;
  /**
   * `DATABASE_POOLED`: `databaseUrl` goes through a transaction-mode pooler (PgBouncer): no named
   * prepared statements, nothing that needs a session on it (docs/production.md#pgbouncer).
   */
  databasePooled: boolean;
  /**
   * `DATABASE_DIRECT_URL`: the PostgreSQL server itself, for the work that needs a session
   * (migrations, session advisory locks, retention); else `databaseUrl`. Required when pooled.
   */
  databaseDirectUrl: string | undefined;
  embeddedDataDir: string;
  embeddedPort: number;
  /** As root: where clusters of data folders in `.data` the postgres user cannot reach are kept. */
  embeddedClustersDir: string;
  dbPoolSize: number;
  /** Milliseconds; statement, lock and idle-in-transaction timeouts, all below the deadline. */
  statementTimeoutMs: number;
  lockTimeoutMs: number;
  idleInTransactionTimeoutMs: number;
  runMigrationsOnStart: boolean;
}

/** `DATABASE_URL` (pooled or not, `DATABASE_DIRECT_URL`), the embedded PostgreSQL, the pool and the session timeouts, migrations at start. */
export const databaseConfig = configFragment('database', {
  schema: {
    DATABASE_URL: Joi.string()
      .uri({ scheme: ['postgres', 'postgresql'] })
      .optional(),
    DATABASE_POOLED: Joi.boolean().truthy('1').falsy('0').default(false),
    // A transaction-mode pooler keeps no session: migrations, retention, scheduled reconciliation,
    // the delivery rollup and bulk actions hold session advisory locks, so they need the server.
    DATABASE_DIRECT_URL: Joi.string()
      .uri({ scheme: ['postgres', 'postgresql'] })
      .when('DATABASE_POOLED', {
        is: true,
        then: Joi.required().messages({
          'any.required':
            '{{#label}} is required with DATABASE_POOLED=1: migrations, retention, scheduled reconciliation, the delivery rollup and bulk actions hold session advisory locks, which a transaction-mode pooler cannot keep; set it to the PostgreSQL server itself (docs/production.md#pgbouncer)',
        }),
        otherwise: Joi.optional(),
      }),
    EMBEDDED_PG_DATA_DIR: Joi.string().default('.data/postgres'),
    EMBEDDED_PG_PORT: Joi.number().port().default(54329),
    EMBEDDED_PG_CLUSTERS_DIR: Joi.string().default(DEFAULT_CLUSTERS_DIR),
    DB_POOL_SIZE: Joi.number().integer().min(1).max(200).default(16),
    DB_STATEMENT_TIMEOUT_MS: Joi.number().integer().min(100).max(7000).default(5000),
    DB_LOCK_TIMEOUT_MS: Joi.number().integer().min(50).max(7000).default(3000),
    DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: Joi.number().integer().min(100).max(7000).default(5000),
    RUN_MIGRATIONS_ON_START: Joi.boolean().truthy('1').falsy('0').default(true),
  },
  build: (v): DatabaseConfig => ({
    databaseUrl: v.DATABASE_URL as string | undefined,
    databasePooled: v.DATABASE_POOLED as boolean,
    databaseDirectUrl: v.DATABASE_DIRECT_URL as string | undefined,
    embeddedDataDir: v.EMBEDDED_PG_DATA_DIR as string,
    embeddedPort: v.EMBEDDED_PG_PORT as number,
    embeddedClustersDir: v.EMBEDDED_PG_CLUSTERS_DIR as string,
    dbPoolSize: v.DB_POOL_SIZE as number,
    statementTimeoutMs: v.DB_STATEMENT_TIMEOUT_MS as number,
    lockTimeoutMs: v.DB_LOCK_TIMEOUT_MS as number,
    idleInTransactionTimeoutMs: v.DB_IDLE_IN_TRANSACTION_TIMEOUT_MS as number,
    runMigrationsOnStart: v.RUN_MIGRATIONS_ON_START as boolean,
  }),
});

/** Injection token of the {@link DatabaseConfig} slice. */
export const DATABASE_CONFIG = databaseConfig.token;
