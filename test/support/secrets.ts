/**
 * The tests' example secrets, each at least 16 characters as the start-up requires of
 * `SPORTAPI_WEBHOOK_SECRETS` and of a plain key of `OPS_API_KEYS` (`MIN_SECRET_LENGTH`,
 * docs/configuration.md). No Nest or database import: unit tests use it too.
 */
export const SECRET = 'test-webhook-secret-1';
export const OTHER_SECRET = 'test-webhook-secret-2';
/** The legacy bare key of every test app: every scope, named `key-1`. */
export const OPS_KEY = 'test-ops-key-0c7e41d9';
/** The two required variables, valid: what a configuration test adds its own variables to. */
export const REQUIRED_ENV = { SPORTAPI_WEBHOOK_SECRETS: SECRET, OPS_API_KEYS: OPS_KEY } as const;
