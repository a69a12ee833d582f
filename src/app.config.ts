import Joi from 'joi';
import { authConfig } from './platform/auth/auth.config.js';
import { backgroundConfig } from './platform/background/background.config.js';
import { callbackConfig } from './intake/callbacks/callback.config.js';
import { configFragment } from './platform/config/config-fragment.js';
import type { ConfigOf } from './platform/config/config-fragment.js';
import { buildSlices, validateEnv } from './platform/config/configuration.js';
import { consoleConfig } from './operations/console/console.config.js';
import { databaseConfig } from './platform/database/database.config.js';
import { extensionSchema } from './platform/database/extension-schema.js';
import { transactionConfig } from './platform/database/transaction.config.js';
import { extensionSettings, extensionVariableProblems, isExtension } from './extension.js';
import type { ExtensionEntry, ExtensionsConfig } from './extension.js';
import { MIGRATIONS } from '../migrations/index.js';
import {
  BUILT_IN_EVENT_PUBLISHERS,
  eventsConfig,
  unknownEventPublishers,
} from './outbound/events/events.config.js';
import { metricsConfig } from './platform/health/metrics.config.js';
import { httpConfig } from './platform/http/http.config.js';
import { inboxConfig } from './intake/inbox/inbox.config.js';
import { moneyConfig } from './core/ledger/money.config.js';
import { loggingConfig } from './platform/observability/logging.config.js';
import { reconciliationConfig, sportApiConfig } from './intake/reconciliation/reconciliation.config.js';
import { retentionConfig } from './operations/retention/retention.config.js';
import { settlementConfig } from './core/settlement/settlement.config.js';
import { BUILT_IN_WALLET_CONNECTORS, unknownWalletConnector } from './outbound/wallet/wallet-connectors.js';
import { walletConfig } from './outbound/wallet/wallet.config.js';

/** The process itself, read by the start only (`main.ts`). */
export interface RuntimeConfig {
  /**
   * V8's old-generation growing factor, in percent over the live heap after a full GC
   * (`--heap-growing-percent`, set at start); 0 keeps V8's own factor (up to 4×).
   */
  heapGrowingPercent: number;
}

/** `HEAP_GROWING_PERCENT` (docs/configuration.md#operations). */
export const runtimeConfig = configFragment('runtime', {
  schema: { HEAP_GROWING_PERCENT: Joi.number().integer().min(0).max(300).default(100) },
  build: (v): RuntimeConfig => ({ heapGrowingPercent: v.HEAP_GROWING_PERCENT as number }),
});

/** Injection token of the {@link RuntimeConfig} slice. */
export const RUNTIME_CONFIG = runtimeConfig.token;

/**
 * The configuration fragments the receiver is made of, each owned by its feature
 * (docs/configuration.md): its slice is `config.<key>` and is provided under its token. The
 * variables are validated in this order (`BACKGROUND_TARGET_MS` is checked against
 * `CALLBACK_DEADLINE_MS`, validated before it). A feature whose fragment is not listed here has
 * no slice, in the type ({@link AppConfig}) as at run time.
 */
export const CONFIG_FRAGMENTS = [
  httpConfig,
  transactionConfig,
  callbackConfig,
  moneyConfig,
  settlementConfig,
  consoleConfig,
  sportApiConfig,
  reconciliationConfig,
  loggingConfig,
  runtimeConfig,
  metricsConfig,
  inboxConfig,
  backgroundConfig,
  databaseConfig,
  authConfig,
  walletConfig,
  eventsConfig,
  retentionConfig,
] as const;

/**
 * The receiver's whole configuration, for the start and the tests only (no provider injects it):
 * each fragment of {@link CONFIG_FRAGMENTS} under its key, derived from that list, and what the
 * extension entries given to {@link loadConfig} brought.
 */
export type AppConfig = ConfigOf<typeof CONFIG_FRAGMENTS> & {
  /** The extension entries' settings and slices ({ settings: [], slices: {} } without any). */
  extensions: ExtensionsConfig;
};

/**
 * Validates `env` and returns the receiver's typed configuration; with `extensions`, their
 * configuration fragments too (each one's slice kept under its extension's name, its settings
 * kept for the start line) and their names, migrations and variables checked (docs/extending.md).
 * @throws Error naming every wrong or missing variable (the app does not start), or every bad
 *   extension entry (`Invalid extensions: …`).
 */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  extensions: readonly ExtensionEntry[] = [],
): AppConfig {
  const entries = extensions.filter(isExtension);
  if (entries.length) {
    extensionSchema(entries, MIGRATIONS);
    const ours = new Set(CONFIG_FRAGMENTS.flatMap((f) => Object.keys(f.schema)));
    const problems = extensionVariableProblems(entries, ours);
    if (problems.length)
      throw new Error(`Invalid extensions:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
  const values = validateEnv(env, [
    ...CONFIG_FRAGMENTS,
    ...entries.flatMap((e) => (e.config ? [e.config] : [])),
  ]);
  const config = buildSlices(values, CONFIG_FRAGMENTS);
  const slices = Object.fromEntries(
    entries.flatMap((e) => (e.config ? [[e.name, e.config.build(values)]] : [])),
  );
  return { ...config, extensions: { settings: extensionSettings(entries, env), slices } };
}

/** A slice and the token it is provided under. */
export interface ConfigSlice {
  token: symbol;
  value: object;
}

/**
 * Every slice of `config` with its token: each fragment's of {@link CONFIG_FRAGMENTS}, and each
 * extension entry's among `entries` that has a fragment (its slice as `loadConfig` built it).
 */
export function configSlices(config: AppConfig, entries: readonly ExtensionEntry[] = []): ConfigSlice[] {
  const ours = CONFIG_FRAGMENTS.map((f) => ({ token: f.token, value: config[f.key] }));
  const theirs = entries
    .filter(isExtension)
    .flatMap((e) =>
      e.config && Object.hasOwn(config.extensions.slices, e.name)
        ? [{ token: e.config.token, value: config.extensions.slices[e.name] }]
        : [],
    );
  return [...ours, ...theirs];
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
