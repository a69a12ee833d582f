import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { MigrationInterface } from 'typeorm';

/** A TypeORM migration class (its name ends with a 13-digit timestamp, e.g. `LoyaltyTables1796700000000`). */
export type MigrationClass = new () => MigrationInterface;

/** The part of an extension entry the database reads (docs/extending.md#schema). */
export interface ExtensionSchemaEntry {
  /** The extension's name: lower-case letters, digits and `-`, e.g. `partner`. */
  name: string;
  /** Its migrations; recorded in `schema_migrations` as `<name>.<ClassName>`. */
  migrations?: readonly MigrationClass[];
  /** Its TypeORM entities (they describe its migrated tables, as ours do). */
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  entities?: readonly Function[];
}

/** The extensions' entities and migrations, added to ours in every TypeORM data source. */
export interface ExtensionSchema {
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  entities: Function[];
  migrations: MigrationClass[];
}

/** An extension's name: `partner`, `acme-bonus` (it prefixes its migrations and its variables). */
export const EXTENSION_NAME = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;

/**
 * The entities and migrations of `entries`, each migration renamed `<extension>.<ClassName>`: one
 * history table (`schema_migrations`), where an extension's names never collide with ours (ours
 * hold no `.`) nor with another extension's; TypeORM runs them all in the order of their
 * timestamps, ours included.
 * @throws Error naming the extension for a bad or repeated name, a migration whose name does not
 *   end with a 13-digit timestamp, or a timestamp used twice (ours included: the order would be
 *   undefined).
 */
export function extensionSchema(
  entries: readonly ExtensionSchemaEntry[],
  ours: readonly MigrationClass[] = [],
): ExtensionSchema {
  const problems: string[] = [];
  const seen = new Set<string>();
  const stamps = new Map<string, string>(ours.map((m) => [m.name.slice(-13), m.name]));
  const schema: ExtensionSchema = { entities: [], migrations: [] };
  for (const entry of entries) {
    if (!EXTENSION_NAME.test(entry.name))
      problems.push(
        `extension '${entry.name}': a name is lower-case letters, digits and '-' (e.g. acme-bonus)`,
      );
    else if (seen.has(entry.name)) problems.push(`extension '${entry.name}': given twice`);
    seen.add(entry.name);
    for (const migration of entry.migrations ?? []) {
      const stamp = migration.name.slice(-13);
      if (!/^\d{13}$/.test(stamp)) {
        problems.push(
          `extension '${entry.name}': migration ${migration.name} must end with a 13-digit timestamp (e.g. LoyaltyTables1796700000000)`,
        );
        continue;
      }
      const other = stamps.get(stamp);
      if (other !== undefined) {
        problems.push(`extension '${entry.name}': migration ${migration.name} has the timestamp of ${other}`);
        continue;
      }
      const name = `${entry.name}.${migration.name}`;
      stamps.set(stamp, name);
      schema.migrations.push(prefixed(migration, name));
    }
    schema.entities.push(...(entry.entities ?? []));
  }
  if (problems.length) throw new Error(`Invalid extensions:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  return schema;
}

/** `migration` recorded under `name` (TypeORM reads the instance's `name` first). */
function prefixed(migration: MigrationClass, recorded: string): MigrationClass {
  const renamed = class extends migration {
    name = recorded;
  };
  Object.defineProperty(renamed, 'name', { value: recorded });
  return renamed;
}

/** The variable naming the module of the extensions for the command-line tools. */
export const EXTENSIONS_VARIABLE = 'RECEIVER_EXTENSIONS';

/**
 * The extension entries of the module named by `RECEIVER_EXTENSIONS` (a file path, relative to
 * the working directory, or else a package specifier), read from its `extensions` export: how
 * `npm run migration:run` and the TypeORM CLI (`ormconfig.ts`: `schema:log`, `migration:show`)
 * learn of the extensions that `main({ extensions })` is given (docs/extending.md#schema).
 * @returns [] when the variable is unset.
 * @throws Error naming the variable when the module cannot be loaded or exports no array.
 */
export async function loadExtensionEntries(
  env: NodeJS.ProcessEnv = process.env,
): Promise<ExtensionSchemaEntry[]> {
  const spec = env[EXTENSIONS_VARIABLE]?.trim();
  if (!spec) return [];
  const url = existsSync(resolve(spec)) ? pathToFileURL(resolve(spec)).href : spec;
  let loaded: { extensions?: unknown };
  try {
    loaded = (await import(url)) as { extensions?: unknown };
  } catch (err) {
    throw new Error(`${EXTENSIONS_VARIABLE}: cannot load ${spec}: ${(err as Error).message}`, { cause: err });
  }
  if (!Array.isArray(loaded.extensions))
    throw new Error(`${EXTENSIONS_VARIABLE}: ${spec} exports no 'extensions' array`);
  return (loaded.extensions as unknown[]).filter(
    (e): e is ExtensionSchemaEntry =>
      typeof e === 'object' && e !== null && typeof (e as { name?: unknown }).name === 'string',
  );
}
