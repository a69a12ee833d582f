import Joi from 'joi';
import { configFragment, duration } from '../config/config-fragment.js';
import { ApiKey, parseApiKeys } from './api-keys.js';

/** The partner API's keys and the failed-authentication limit (docs/api.md#keys-and-scopes). */
export interface AuthConfig {
  /** The partner API's keys: name, scopes, SHA-256 of the secret (docs/api.md#keys-and-scopes). */
  opsApiKeys: ApiKey[];
  /** Failed authentications of one client address per window before it is answered 429. */
  authFailureLimit: number;
  /** Milliseconds of that window, counted from the first failure. */
  authFailureWindowMs: number;
}

/** `OPS_API_KEYS`, `AUTH_FAILURE_LIMIT`, `AUTH_FAILURE_WINDOW`. */
export const authConfig = configFragment('auth', {
  schema: {
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
  },
  build: (v): AuthConfig => ({
    opsApiKeys: v.OPS_API_KEYS as ApiKey[],
    authFailureLimit: v.AUTH_FAILURE_LIMIT as number,
    authFailureWindowMs: v.AUTH_FAILURE_WINDOW as number,
  }),
});

/** Injection token of the {@link AuthConfig} slice. */
export const AUTH_CONFIG = authConfig.token;
