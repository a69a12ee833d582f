import { DataSource } from 'typeorm';
import { buildDataSourceOptions } from './src/database/data-source-options.js';

/**
 * The TypeORM `DataSource` of the migration CLI (`npm run typeorm -- migration:show`), with the
 * app's options. Needs `DATABASE_URL`; `npm run migration:run` also handles the embedded server.
 */
const url = process.env.DATABASE_URL;
if (!url)
  throw new Error(
    'DATABASE_URL is required for the TypeORM CLI (npm run migration:run starts the embedded server)',
  );
export default new DataSource(buildDataSourceOptions(url));
