import Joi from 'joi';
import { configFragment, csv, duration, refuse } from '../../platform/config/config-fragment.js';
import { OperationType } from '../../core/ledger/ledger.types.js';
import type { OutboxSettings } from '../outbox/outbox.types.js';

/** Where settled money goes beyond the ledger: the wallet outbox and its connector (docs/wallet.md). */
export interface WalletConfig extends OutboxSettings {
  /**
   * Name of the wallet connector (any registered `WalletConnector`, docs/extending.md): `http` by
   * default when `WALLET_URL` is set; undefined: no connector, and no outbox row is written.
   */
  connector: string | undefined;
  /** Base URL of the HTTP connector (`POST {url}/transactions`). */
  url: string | undefined;
  /** HMAC-SHA256 key of the HTTP connector's `X-Signature`. */
  secret: string | undefined;
  /** Operation types written to the outbox: `WALLET_OPERATION_TYPES` with a connector, else none. */
  operationTypes: OperationType[];
}

/** `WALLET_OPERATION_TYPES` when unset: the settlement's credits and their reversals (docs/wallet.md). */
export const DEFAULT_WALLET_OPERATION_TYPES = 'final_credit,recalculation_debit';

/** The operation types a variable lists (comma-separated), checked against {@link OperationType}. */
export function operationTypesRule(name: string) {
  return Joi.string().custom((v: string, helpers) => {
    const known = Object.values(OperationType) as string[];
    const bad = csv(v).filter((t) => !known.includes(t));
    return bad.length || !csv(v).length
      ? helpers.message({
          custom: `${name} must be comma-separated operation types (${known.join(', ')}): ${bad.join(', ') || 'none given'}`,
        })
      : v;
  });
}

/** `WALLET_*` (docs/wallet.md, "Settings"). */
export const walletConfig = configFragment('wallet', {
  schema: {
    WALLET_CONNECTOR: Joi.string()
      .pattern(/^[a-z][a-z0-9-]{0,63}$/)
      .optional()
      .messages({ 'string.pattern.base': 'WALLET_CONNECTOR must be a connector name such as http, or none' }),
    WALLET_URL: Joi.string()
      .uri({ scheme: ['http', 'https'] })
      .optional(),
    WALLET_SECRET: Joi.string().min(16).optional(),
    WALLET_OPERATION_TYPES: operationTypesRule('WALLET_OPERATION_TYPES').default(
      DEFAULT_WALLET_OPERATION_TYPES,
    ),
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
    WALLET_BATCH_SIZE: Joi.number().integer().min(1).max(256).default(1),
  },
  /** @throws Error naming the variable when the HTTP connector lacks its URL or secret. */
  build: (v): WalletConfig => {
    const url = (v.WALLET_URL as string | undefined)?.replace(/\/+$/, '');
    const named = v.WALLET_CONNECTOR as string | undefined;
    const connector = named === 'none' ? undefined : (named ?? (url ? 'http' : undefined));
    refuse([
      connector === 'http' && !url ? 'WALLET_URL: required by the http wallet connector' : '',
      connector === 'http' && !v.WALLET_SECRET ? 'WALLET_SECRET: required by the http wallet connector' : '',
    ]);
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
  },
});

/** Injection token of the {@link WalletConfig} slice. */
export const WALLET_CONFIG = walletConfig.token;
