import Joi from 'joi';
import { configFragment, csv } from '../../platform/config/config-fragment.js';

/** The callback's signature (CONTRACT §3): the header it comes in and the secrets it is checked against. */
export interface CallbackConfig {
  /** Lower-case name of the header carrying `sha256=<hex>`. */
  signatureHeader: string;
  /** HMAC-SHA256 secrets; any one matching is enough (rotation). */
  webhookSecrets: string[];
}

/** Characters each of `SPORTAPI_WEBHOOK_SECRETS` has at least (as a plain key of `OPS_API_KEYS`). */
export const MIN_SECRET_LENGTH = 16;

/** `SIGNATURE_HEADER`, `SPORTAPI_WEBHOOK_SECRETS` (required; each secret named by position, never by value). */
export const callbackConfig = configFragment('callback', {
  schema: {
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
  },
  build: (v): CallbackConfig => ({
    signatureHeader: (v.SIGNATURE_HEADER as string).toLowerCase(),
    webhookSecrets: csv(v.SPORTAPI_WEBHOOK_SECRETS as string),
  }),
});

/** Injection token of the {@link CallbackConfig} slice. */
export const CALLBACK_CONFIG = callbackConfig.token;
