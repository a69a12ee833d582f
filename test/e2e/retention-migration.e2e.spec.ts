import pg from 'pg';
import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../migrations/index.js';
import { RetentionPartitions1796600000000 } from '../../migrations/1796600000000-RetentionPartitions.js';
import { buildDataSourceOptions } from '../../src/platform/database/data-source-options.js';
import { createDatabaseMigratedTo, withClient } from '../support/database.js';

// Issue 32: the migration to monthly partitions keeps every row of a populated database: the
// partitioned tables hold the same rows (counts, sums, a hash of every row's text) before and
// after, the legacy rows in one partition, and new rows land in the months after it.

const BEFORE = MIGRATIONS.indexOf(RetentionPartitions1796600000000);
const PARTITIONED = {
  coupon_snapshots: 'received_at',
  delivery_attempts: 'received_at',
  wallet_delivery_attempts: 'started_at',
  event_delivery_attempts: 'started_at',
} as const;

/** Fourteen months of back-dated traffic: batches, snapshots, attempts, outbox rows and their attempts. */
const POPULATED = `
  INSERT INTO accounts (id, kind, currency, balance) VALUES ('p-mig', 'player', 'EUR', 0), ('house:EUR', 'house', 'EUR', 0);
  INSERT INTO coupons (coupon_code) SELECT 'MIG' || g FROM generate_series(1, 50) g;
  INSERT INTO callback_batches (batch_id, payload_hash, coupon_count, payload, received_at)
    SELECT 'b' || g, lpad(to_hex(g), 64, '0'), 1, convert_to('{"batchId":"b' || g || '"}', 'UTF8'), now() - (g - 1) * interval '9 days'
    FROM generate_series(1, 50) g;
  INSERT INTO coupon_snapshots (coupon_code, batch_id, status, real_win, applied, transition, generation, operations, payload, received_at)
    SELECT 'MIG' || g, 'b' || g, 2, g * 1.25, true, 'settled', 0, '[]', jsonb_build_object('n', g), now() - (g - 1) * interval '9 days'
    FROM generate_series(1, 50) g;
  INSERT INTO delivery_attempts (batch_id, request_id, received_at, outcome, http_status, coupon_count, duration_ms, payload_hash)
    SELECT 'b' || (g % 50 + 1), 'r' || g, now() - (g - 1) * interval '1 day', 'processed', 200, 1, g, lpad(to_hex(g % 50 + 1), 64, '0')
    FROM generate_series(1, 420) g;
  INSERT INTO financial_operations (id, operation_key, type, coupon_code, generation, account_id, amount, currency)
    SELECT g, 'MIG' || g || ':0:final_credit', 'final_credit', 'MIG' || g, 0, 'p-mig', g, 'EUR' FROM generate_series(1, 30) g;
  INSERT INTO wallet_outbox (operation_id, operation_key, account_id, status, delivered_at, created_at)
    SELECT g, 'MIG' || g || ':0:final_credit', 'p-mig', 'delivered', now() - (g - 1) * interval '12 days', now() - (g - 1) * interval '12 days'
    FROM generate_series(1, 30) g;
  INSERT INTO wallet_delivery_attempts (outbox_id, attempt, request_id, connector, started_at, duration_ms, outcome, http_status)
    SELECT o.id, a, 'w' || o.id || '-' || a, 'http', o.created_at + a * interval '1 minute', a * 7, 'delivered', 200
    FROM wallet_outbox o CROSS JOIN generate_series(1, 3) a;
  INSERT INTO event_outbox (publisher, operation_id, operation_key, account_id, status, delivered_at, created_at)
    SELECT 'rabbitmq', g, 'MIG' || g || ':0:final_credit', 'p-mig', 'delivered', now() - (g - 1) * interval '12 days', now() - (g - 1) * interval '12 days'
    FROM generate_series(1, 30) g;
  INSERT INTO event_delivery_attempts (outbox_id, attempt, request_id, connector, started_at, duration_ms, outcome)
    SELECT o.id, 1, 'e' || o.id, 'rabbitmq', o.created_at, 3, 'delivered' FROM event_outbox o;`;

/** Per partitioned table: rows, a sum of a number column, a sum of every row's text hash, the oldest and newest time. */
async function fingerprint(c: pg.Client): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const [table, column] of Object.entries(PARTITIONED)) {
    const { rows } = await c.query(
      `SELECT count(*)::int AS rows, sum(id)::text AS ids, sum(hashtext(t::text)::bigint)::text AS content,
              min(${column}) AS oldest, max(${column}) AS newest
         FROM ${table} t`,
    );
    out[table] = rows[0];
  }
  const { rows } = await c.query(
    `SELECT (SELECT sum(real_win)::text FROM coupon_snapshots) AS wins,
            (SELECT sum(duration_ms)::int FROM delivery_attempts) AS durations,
            (SELECT count(*)::int FROM callback_batches) AS batches`,
  );
  out.sums = rows[0];
  return out;
}

describe('migration RetentionPartitions (issue 32) on a populated database', () => {
  let url: string;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    ({ url, drop } = await createDatabaseMigratedTo(BEFORE));
    await withClient(url, (c) => c.query(POPULATED));
  });

  afterAll(() => drop());

  it('keeps every row (counts, sums, content), partitions monthly ahead, and takes new rows', async () => {
    const before = await withClient(url, fingerprint);
    expect(before.sums).toEqual({ wins: '1593.75000000', durations: 88410, batches: 50 });
    expect((before.delivery_attempts as { rows: number }).rows).toBe(420);
    expect((before.wallet_delivery_attempts as { rows: number }).rows).toBe(90);

    const ds = await new DataSource({
      ...buildDataSourceOptions(url, undefined, 2),
      migrations: MIGRATIONS.slice(0, BEFORE + 1),
    }).initialize();
    try {
      await ds.runMigrations({ transaction: 'each' });
    } finally {
      await ds.destroy();
    }

    expect(await withClient(url, fingerprint)).toEqual(before);
    await withClient(url, async (c) => {
      for (const table of Object.keys(PARTITIONED)) {
        const { rows } = await c.query<{ name: string; bound: string; rows: number }>(
          `SELECT p.relname AS name, pg_get_expr(p.relpartbound, p.oid) AS bound
             FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhrelid
            WHERE i.inhparent = $1::regclass ORDER BY p.relname`,
          [table],
        );
        // The legacy rows in one partition up to the end of the current month, then 3 months ahead.
        expect(rows.map((r) => r.name)).toEqual([`${table}_legacy`, ...monthsAhead(table, 3)]);
        expect(rows[0].bound).toMatch(/^FOR VALUES FROM \(MINVALUE\) TO \('/);
        const { rows: kind } = await c.query(`SELECT relkind FROM pg_class WHERE oid = $1::regclass`, [
          table,
        ]);
        expect(kind[0].relkind).toBe('p');
      }
      // A new row of next month lands in its own partition; ids continue from the same sequence.
      const { rows } = await c.query(
        `INSERT INTO delivery_attempts (batch_id, received_at, outcome, http_status, duration_ms)
         VALUES ('b1', date_trunc('month', now()) + interval '1 month 1 day', 'processed', 200, 1)
         RETURNING id::int, tableoid::regclass::text AS part`,
      );
      expect(rows[0]).toEqual({ id: 421, part: monthsAhead('delivery_attempts', 1)[0] });
      // The raw body is nullable only together with the time it expired.
      await expect(
        c.query(`UPDATE callback_batches SET payload = NULL WHERE batch_id = 'b1'`),
      ).rejects.toMatchObject({
        code: '23514',
      });
    });
  });
});

/** `<table>_pYYYYMM` of the `n` months after the current one (UTC). */
function monthsAhead(table: string, n: number): string[] {
  const now = new Date();
  return Array.from({ length: n }, (_, i) => {
    const d = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1 + i, 1));
    return `${table}_p${d.getUTCFullYear()}${String(d.getUTCMonth() + 1).padStart(2, '0')}`;
  });
}
