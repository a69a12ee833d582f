import { DataSource } from 'typeorm';
import type { Tx } from './transaction.js';

/** Advisory lock key that serialises migrations of replicas starting together. */
export const MIGRATION_LOCK_KEY = 727_001;

/**
 * Runs pending migrations while holding a session-level PostgreSQL advisory lock, so replicas
 * starting at once migrate one after the other (the later ones find nothing to do).
 * @returns the names of the migrations applied by this call.
 */
export async function runMigrationsLocked(
  dataSource: DataSource,
  logger: { log(message: string): void } = { log: () => undefined },
): Promise<string[]> {
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.query('SET lock_timeout = 0');
    await runner.query('SET statement_timeout = 0');
    await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    try {
      const applied = await dataSource.runMigrations({ transaction: 'each' });
      if (applied.length) logger.log(`applied ${applied.map((m) => m.name).join(', ')}`);
      return applied.map((m) => m.name);
    } finally {
      await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
      // Back to the connection's own timeouts before it returns to the pool.
      await runner.query('RESET lock_timeout');
      await runner.query('RESET statement_timeout');
    }
  } finally {
    await runner.release();
  }
}

/** Names of the migrations recorded as applied in `schema_migrations`. */
export async function appliedMigrations(tx: Tx): Promise<Set<string>> {
  const { rows } = await tx.query<{ name: string }>('SELECT name FROM schema_migrations');
  return new Set(rows.map((r) => r.name));
}
