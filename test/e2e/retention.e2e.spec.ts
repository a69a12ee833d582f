import { createHash, createHmac } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { verifySignature } from '../../src/intake/callbacks/signature.guard.js';
import { reconcileWithDatabase } from '../../src/outbound/wallet/wallet-reconciler.js';
import {
  archiverOf,
  DirectoryArchiveConnector,
  verifyArchives,
} from '../../src/operations/retention/archive.js';
import { loadRetentionConfig } from '../../src/operations/retention/retention.config.js';
import { RetentionEngine } from '../../src/operations/retention/retention-engine.js';
import {
  ensurePartitions,
  monthStart,
  partitionName,
} from '../../src/operations/retention/retention-partitions.js';
import type { SqlQueryable } from '../../src/platform/database/sql-queryable.js';
import { formatRetentionReport } from '../../src/operations/retention/retention-report.js';
import type { ClassReport, RetentionReport } from '../../src/operations/retention/retention-report.js';
import { createTestDatabase } from '../support/database.js';

// Issue 32 (docs/retention.md): the policy's report says exactly what an apply removes (rows per
// partition and per bounded table), protected rows survive an expiry, and a second apply finds
// nothing. Back-dated rows in partitions created for their months.

const DAY = 86_400_000;
const now = new Date();
const ago = (days: number) => new Date(now.getTime() - days * DAY);
const part = (table: string, days: number) => partitionName(table, monthStart(ago(days)));

/** Rows of each kind, back-dated (see the expectations below). */
async function populate(c: pg.Client): Promise<void> {
  await c.query(`
    INSERT INTO accounts (id, kind, currency, balance) VALUES ('p-ret', 'player', 'EUR', 0);
    INSERT INTO coupons (coupon_code, generation_settled, settled_amount) VALUES ('C1', true, 0), ('C2', true, 0), ('C3', true, 0);
    INSERT INTO coupons (coupon_code, needs_review, review_reason) VALUES ('CR', true, 'amount_precision');`);
  const batch = (id: string, days: number) =>
    c.query(
      `INSERT INTO callback_batches (batch_id, payload_hash, coupon_count, payload, received_at)
       VALUES ($1, encode(sha256(convert_to(repeat('x', 100), 'UTF8')), 'hex'), 1, convert_to(repeat('x', 100), 'UTF8'), $2)`,
      [id, ago(days)],
    );
  await batch('b-a', 500);
  await batch('b-b', 180);
  await batch('b-c', 240);
  await batch('b-d', 5);
  const snapshot = (code: string, batchId: string, days: number) =>
    c.query(
      `INSERT INTO coupon_snapshots (coupon_code, batch_id, status, applied, transition, generation, payload, received_at)
       VALUES ($1, $2, 2, true, 'settled', 0, '{"n":1}', $3)`,
      [code, batchId, ago(days)],
    );
  await snapshot('C1', 'b-b', 180);
  await snapshot('C2', 'b-b', 180);
  await snapshot('CR', 'b-c', 240);
  await snapshot('C3', 'b-d', 5);
  for (const [n, days] of [
    [4, 500],
    [3, 200],
    [2, 1],
  ])
    await c.query(
      `INSERT INTO delivery_attempts (batch_id, received_at, outcome, http_status, duration_ms)
       SELECT 'b-a', $2, 'processed', 200, g FROM generate_series(1, $1::int) g`,
      [n, ago(days)],
    );
  await c.query(
    `INSERT INTO financial_operations (id, operation_key, type, coupon_code, generation, account_id, amount, currency, created_at)
     VALUES (1, 'C1:0:final_credit', 'final_credit', 'C1', 0, 'p-ret', 5, 'EUR', $1),
            (2, 'C2:0:final_credit', 'final_credit', 'C2', 0, 'p-ret', 7, 'EUR', $2)`,
    [ago(500), ago(460)],
  );
  await c.query(
    `INSERT INTO wallet_outbox (id, operation_id, operation_key, account_id, status, body, delivered_at, created_at)
     VALUES (1, 1, 'C1:0:final_credit', 'p-ret', 'delivered', '\\x7b7d', $1, $1),
            (2, 2, 'C2:0:final_credit', 'p-ret', 'pending', '\\x7b7d', NULL, $2)`,
    [ago(500), ago(460)],
  );
  await c.query(
    `INSERT INTO wallet_delivery_attempts (outbox_id, attempt, request_id, connector, started_at, duration_ms, outcome)
     VALUES (1, 1, 'w1', 'http', $1, 3, 'retry'), (1, 2, 'w2', 'http', $1, 3, 'delivered'), (2, 1, 'w3', 'http', $2, 3, 'retry')`,
    [ago(500), ago(460)],
  );
  await c.query(
    `INSERT INTO callback_inbox (batch_id, payload_hash, coupon_count, coupon_codes, payload, status, outcome, received_at, finished_at)
     VALUES ('i-done', encode(sha256('\\x7b7d'::bytea), 'hex'), 1, '{C1}', '\\x7b7d', 'done', 'processed', $1, $1),
            ('i-kept', encode(sha256('\\x7b7d'::bytea), 'hex'), 1, '{C2}', '\\x7b7d', 'done', 'conflict', $1, $1),
            ('i-new', encode(sha256('\\x7b7d'::bytea), 'hex'), 1, '{C3}', '\\x7b7d', 'done', 'processed', $2, $2)`,
    [ago(200), ago(3)],
  );
  await c.query(
    `INSERT INTO quarantined_bodies (batch_id, reason, http_status, body, payload_hash, inbox_id, replayed_at, received_at)
     SELECT 'i-kept', 'conflict', 409, '\\x7b7d', repeat('c', 64), id, now(), $1 FROM callback_inbox WHERE batch_id = 'i-kept'`,
    [ago(200)],
  );
}

/** Per class: rows removed (would be) per item, and the kept items with why (partitions within the window left out). */
function summary(report: RetentionReport): Record<string, { remove: string[]; keep: string[] }> {
  return Object.fromEntries(
    report.classes.map((c: ClassReport) => [
      c.dataClass,
      {
        remove: c.remove.filter((i) => i.rows > 0).map((i) => `${i.action} ${i.target}: ${i.rows}`),
        keep: c.keep
          .filter((i) => !/^\d+ partitions/.test(i.why ?? ''))
          .map((i) => `${i.target}: ${i.rows} (${i.why})`),
      },
    ]),
  );
}

/**
 * A migrated test database for the describe block, with the partitions from `from`'s month to
 * `ahead` months after now, and a client on it (read `t.db` and `t.client` inside the tests).
 */
function usePartitionedDatabase(ahead: number, from: Date) {
  const t = {} as { db: { url: string; drop: () => Promise<void> }; client: pg.Client };
  beforeAll(async () => {
    t.db = await createTestDatabase();
    t.client = new pg.Client({ connectionString: t.db.url });
    await t.client.connect();
    await ensurePartitions(t.client, now, ahead, from);
  });
  afterAll(async () => {
    await t.client.end();
    await t.db.drop();
  });
  return t;
}

describe('the retention policy (npm run retention)', () => {
  let db: { url: string; drop: () => Promise<void> };
  let client: pg.Client;

  beforeAll(async () => {
    db = await createTestDatabase();
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
    await ensurePartitions(client, now, 3, ago(520));
    await populate(client);
  });

  afterAll(async () => {
    await client.end();
    await db.drop();
  });

  it('counts expiring partitions without parallel workers, then gives the session its setting back', async () => {
    const seen: string[] = [];
    const watched: SqlQueryable = {
      query: async (text: string, values?: unknown[]) => {
        if (text.startsWith('SELECT count(*) FROM'))
          seen.push(
            (await client.query('SHOW max_parallel_workers_per_gather')).rows[0]
              .max_parallel_workers_per_gather,
          );
        return client.query(text, values);
      },
    } as SqlQueryable;
    const before = (await client.query('SHOW max_parallel_workers_per_gather')).rows[0];
    await new RetentionEngine(watched, loadRetentionConfig({})).report(now);
    // Every expiring partition is counted (how many depends on today's date: months since 520 days ago).
    expect(seen.length).toBeGreaterThanOrEqual(5);
    expect(seen.filter((setting) => setting !== '0')).toEqual([]);
    expect((await client.query('SHOW max_parallel_workers_per_gather')).rows[0]).toEqual(before);
  });

  it('reports what it removes, removes exactly that, keeps protected rows, then finds nothing', async () => {
    const engine = new RetentionEngine(client, loadRetentionConfig({}));
    const report = await engine.report(now);
    const expected = {
      batch_ids: { remove: ['delete callback_batches: 1'], keep: [] },
      raw_bodies: {
        remove: [
          'null body wallet_outbox.body: 1',
          'null body callback_batches.payload: 3',
          'delete callback_inbox: 1',
        ],
        keep: ['callback_inbox: 1 (protected: inbox rows a quarantined body refers to)'],
      },
      snapshots: {
        remove: [`drop partition ${part('coupon_snapshots', 180)}: 2`],
        keep: [
          `${part('coupon_snapshots', 240)}: 1 (holds 1 protected rows: snapshots of coupons that need review, whose recalculation is open, or unregistered with decided operations)`,
        ],
      },
      delivery_attempts: { remove: [`drop partition ${part('delivery_attempts', 500)}: 4`], keep: [] },
      outbox: {
        remove: [`drop partition ${part('wallet_delivery_attempts', 500)}: 2`, 'delete wallet_outbox: 1'],
        keep: [
          `${part('wallet_delivery_attempts', 460)}: 1 (holds 1 protected rows: attempts of pending or parked outbox rows)`,
        ],
      },
    };
    expect(summary(report)).toEqual(expected);
    expect(formatRetentionReport(report)).toContain('would remove 4 rows');
    expect(formatRetentionReport(report)).toContain(
      '\nkept forever: financial_operations, ledger_entries, accounts',
    );

    const applied = await engine.apply(now);
    expect(summary(applied)).toEqual(expected);
    // What is left, as it is (issue 38, item 12): the oldest attempt's own time, not its partition's
    // lower bound (the 1st of its month); the kept partitions' rows counted, never analysed yet
    // (PostgreSQL's estimate would say 0).
    const attempts = applied.classes.find((c) => c.dataClass === 'delivery_attempts')!;
    expect(attempts.oldest).toBe(ago(200).toISOString());
    expect(attempts.keep.map((i) => [i.target, i.rows, i.estimated])).toEqual([
      ['delivery_attempts', 5, false],
    ]);
    expect(formatRetentionReport(applied)).toContain('\n  = keep delivery_attempts: 5 rows, ');
    for (const [i, c] of report.classes.entries()) {
      expect(applied.classes[i].removeRows).toBe(c.removeRows);
      // Bytes of dropped partitions and emptied bodies as reported before.
      expect(applied.classes[i].remove.map((r) => r.bytes)).toEqual(c.remove.map((r) => r.bytes));
    }

    const { rows } = await client.query(`
      SELECT (SELECT array_agg(coupon_code ORDER BY coupon_code) FROM coupon_snapshots) AS snapshots,
             (SELECT count(*)::int FROM delivery_attempts) AS attempts,
             (SELECT array_agg(request_id ORDER BY request_id) FROM wallet_delivery_attempts) AS wallet_attempts,
             (SELECT array_agg(id::int || ':' || status || ':' || (body IS NOT NULL)) FROM wallet_outbox) AS outbox,
             (SELECT array_agg(batch_id || ':' || (payload IS NOT NULL) || ':' || (payload_expired_at IS NOT NULL) ORDER BY batch_id)
                FROM callback_batches) AS batches,
             (SELECT array_agg(batch_id ORDER BY batch_id) FROM callback_inbox) AS inbox,
             (SELECT array_agg(data_class ORDER BY data_class) FROM retention_horizons) AS horizons`);
    expect(rows[0]).toEqual({
      snapshots: ['C3', 'CR'],
      attempts: 5,
      wallet_attempts: ['w3'],
      outbox: ['2:pending:true'],
      batches: ['b-b:false:true', 'b-c:false:true', 'b-d:true:false'],
      inbox: ['i-kept', 'i-new'],
      horizons: ['batch_ids', 'delivery_attempts', 'outbox', 'raw_bodies', 'snapshots'],
    });

    const again = await engine.apply(now);
    expect(again.classes.map((c) => c.removeRows)).toEqual([0, 0, 0, 0, 0]);
  });

  it('wallet:reconcile counts a transaction whose outbox row expired as no difference', async () => {
    // After the first test's apply: wallet_outbox row 1 (C1's credit, 500 days old) was deleted.
    const tx = (id: string, amount: string) => ({
      transactionId: id,
      direction: 'credit',
      type: 'final_credit',
      accountId: 'p-ret',
      amount,
      currency: 'EUR',
    });
    const report = await reconcileWithDatabase(
      client,
      async () => [tx('C1:0:final_credit', '5.00'), tx('ZZ:0:final_credit', '1.00')],
      (amount) => amount.toFixed(2),
    );
    expect(report.differences.map((d) => `${d.kind} ${d.subject}`)).toEqual([
      'unknown_to_ledger ZZ:0:final_credit',
    ]);
  });

  it('creates the partitions ahead once, filling any month missing up to now', async () => {
    const created = await ensurePartitions(client, now, 5);
    expect(created).toEqual(
      [
        'coupon_snapshots',
        'delivery_attempts',
        'wallet_delivery_attempts',
        'event_delivery_attempts',
      ].flatMap((t) => [4, 5].map((m) => partitionName(t, monthStart(now, m)))),
    );
    expect(await ensurePartitions(client, now, 5)).toEqual([]);
  });
});

describe('archive before drop (RETENTION_ARCHIVE)', () => {
  let db: { url: string; drop: () => Promise<void> };
  let client: pg.Client;
  let dir: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
    dir = mkdtempSync(join(tmpdir(), 'retention-archive-'));
    await ensurePartitions(client, now, 3, ago(520));
    await populate(client);
  });

  afterAll(async () => {
    await client.end();
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes each expiring partition and batch of bodies, complete and verifiable, before they go', async () => {
    // A raw body exactly as SportAPI signed it.
    const secret = 'archive-secret';
    const body = Buffer.from('{"batchId":"b-signed","coupons":[{"code":"C1","amount":"12.50"}]}\n');
    const signature = createHmac('sha256', secret).update(body).digest('hex');
    await client.query(
      `INSERT INTO callback_batches (batch_id, payload_hash, coupon_count, payload, received_at) VALUES ('b-signed', $1, 1, $2, $3)`,
      [createHash('sha256').update(body).digest('hex'), body, ago(300)],
    );
    const config = loadRetentionConfig({
      RETENTION_ARCHIVE: 'snapshots,delivery_attempts,raw_bodies',
      RETENTION_ARCHIVE_DIR: dir,
    });
    const applied = await new RetentionEngine(client, config, {
      archiver: archiverOf(new DirectoryArchiveConnector(dir)),
    }).apply(now);

    const checks = await verifyArchives(dir);
    expect(checks.filter((c) => !c.ok)).toEqual([]);
    const rowsOf = (prefix: string) =>
      checks.filter((c) => c.manifest.startsWith(prefix)).reduce((n, c) => n + c.rows, 0);
    // Every row removed of an archived class is in an archive: snapshots 2, attempts 4, bodies 4.
    expect(rowsOf(part('coupon_snapshots', 180))).toBe(2);
    expect(rowsOf(part('delivery_attempts', 500))).toBe(4);
    expect(rowsOf('callback_batches.payload-')).toBe(4);
    expect(rowsOf('callback_inbox-')).toBe(1);
    expect(rowsOf('wallet_outbox.body-')).toBe(1);
    const raw = applied.classes.find((c) => c.dataClass === 'raw_bodies')!;
    expect(raw.removeRows).toBe(6);
    expect(checks.find((c) => c.manifest.startsWith('callback_batches.payload-'))?.bodiesVerified).toBe(4);
    // The outbox class is not archived: its partition was dropped without a file.
    expect(readdirSync(dir).some((n) => n.startsWith('wallet_delivery_attempts'))).toBe(false);

    // The archived body is the signed bytes: it verifies against the webhook secret.
    const { rows } = await client.query(
      `SELECT payload IS NULL AS gone FROM callback_batches WHERE batch_id = 'b-signed'`,
    );
    expect(rows[0].gone).toBe(true);
    const { createGunzip } = await import('node:zlib');
    const { createReadStream } = await import('node:fs');
    const { createInterface } = await import('node:readline');
    const archive = checks.find((c) => c.manifest.startsWith('callback_batches.payload-'))!;
    const file = join(dir, archive.manifest.replace('manifest.json', 'rows.jsonl.gz'));
    let archived: Buffer | undefined;
    for await (const line of createInterface({ input: createReadStream(file).pipe(createGunzip()) })) {
      const row = JSON.parse(line) as { batch_id: string; payload: string };
      if (row.batch_id === 'b-signed') archived = Buffer.from(row.payload.slice(2), 'hex');
    }
    expect(archived).toEqual(body);
    expect(verifySignature(archived!, signature, [secret])).toBe(true);

    // A damaged archive is found incomplete.
    writeFileSync(file, Buffer.from('not gzip'));
    const again = await verifyArchives(dir);
    expect(again.filter((c) => !c.ok).map((c) => c.manifest)).toEqual([archive.manifest]);
  });
});

describe('a detach interrupted half way', () => {
  const t = usePartitionedDatabase(3, ago(520));

  it('is finished (FINALIZE) and dropped by the next apply', async () => {
    const { db, client } = t;
    const old = part('delivery_attempts', 500);
    await client.query(
      `INSERT INTO delivery_attempts (batch_id, received_at, outcome, http_status, duration_ms) VALUES ('x', $1, 'processed', 200, 1)`,
      [ago(500)],
    );
    // A transaction with a snapshot that saw the table keeps DETACH … CONCURRENTLY waiting; cancelled
    // there, the partition stays "detach pending".
    const reader = new pg.Client({ connectionString: db.url });
    const detacher = new pg.Client({ connectionString: db.url });
    await reader.connect();
    await detacher.connect();
    try {
      await reader.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      await reader.query('SELECT count(*) FROM delivery_attempts');
      const pid = (await detacher.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      const detach = detacher
        .query(`ALTER TABLE delivery_attempts DETACH PARTITION "${old}" CONCURRENTLY`)
        .then(
          () => 'done',
          (err: { code?: string }) => err.code,
        );
      for (let n = 0; n < 100; n++) {
        const { rows } = await client.query(`SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1`, [
          pid,
        ]);
        if (rows[0]?.wait_event_type === 'Lock') break;
        await new Promise((r) => setTimeout(r, 50));
      }
      await client.query('SELECT pg_cancel_backend($1)', [pid]);
      expect(await detach).toBe('57014');
      await reader.query('COMMIT');
    } finally {
      await reader.end();
      await detacher.end();
    }
    const { rows: pending } = await client.query(
      `SELECT inhdetachpending AS pending FROM pg_inherits WHERE inhrelid = $1::regclass`,
      [old],
    );
    expect(pending).toEqual([{ pending: true }]);
    const report = await new RetentionEngine(client, loadRetentionConfig({})).report(now);
    expect(
      report.classes.find((c) => c.dataClass === 'delivery_attempts')!.keep.find((i) => i.target === old)
        ?.why,
    ).toBe('detach pending: finished by the next apply');

    await new RetentionEngine(client, loadRetentionConfig({})).apply(now);
    const { rows } = await client.query(`SELECT to_regclass($1) AS still`, [old]);
    expect(rows[0].still).toBeNull();
  });
});

describe('dropping a partition that references tables the callback writes', () => {
  const t = usePartitionedDatabase(1, ago(200));

  /** The partitions of coupon_snapshots whose detach is pending. */
  const pendingDetaches = async (c: pg.Client) =>
    (
      await c.query<{ name: string }>(
        `SELECT inhrelid::regclass::text AS name FROM pg_inherits WHERE inhparent = 'coupon_snapshots'::regclass AND inhdetachpending`,
      )
    ).rows.map((r) => r.name);

  /**
   * Polls until a detach is left pending (at most 10 s): pending in the catalog, and the retention
   * session's `DETACH … CONCURRENTLY` over. That statement marks the detach pending in its first
   * transaction and may still finish it in its second, until its 1 ms lock timeout ends it (a
   * callback that commits in between lets it finish: seen on a loaded machine). @returns how many are.
   */
  async function pendingSoon(c: pg.Client): Promise<number> {
    for (let n = 0; n < 500; n++) {
      const pending = (await pendingDetaches(c)).length;
      const { rows } = await c.query<{ detaching: boolean }>(
        `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'
            AND query ILIKE '%DETACH PARTITION%CONCURRENTLY%') AS detaching`,
      );
      if (pending && !rows[0].detaching) return pending;
      await new Promise((r) => setTimeout(r, 20));
    }
    return 0;
  }

  /** Takes `tables` in ROW EXCLUSIVE mode 20 times, as callbacks do, each under `lockTimeout`. */
  async function lockAsCallbacks(c: pg.Client, tables: string, lockTimeout: string): Promise<void> {
    await c.query(`SET lock_timeout = '${lockTimeout}'`);
    for (let n = 0; n < 20; n++) {
      await c.query('BEGIN');
      await c.query(`LOCK TABLE ${tables} IN ROW EXCLUSIVE MODE`);
      await c.query('COMMIT');
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  it('never queues for the referenced tables: a callback taking them is never held up', async () => {
    const { db, client } = t;
    const old = part('coupon_snapshots', 180); // references coupons and callback_batches
    const inFlight = new pg.Client({ connectionString: db.url }); // a callback's open transaction
    const next = new pg.Client({ connectionString: db.url }); // the callbacks that come after it
    await inFlight.connect();
    await next.connect();
    try {
      await inFlight.query('BEGIN');
      await inFlight.query('LOCK TABLE coupons IN ROW EXCLUSIVE MODE');
      const applied = new RetentionEngine(client, loadRetentionConfig({})).apply(now);
      // The retention session starts detaching the oldest expired partition: the detach needs a
      // lock on coupons, which the callback holds, so it is left pending and finished under NOWAIT.
      expect(await pendingSoon(next)).toBe(1);
      // A lock request queued for coupons would make the next callbacks wait behind it (here: fail
      // on their 50 ms lock timeout); NOWAIT never queues, so they are never held up.
      await lockAsCallbacks(next, 'coupons', '50ms');
      await inFlight.query('COMMIT');
      await applied;
    } finally {
      await inFlight.end();
      await next.end();
    }
    const { rows } = await client.query(`SELECT to_regclass($1) AS still`, [old]);
    expect(rows[0].still).toBeNull();
  });

  it('waits for an old snapshot holding no lock the callback needs, then finishes', async () => {
    const { db, client } = t;
    await ensurePartitions(client, now, 1, ago(200));
    const old = part('coupon_snapshots', 200);
    const inFlight = new pg.Client({ connectionString: db.url }); // leaves the detach pending
    const reader = new pg.Client({ connectionString: db.url }); // an operator's long report
    const next = new pg.Client({ connectionString: db.url });
    await Promise.all([inFlight.connect(), reader.connect(), next.connect()]);
    try {
      await reader.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      await reader.query('SELECT count(*) FROM accounts');
      await inFlight.query('BEGIN');
      await inFlight.query('LOCK TABLE coupons IN ROW EXCLUSIVE MODE');
      const applied = new RetentionEngine(client, loadRetentionConfig({})).apply(now);
      expect(await pendingSoon(next)).toBe(1);
      await inFlight.query('COMMIT');
      // FINALIZE would wait for the reader's snapshot while holding coupons and callback_batches:
      // it does not start while that snapshot is old, so the callbacks' locks never wait at all.
      await lockAsCallbacks(next, 'coupons, callback_batches', '5ms');
      expect((await pendingDetaches(next)).length).toBe(1);
      await reader.query('COMMIT');
      await applied;
    } finally {
      await Promise.all([inFlight.end(), reader.end(), next.end()]);
    }
    const { rows } = await client.query(`SELECT to_regclass($1) AS still`, [old]);
    expect(rows[0].still).toBeNull();
  });

  it('keeps the partitions it finds no moment for, removes no rows, fails at the end; the next run drops them', async () => {
    const { db, client } = t;
    await ensurePartitions(client, now, 1, ago(200));
    const first = part('coupon_snapshots', 200);
    const inFlight = new pg.Client({ connectionString: db.url });
    await inFlight.connect();
    const logged: string[] = [];
    try {
      await inFlight.query('BEGIN');
      await inFlight.query('LOCK TABLE coupons IN ROW EXCLUSIVE MODE'); // for the whole run
      const err = await new RetentionEngine(client, loadRetentionConfig({}), {
        lockWindowMs: 300,
        log: (line) => logged.push(line),
      })
        .apply(now)
        .catch((e: unknown) => e as { code?: string; message: string });
      expect((err as { code?: string }).code).toBe('55P03');
      // The first expired month stays pending; a table has one pending detach at most, so its
      // later months wait for the next run too (not tried: named in the error, not logged).
      expect((err as Error).message).toMatch(
        new RegExp(`^retention: ${first}(, coupon_snapshots_p\\d{6})* kept for the next run`),
      );
    } finally {
      await inFlight.query('COMMIT');
      await inFlight.end();
    }
    expect(await pendingDetaches(client)).toEqual([first]);
    expect(logged.filter((l) => l.startsWith('kept '))).toEqual([
      expect.stringMatching(new RegExp(`^kept ${first} for the next run: `)),
    ]);
    await new RetentionEngine(client, loadRetentionConfig({})).apply(now);
    const { rows } = await client.query(
      `SELECT to_regclass($1) AS first,
              (SELECT count(*)::int FROM pg_inherits WHERE inhparent = 'coupon_snapshots'::regclass AND inhdetachpending) AS pending,
              (SELECT expired_before >= $2::timestamptz FROM retention_horizons WHERE data_class = 'snapshots') AS horizon`,
      [first, monthStart(ago(200), 1)],
    );
    expect(rows[0]).toEqual({ first: null, pending: 0, horizon: true });
  });

  it('drops a partition an interrupted run detached but did not drop; keeps one still in its window', async () => {
    const { client } = t;
    const expired = part('coupon_snapshots', 200);
    const recent = part('coupon_snapshots', 0);
    await ensurePartitions(client, now, 1, ago(200));
    await client.query(`ALTER TABLE coupon_snapshots DETACH PARTITION "${expired}"`);
    await client.query(`ALTER TABLE coupon_snapshots DETACH PARTITION "${recent}"`);
    // The migration's partition of the rows before it, detached (empty here: a fresh database has none).
    await client.query(`CREATE TABLE coupon_snapshots_legacy (LIKE coupon_snapshots)`);
    await client.query(`DELETE FROM retention_horizons`);
    const logged: string[] = [];
    await new RetentionEngine(client, loadRetentionConfig({}), { log: (line) => logged.push(line) }).apply(
      now,
    );
    const { rows } = await client.query(
      `SELECT to_regclass($1) AS expired, to_regclass($2) AS recent, to_regclass('coupon_snapshots_legacy') AS legacy,
              (SELECT expired_before >= $3::timestamptz FROM retention_horizons WHERE data_class = 'snapshots') AS horizon`,
      [expired, recent, monthStart(ago(200), 1)],
    );
    expect(rows[0]).toEqual({ expired: null, recent: recent, legacy: null, horizon: true });
    expect(logged).toContain(`dropped ${expired}, detached by an interrupted run`);
    expect(logged).toContain('dropped coupon_snapshots_legacy, detached by an interrupted run');
    await client.query(`DROP TABLE "${recent}"`);
  });
});
