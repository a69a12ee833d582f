import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { buildDataSourceOptions } from '../../src/platform/database/data-source-options.js';
import { createTestDatabase, testServer, withClient, withDatabase } from '../support/database.js';

// The entities describe exactly the schema the migrations build (docs/schema-changes.md), so
// `npm run typeorm -- migration:generate` writes only the change at hand, never a drop of a CHECK,
// foreign key, default or index. TypeORM matches checks, indexes and foreign keys by name only,
// so the second test also compares the definitions themselves, through PostgreSQL's catalog, with
// the schema the entities alone build (`synchronize`, only ever on a throw-away database here).

/** TypeORM's `DataSource` on `url` with the app's entities and migrations, initialised. */
function open(url: string): Promise<DataSource> {
  return new DataSource(buildDataSourceOptions(url, undefined, 2)).initialize();
}

/**
 * Every table of the public schema but TypeORM's `schema_migrations`, as `table column|constraint|
 * index name` → definition as PostgreSQL prints it (`format_type`, `pg_get_constraintdef`,
 * `pg_get_indexdef`). Column order is left out; a numeric default is printed without the cast
 * TypeORM's quoted literal gets (`'0'::numeric` → `0`, the same value). A partitioned table counts
 * as a table (its partitions, which the retention job creates and drops, are left out) and its
 * indexes are printed without the `ONLY` of a partitioned table's index (docs/retention.md).
 */
async function describeSchema(url: string): Promise<Record<string, string>> {
  const { rows } = await withClient(url, (c: pg.Client) =>
    c.query<{ key: string; definition: string }>(`
      SELECT t.relname || ' column ' || a.attname AS key,
             format_type(a.atttypid, a.atttypmod) || CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END
               || COALESCE(' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid), '') AS definition
        FROM pg_class t
        JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum > 0 AND NOT a.attisdropped
        LEFT JOIN pg_attrdef d ON d.adrelid = t.oid AND d.adnum = a.attnum
       WHERE t.relnamespace = 'public'::regnamespace AND t.relkind IN ('r', 'p') AND NOT t.relispartition
         AND t.relname <> 'schema_migrations'
      UNION ALL
      SELECT t.relname || ' constraint ' || k.conname, pg_get_constraintdef(k.oid)
        FROM pg_constraint k JOIN pg_class t ON t.oid = k.conrelid
       WHERE t.relnamespace = 'public'::regnamespace AND NOT t.relispartition AND t.relname <> 'schema_migrations'
      UNION ALL
      SELECT t.relname || ' index ' || i.relname, replace(pg_get_indexdef(i.oid), ' ON ONLY ', ' ON ')
        FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
       WHERE t.relnamespace = 'public'::regnamespace AND NOT t.relispartition AND t.relname <> 'schema_migrations'
      ORDER BY 1`),
  );
  return Object.fromEntries(
    rows.map((r) => [r.key, r.definition.replace(/'(-?\d+(?:\.\d+)?)'::numeric\b/g, '$1')]),
  );
}

describe('entities and migrations', () => {
  it('TypeORM has nothing to change on a freshly migrated database (schema:log is up to date)', async () => {
    const db = await createTestDatabase();
    const dataSource = await open(db.url);
    try {
      const { upQueries } = await dataSource.driver.createSchemaBuilder().log();
      // On failure these are the statements `npm run typeorm -- schema:log` prints: make the
      // entity say what the migrations create (or add the migration), see docs/schema-changes.md.
      expect(upQueries.map((q) => q.query)).toEqual([]);
    } finally {
      await dataSource.destroy();
      await db.drop();
    }
  });

  it('the entities alone build the tables, columns, constraints and indexes the migrations build', async () => {
    const migrated = await createTestDatabase();
    const { adminUrl } = testServer();
    const name = `t_${randomBytes(6).toString('hex')}`;
    await withClient(adminUrl, (c) => c.query(`CREATE DATABASE ${name} TEMPLATE template0`));
    const fromEntitiesUrl = withDatabase(adminUrl, name);
    try {
      const dataSource = await open(fromEntitiesUrl);
      try {
        await dataSource.synchronize();
      } finally {
        await dataSource.destroy();
      }
      const expected = await describeSchema(migrated.url);
      expect(Object.keys(expected).length).toBeGreaterThan(100);
      expect(await describeSchema(fromEntitiesUrl)).toEqual(expected);
    } finally {
      await withClient(adminUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
      await migrated.drop();
    }
  });
});
