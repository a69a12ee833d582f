import { authConfig } from './auth/auth.config.js';
import type { ConfigFragment } from './config/config-fragment.js';
import { AppConfig, loadConfigWith } from './config/configuration.js';
import { databaseConfig } from './database/database.config.js';
import { BUILT_IN_EVENT_PUBLISHERS, eventsConfig, unknownEventPublishers } from './events/events.config.js';
import { httpConfig } from './http/http.config.js';
import { BUILT_IN_WALLET_CONNECTORS, unknownWalletConnector } from './wallet/wallet-connectors.js';
import { retentionConfig } from './retention/retention.config.js';
import { walletConfig } from './wallet/wallet.config.js';

export type { AppConfig };

/**
 * The configuration fragments the receiver is made of: the shared variables are config/'s, each
 * feature's are its own (docs/configuration.md). A feature whose fragment is not listed here has
 * none of its fields at run time.
 */
export const CONFIG_FRAGMENTS: readonly ConfigFragment[] = [
  databaseConfig,
  httpConfig,
  authConfig,
  walletConfig,
  eventsConfig,
  retentionConfig,
];

/**
 * Validates `env` and returns the receiver's typed configuration.
 * @throws Error naming every wrong or missing variable (the app does not start).
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  return loadConfigWith(env, CONFIG_FRAGMENTS);
}

/**
 * Without extension modules (`withExtensions` false) only the built-in connector (`http`) and
 * publishers (`rabbitmq`, `nats`) exist, so an unknown name in `WALLET_CONNECTOR` or
 * `EVENT_PUBLISHERS` is refused here: `startReceiver` calls it before any database is started or
 * migrated. With extensions the names are instance properties, known only once Nest has created
 * the providers: WalletOutbox and EventOutboxes refuse an unknown name then (docs/extending.md).
 * @throws Error the configuration error of an unknown name.
 */
export function checkBuiltInNames(config: AppConfig, withExtensions: boolean): void {
  if (withExtensions) return;
  const connector = config.wallet.connector;
  if (connector !== undefined && !(BUILT_IN_WALLET_CONNECTORS as readonly string[]).includes(connector))
    throw unknownWalletConnector(connector, []);
  const missing = config.events.publishers.filter(
    (name) => !(BUILT_IN_EVENT_PUBLISHERS as readonly string[]).includes(name),
  );
  if (missing.length) throw unknownEventPublishers(missing, []);
}
