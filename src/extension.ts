import type { DynamicModule, Type } from '@nestjs/common';
import Joi from 'joi';
import type { ConfigFragment } from './platform/config/config-fragment.js';
import type { ExtensionSchemaEntry, MigrationClass } from './platform/database/extension-schema.js';

/**
 * A bookmaker's extension (docs/extending.md): its Nest module and what the receiver must know of
 * it before the module is created, i.e. before the database starts: its migrations and entities
 * (run and checked with ours), its configuration fragment (validated with ours, listed in the start
 * line) and the names of the connectors and publishers it provides (checked against
 * `WALLET_CONNECTOR`, `EVENT_PUBLISHERS`, `RETENTION_ARCHIVE_CONNECTOR` before anything starts).
 * A bare module (`extensions: [AcmeModule]`) still works, without these.
 */
export interface Extension extends ExtensionSchemaEntry {
  /** Lower-case letters, digits and `-` (e.g. `partner`): prefixes its migrations' and variables' names. */
  name: string;
  /** The Nest module holding its providers. */
  module: Type<unknown> | DynamicModule;
  /** Its migrations, recorded as `<name>.<ClassName>` in `schema_migrations`, run in timestamp order with ours. */
  migrations?: readonly MigrationClass[];
  /** Its TypeORM entities: they must describe its migrated tables (`schema:log`). */
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  entities?: readonly Function[];
  /**
   * Its variables: every one named `<NAME>_…` (the name upper-cased, `-` as `_`, e.g.
   * `PARTNER_POINTS_PER_UNIT`); `build`'s slice is provided under the fragment's `token`, which
   * its providers inject (`@Inject(partnerConfig.token)`), never the whole configuration.
   */
  config?: ConfigFragment;
  /** Variables of `config` shown as `***` in the start line (names holding SECRET, PASSWORD, TOKEN or KEY are too). */
  secrets?: readonly string[];
  /** Names of the `WalletConnector`s it provides. */
  walletConnectors?: readonly string[];
  /** Names of the `EventPublisher`s it provides. */
  eventPublishers?: readonly string[];
  /** Names of the `ArchiveConnector`s it provides. */
  archiveConnectors?: readonly string[];
}

/** What `extensions` holds: an {@link Extension} entry, or a bare module (the API before entries). */
export type ExtensionEntry = Extension | Type<unknown> | DynamicModule;

/** An extension entry, typed (an identity: it only checks the shape). */
export function defineExtension(extension: Extension): Extension {
  return extension;
}

/** Whether `entry` is an {@link Extension} entry (a plain object with a `name` and a `module`), not a module. */
export function isExtension(entry: ExtensionEntry): entry is Extension {
  return typeof entry === 'object' && typeof (entry as Extension).name === 'string' && 'module' in entry;
}

/** The Nest module of each entry. */
export function extensionModules(entries: readonly ExtensionEntry[]): (Type<unknown> | DynamicModule)[] {
  return entries.map((e) => (isExtension(e) ? e.module : e));
}

/** An extension's settings as the start line shows them: `NAME=value`, secrets as `***`. */
export interface ExtensionSettings {
  name: string;
  settings: string[];
}

/** The extension entries' part of a configuration `loadConfig` read with them. */
export interface ExtensionsConfig {
  /** Each entry's validated settings, for the start line (secrets masked). */
  settings: ExtensionSettings[];
  /** Each fragment's slice, by its extension's name (provided under the fragment's token). */
  slices: Record<string, object>;
}

/** `partner-x` → `PARTNER_X_`: the prefix of an extension's variables. */
export const variablePrefix = (name: string): string => `${name.toUpperCase().replace(/-/g, '_')}_`;

/**
 * The problems of the entries' variables: one not named `<NAME>_…`, or one the receiver reads itself
 * (`ours`), each naming the extension and the variable.
 */
export function extensionVariableProblems(
  entries: readonly Extension[],
  ours: ReadonlySet<string>,
): string[] {
  return entries.flatMap((e) =>
    Object.keys(e.config?.schema ?? {}).flatMap((variable) =>
      ours.has(variable)
        ? [`extension '${e.name}': ${variable} is a variable of the receiver`]
        : variable.startsWith(variablePrefix(e.name))
          ? []
          : [`extension '${e.name}': ${variable} must be named ${variablePrefix(e.name)}…`],
    ),
  );
}

const SECRET_NAME = /SECRET|PASSWORD|TOKEN|KEY/;

/**
 * The settings of each entry with a configuration fragment, from `env` (already validated: the
 * values are Joi's, defaults included), secrets masked.
 */
export function extensionSettings(
  entries: readonly Extension[],
  env: NodeJS.ProcessEnv,
): ExtensionSettings[] {
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  return entries.map((e) => {
    if (!e.config) return { name: e.name, settings: [] };
    const { value } = Joi.object(e.config.schema).unknown(true).validate(present, { convert: true }) as {
      value: Record<string, unknown>;
    };
    const settings = Object.keys(e.config.schema).flatMap((variable) => {
      const v = value[variable];
      if (v === undefined) return [];
      const secret = e.secrets?.includes(variable) || SECRET_NAME.test(variable);
      return [`${variable}=${secret ? '***' : String(v)}`];
    });
    return { name: e.name, settings };
  });
}

/** The start line's part: `extensions: partner (PARTNER_POINTS_PER_UNIT=1, PARTNER_API_KEY=***)`, or ''. */
export function describeExtensions(settings: readonly ExtensionSettings[] | undefined): string {
  if (!settings?.length) return '';
  return `extensions: ${settings
    .map((s) => (s.settings.length ? `${s.name} (${s.settings.join(', ')})` : s.name))
    .join(', ')}`;
}
