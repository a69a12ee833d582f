import { DataSource } from 'typeorm';
import { MIGRATIONS } from './migrations/index.js';
import { buildDataSourceOptions } from './src/platform/database/data-source-options.js';
import { extensionSchema, loadExtensionEntries } from './src/platform/database/extension-schema.js';

/**
 * The TypeORM `DataSource` of the TypeORM CLI (`npm run typeorm -- schema:log`, `migration:show`,
 * `migration:generate`, see docs/schema-changes.md), with the app's options. Needs `DATABASE_URL`
 * in the environment (`.env` is not read); `npm run migration:run` also handles the embedded server.
 * With `RECEIVER_EXTENSIONS` (the module exporting the extension entries, docs/extending.md#schema)
 * the extensions' entities and migrations are included.
 */
// DATABASE_DIRECT_URL first: migrations need a session, not a transaction-mode pooler.
const url = process.env.DATABASE_DIRECT_URL || process.env.DATABASE_URL;
if (!url) {
  // The CLI exits 1 without a word on an error thrown while it loads this file: say why here.
  console.error(
    'DATABASE_URL is required for the TypeORM CLI (npm run migration:run starts the embedded server)',
  );
  process.exit(1);
}
let extensions;
try {
  extensions = extensionSchema(await loadExtensionEntries(), MIGRATIONS);
} catch (err) {
  console.error((err as Error).message);
  process.exit(1);
}
export default new DataSource(buildDataSourceOptions(url, undefined, undefined, extensions));
