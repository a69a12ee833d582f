import pg from 'pg';
import { Queryable, testServer, withClient } from './database.js';

// Faults injected into the test database, and the receiver sessions they hold up: what the tests of
// "nothing is kept when a batch fails" (CONTRACT §4 step 6, §5) and of concurrency are built on.

/**
 * The answer `true` to `SELECT pg_try_advisory_lock(…)` on the wire: a DataRow of one column, one
 * byte, `t` (a fault proxy's `answerMarker`: the lock was taken, the client never hears it).
 */
export const LOCKED_TRUE = 'D\u0000\u0000\u0000\u000b\u0000\u0001\u0000\u0000\u0000\u0001t';

/**
 * Creates a BEFORE INSERT row trigger `name` on `table` running `body` (PL/pgSQL with `NEW`, e.g.
 * `IF NEW.coupon_code = 'X' THEN RAISE EXCEPTION '…' USING ERRCODE = '40P01'; END IF;`), only for
 * rows matching `when` (an SQL condition on `NEW`) when given; with `statement`, a statement
 * trigger instead, which fires for every INSERT statement on `table`, even one inserting no row.
 * @returns a function that drops the trigger and its function again (idempotent).
 */
export async function injectTrigger(
  db: Queryable,
  name: string,
  table: string,
  body: string,
  { when, statement = false }: { when?: string; statement?: boolean } = {},
): Promise<() => Promise<void>> {
  await db.query(
    `CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ${body} RETURN NEW; END $$`,
  );
  await db.query(
    `CREATE TRIGGER ${name} BEFORE INSERT ON ${table} FOR EACH ${statement ? 'STATEMENT' : 'ROW'} ${when ? `WHEN (${when}) ` : ''}EXECUTE FUNCTION ${name}()`,
  );
  return async () => {
    await db.query(`DROP TRIGGER IF EXISTS ${name} ON ${table}`);
    await db.query(`DROP FUNCTION IF EXISTS ${name}()`);
  };
}

/**
 * Runs `fn` while a transaction on a connection of `pool` holds the lock `lockSql` takes (e.g.
 * `SELECT … FOR UPDATE`, `LOCK TABLE …`), then rolls that transaction back, also when `fn` throws.
 * @returns what `fn` returns.
 */
export async function whileLocked<T>(pool: pg.Pool, lockSql: string, fn: () => Promise<T>): Promise<T> {
  const holder = await pool.connect();
  try {
    await holder.query('BEGIN');
    await holder.query(lockSql);
    return await fn();
  } finally {
    await holder.query('ROLLBACK');
    holder.release();
  }
}

/**
 * Runs `fn` while the database of `databaseUrl` is unavailable (new connections refused, open ones
 * terminated, as in an outage), then allows connections again, also when `fn` throws.
 * @returns what `fn` returns.
 */
export async function whileDatabaseDown<T>(databaseUrl: string, fn: () => Promise<T>): Promise<T> {
  const { adminUrl } = testServer();
  const name = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
  await withClient(adminUrl, async (c) => {
    await c.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
    await c.query(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
      [name],
    );
  });
  try {
    return await fn();
  } finally {
    await withClient(adminUrl, (c) => c.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`));
  }
}

/**
 * The receiver's sessions (application_name `settlement-receiver`) on the current database that wait
 * for a lock right now: all of them, those whose statement matches `statement` (SQL ILIKE pattern),
 * or with `writing` only those whose transaction has already written rows.
 */
export async function lockWaiters(
  db: Queryable,
  { statement, writing = false }: { statement?: string; writing?: boolean } = {},
): Promise<{ pid: number; query: string }[]> {
  const { rows } = await db.query<{ pid: number; query: string }>(
    `SELECT pid, query FROM pg_stat_activity
      WHERE datname = current_database() AND application_name = 'settlement-receiver'
        AND wait_event_type = 'Lock' AND query ILIKE $1
        ${writing ? 'AND backend_xid IS NOT NULL' : ''}`,
    [statement ?? '%'],
  );
  return rows;
}
