import Joi from 'joi';
import proxyaddr from 'proxy-addr';
import { configFragment, csv } from '../config/config-fragment.js';

/** Which peers may tell the client's address (docs/configuration.md#client-address). */
export interface HttpConfig {
  /**
   * Addresses and CIDR blocks (or proxy-addr's names `loopback`, `linklocal`, `uniquelocal`) of
   * the load balancers whose `X-Forwarded-For` is believed: Express's `trust proxy`. Empty: none,
   * the client is the TCP peer.
   */
  trustedProxies: string[];
}

declare module '../config/configuration.js' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface AppConfig extends HttpConfig {}
}

/**
 * `TRUSTED_PROXIES`, comma-separated; checked with proxy-addr (what Express compiles `trust proxy`
 * with), so a bad entry stops the start naming the variable and the entry.
 */
export const httpConfig = configFragment<HttpConfig>({
  schema: {
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
  build: (v) => ({ trustedProxies: csv(v.TRUSTED_PROXIES as string | undefined) }),
});
