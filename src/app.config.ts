import { authConfig } from './auth/auth.config.js';
import type { ConfigFragment } from './config/config-fragment.js';
import { AppConfig, envSchema, loadConfigWith } from './config/configuration.js';
import { databaseConfig } from './database/database.config.js';
import { extensionSchema } from './database/extension-schema.js';
import { extensionSettings, extensionVariableProblems, isExtension } from './extension.js';
import type { ExtensionEntry } from './extension.js';
import { MIGRATIONS } from '../migrations/index.js';
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
 * Validates `env` and returns the receiver's typed configuration; with `extensions`, their
 * configuration fragments too (their fields added, their settings kept for the start line) and
 * their names, migrations and variables checked (docs/extending.md).
 * @throws Error naming every wrong or missing variable (the app does not start), or every bad
 *   extension entry (`Invalid extensions: …`).
 */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  extensions: readonly ExtensionEntry[] = [],
): AppConfig {
  const entries = extensions.filter(isExtension);
  if (!entries.length) return loadConfigWith(env, CONFIG_FRAGMENTS);
  extensionSchema(entries, MIGRATIONS);
  const ours = new Set([
    ...Object.keys((envSchema.describe() as { keys?: object }).keys ?? {}),
    ...CONFIG_FRAGMENTS.flatMap((f) => Object.keys(f.schema)),
  ]);
  const problems = extensionVariableProblems(entries, ours);
  if (problems.length) throw new Error(`Invalid extensions:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  const config = loadConfigWith(env, [
    ...CONFIG_FRAGMENTS,
    ...entries.flatMap((e) => (e.config ? [e.config] : [])),
  ]);
  return { ...config, extensionSettings: extensionSettings(entries, env) };
}

/**
 * Refuses an unknown name in `WALLET_CONNECTOR` or `EVENT_PUBLISHERS` before any database is
 * started or migrated (`startReceiver` calls it), and in `RETENTION_ARCHIVE_CONNECTOR` when a class
 * is archived: the built-in connector (`http`), publishers (`rabbitmq`, `nats`) and archive
 * connector (`directory`) and the names the {@link Extension} entries declare are known. A bare
 * extension module (`true`, or one among `extensions`) declares none: its names are instance
 * properties, known only once Nest has created the providers, so nothing is refused here and
 * WalletOutbox and EventOutboxes refuse an unknown name then (docs/extending.md).
 * @throws Error the configuration error of an unknown name.
 */
export function checkBuiltInNames(config: AppConfig, extensions: boolean | readonly ExtensionEntry[]): void {
  if (extensions === true) return;
  const entries = extensions === false ? [] : extensions;
  if (!entries.every(isExtension)) return;
  const connectors = entries.flatMap((e) => e.walletConnectors ?? []);
  const publishers = entries.flatMap((e) => e.eventPublishers ?? []);
  const connector = config.wallet.connector;
  if (connector !== undefined && ![...BUILT_IN_WALLET_CONNECTORS, ...connectors].includes(connector))
    throw unknownWalletConnector(connector, connectors);
  const known = [...BUILT_IN_EVENT_PUBLISHERS, ...publishers];
  const missing = config.events.publishers.filter((name) => !known.includes(name));
  if (missing.length) throw unknownEventPublishers(missing, publishers);
  // The same refusal as ArchiveConnectors' at start-up, only when a class is archived.
  const archives = ['directory', ...entries.flatMap((e) => e.archiveConnectors ?? [])];
  const { archiveClasses, archiveConnector } = config.retention;
  if (archiveClasses.length && !archives.includes(archiveConnector))
    throw new Error(
      `Invalid configuration:\n  - RETENTION_ARCHIVE_CONNECTOR: no connector '${archiveConnector}' (known: ${archives.join(', ')})`,
    );
}
