import { authConfig } from './auth/auth.config.js';
import type { ConfigFragment } from './config/config-fragment.js';
import { AppConfig, loadConfigWith } from './config/configuration.js';
import { databaseConfig } from './database/database.config.js';
import { eventsConfig } from './events/events.config.js';
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
