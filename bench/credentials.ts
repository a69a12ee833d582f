/**
 * The secrets every benchmark gives the receivers it starts and signs its load with: one set, each
 * long enough for the configuration's 16-character minimum (docs/configuration.md).
 */
/** `SPORTAPI_WEBHOOK_SECRETS`: the load's HMAC key. */
export const SECRET = 'bench-webhook-secret';
/** `OPS_API_KEYS` as a bare key (every scope): registration, probes, the audit. */
export const OPS_KEY = 'bench-ops-key-0a4f91c2';
/** `WALLET_SECRET`: the stand-in wallet's and the receiver's. */
export const WALLET_SECRET = 'bench-wallet-secret-0123456789';
