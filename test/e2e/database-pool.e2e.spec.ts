import pg from 'pg';
import { buildDataSourceOptions } from '../../src/platform/database/data-source-options.js';
import { createTestDatabase } from '../support/database.js';

// Issue 40: a burst after a quiet spell found node-postgres' pool emptied (idle connections are
// closed after 10 s) and paid for new connections, their catalog caches and prepared statements
// under load: 2.6 s answers at its start (bench/RESULTS.md#issue-40).

describe("the receiver's connection pool keeps what it opened", () => {
  let db: { url: string; drop: () => Promise<void> };
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('idle connections stay open past the idle timeout, up to DB_POOL_SIZE', async () => {
    const options = buildDataSourceOptions(db.url, undefined, 4) as { extra: pg.PoolConfig };
    expect(options.extra).toMatchObject({ max: 4, min: 4 });
    // The receiver's pool settings, with an idle timeout of 50 ms instead of node-postgres' 10 s.
    const { Client: _client, ...settings } = options.extra as pg.PoolConfig & { Client?: unknown };
    const pool = new pg.Pool({ ...settings, connectionString: db.url, idleTimeoutMillis: 50 });
    try {
      const clients = await Promise.all([1, 2, 3].map(() => pool.connect()));
      for (const c of clients) c.release();
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect({ total: pool.totalCount, idle: pool.idleCount }).toEqual({ total: 3, idle: 3 });
    } finally {
      await pool.end();
    }
  });
});
