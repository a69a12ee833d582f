import Joi from 'joi';
import proxyaddr from 'proxy-addr';
import { configFragment, csv } from '../config/config-fragment.js';

/** The HTTP server and where the callback is received (docs/configuration.md#http-and-the-callback). */
export interface HttpConfig {
  port: number;
  host: string;
  /** Path the callback is mounted at (`CALLBACK_PATH`, as written). */
  callbackPath: string;
  /** Bytes; a larger decoded callback body is answered 413 (also the largest coupon read from SportAPI). */
  bodyLimitBytes: number;
  /** Bytes of callback bodies processed at once; beyond it a delivery is answered 503. */
  maxInflightBytes: number;
  /** Swagger UI at `/docs` and the OpenAPI JSON at `/docs-json`. */
  swaggerEnabled: boolean;
  /**
   * Addresses and CIDR blocks (or proxy-addr's names `loopback`, `linklocal`, `uniquelocal`) of
   * the load balancers whose `X-Forwarded-For` is believed: Express's `trust proxy`. Empty: none,
   * the client is the TCP peer (docs/configuration.md#client-address).
   */
  trustedProxies: string[];
}

/**
 * `PORT`, `HOST`, `CALLBACK_PATH`, `CALLBACK_BODY_LIMIT_BYTES`, `CALLBACK_MAX_INFLIGHT_BYTES`,
 * `SWAGGER_ENABLED`, `TRUSTED_PROXIES` (comma-separated; checked with proxy-addr, what Express
 * compiles `trust proxy` with, so a bad entry stops the start naming the variable and the entry).
 */
export const httpConfig = configFragment('http', {
  schema: {
    PORT: Joi.number().port().default(3000),
    HOST: Joi.string().default('0.0.0.0'),
    CALLBACK_PATH: Joi.string()
      .pattern(/^\/[A-Za-z0-9/_-]*$/)
      .default('/sportapi/callback'),
    CALLBACK_BODY_LIMIT_BYTES: Joi.number()
      .integer()
      .min(1024)
      .default(2 * 1024 * 1024),
    CALLBACK_MAX_INFLIGHT_BYTES: Joi.number()
      .integer()
      .min(1024)
      .default(8 * 1024 * 1024),
    SWAGGER_ENABLED: Joi.boolean().truthy('1').falsy('0').default(true),
    TRUSTED_PROXIES: Joi.string()
      .custom((v: string, helpers) => {
        const bad = csv(v).filter((entry) => {
          try {
            proxyaddr.compile(entry);
            return false;
          } catch {
            return true;
          }
        });
        return bad.length
          ? helpers.message({
              custom: `not an IP address, CIDR block or loopback/linklocal/uniquelocal: ${bad.join(', ')}`,
            })
          : v;
      })
      .optional(),
  },
  build: (v): HttpConfig => ({
    port: v.PORT as number,
    host: v.HOST as string,
    callbackPath: v.CALLBACK_PATH as string,
    bodyLimitBytes: v.CALLBACK_BODY_LIMIT_BYTES as number,
    maxInflightBytes: v.CALLBACK_MAX_INFLIGHT_BYTES as number,
    swaggerEnabled: v.SWAGGER_ENABLED as boolean,
    trustedProxies: csv(v.TRUSTED_PROXIES as string | undefined),
  }),
});

/** Injection token of the {@link HttpConfig} slice. */
export const HTTP_CONFIG = httpConfig.token;
