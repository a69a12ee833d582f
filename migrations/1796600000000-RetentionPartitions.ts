import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Storage that stays bounded (issue 32, docs/retention.md):
 * - the high-volume append-only tables become `PARTITION BY RANGE` on their time column, one
 *   partition a month (`<table>_pYYYYMM`), so the retention job expires a month by `DETACH
 *   PARTITION … CONCURRENTLY` and `DROP` instead of a bulk `DELETE`: `coupon_snapshots` and
 *   `delivery_attempts` (`received_at`), `wallet_delivery_attempts` and `event_delivery_attempts`
 *   (`started_at`). A primary or unique key of a partitioned table must hold the partition key, so
 *   the primary keys become `(id, <time>)` (ids still come from the same sequence) and the unique
 *   `(coupon_code, batch_id)` of the snapshots becomes a plain index (the batch's claim in
 *   `callback_batches` already admits a batch id once);
 * - an existing table is not copied: its rows become one partition `<table>_legacy` (from the
 *   oldest value to the end of the newest row's month), checked by a constraint first so the
 *   attach does not scan again, its indexes and foreign keys reused where they match (the new
 *   primary key is built once), and the months after it get their own partitions, up to three
 *   months ahead of now (the job keeps creating them ahead). No row is moved, none is lost;
 *   the legacy partition expires as a whole once its newest month is out of the window;
 * - `callback_batches` keeps its primary key forever (a batch id is admitted once, CONTRACT §4):
 *   it cannot be partitioned by time without losing that, so its raw body is set to NULL after
 *   the raw bodies' window (`payload_expired_at` says when; a CHECK keeps one of the two) and the
 *   id with its payload hash goes after the batch ids' window, in bounded batches;
 * - `retention_horizons`: per data class, the time before which the policy has removed data, so
 *   readers answer "expired under the retention policy" instead of failing.
 */
export class RetentionPartitions1796600000000 implements MigrationInterface {
  name = 'RetentionPartitions1796600000000';

  public async up(q: QueryRunner): Promise<void> {
    await partitionMonthly(q, {
      table: 'coupon_snapshots',
      column: 'received_at',
      indexes: [
        'CREATE INDEX "coupon_snapshots_batch_idx" ON "coupon_snapshots" ("batch_id")',
        'CREATE INDEX "coupon_snapshots_coupon_batch_idx" ON "coupon_snapshots" ("coupon_code", "batch_id")',
      ],
      oldIndexes: ['coupon_snapshots_batch_idx'],
      oldUniques: ['coupon_snapshots_coupon_batch_unique'],
      foreignKeys: [
        'ALTER TABLE "coupon_snapshots" ADD CONSTRAINT "coupon_snapshots_coupon_code_fkey" FOREIGN KEY ("coupon_code") REFERENCES "coupons"("coupon_code") ON DELETE NO ACTION ON UPDATE NO ACTION',
        'ALTER TABLE "coupon_snapshots" ADD CONSTRAINT "coupon_snapshots_batch_id_fkey" FOREIGN KEY ("batch_id") REFERENCES "callback_batches"("batch_id") ON DELETE NO ACTION ON UPDATE NO ACTION',
      ],
    });
    await partitionMonthly(q, {
      table: 'delivery_attempts',
      column: 'received_at',
      indexes: [
        'CREATE INDEX "delivery_attempts_batch_idx" ON "delivery_attempts" ("batch_id")',
        'CREATE INDEX "delivery_attempts_received_idx" ON "delivery_attempts" ("received_at")',
        'CREATE INDEX "delivery_attempts_request_idx" ON "delivery_attempts" ("request_id")',
      ],
      oldIndexes: [
        'delivery_attempts_batch_idx',
        'delivery_attempts_received_idx',
        'delivery_attempts_request_idx',
      ],
      oldUniques: [],
      foreignKeys: [],
    });
    for (const prefix of ['wallet', 'event'])
      await partitionMonthly(q, {
        table: `${prefix}_delivery_attempts`,
        column: 'started_at',
        indexes: [
          `CREATE INDEX "${prefix}_delivery_attempts_outbox_idx" ON "${prefix}_delivery_attempts" ("outbox_id", "id")`,
          `CREATE INDEX "${prefix}_delivery_attempts_request_idx" ON "${prefix}_delivery_attempts" ("request_id")`,
        ],
        oldIndexes: [`${prefix}_delivery_attempts_outbox_idx`, `${prefix}_delivery_attempts_request_idx`],
        oldUniques: [],
        foreignKeys: [
          `ALTER TABLE "${prefix}_delivery_attempts" ADD CONSTRAINT "${prefix}_delivery_attempts_outbox_id_fkey" FOREIGN KEY ("outbox_id") REFERENCES "${prefix}_outbox"("id") ON DELETE NO ACTION ON UPDATE NO ACTION`,
        ],
      });

    await q.query(`ALTER TABLE "callback_batches" ADD "payload_expired_at" TIMESTAMP WITH TIME ZONE`);
    await q.query(`ALTER TABLE "callback_batches" ALTER COLUMN "payload" DROP NOT NULL`);
    await q.query(
      `ALTER TABLE "callback_batches" ADD CONSTRAINT "callback_batches_payload_check" CHECK ((payload IS NULL) = (payload_expired_at IS NOT NULL))`,
    );
    await q.query(`CREATE INDEX "callback_batches_received_idx" ON "callback_batches" ("received_at") `);
    await q.query(
      `CREATE TABLE "retention_horizons" ("data_class" text NOT NULL, "expired_before" TIMESTAMP WITH TIME ZONE NOT NULL, "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "retention_horizons_pkey" PRIMARY KEY ("data_class"))`,
    );
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE "retention_horizons"`);
    await q.query(`DROP INDEX "callback_batches_received_idx"`);
    await q.query(`ALTER TABLE "callback_batches" DROP CONSTRAINT "callback_batches_payload_check"`);
    await q.query(`DELETE FROM "callback_batches" WHERE payload IS NULL AND NOT EXISTS
      (SELECT 1 FROM coupon_snapshots s WHERE s.batch_id = callback_batches.batch_id)
      AND NOT EXISTS (SELECT 1 FROM coupon_resolutions r WHERE r.batch_id = callback_batches.batch_id)`);
    await q.query(`UPDATE "callback_batches" SET payload = '\\x' WHERE payload IS NULL`);
    await q.query(`ALTER TABLE "callback_batches" ALTER COLUMN "payload" SET NOT NULL`);
    await q.query(`ALTER TABLE "callback_batches" DROP COLUMN "payload_expired_at"`);
    // The partitioned tables stay partitioned: their rows are the same either way.
  }
}

/** What {@link partitionMonthly} needs of one table. */
interface MonthlyTable {
  table: string;
  /** The time column, `NOT NULL`. */
  column: string;
  /** The partitioned table's indexes (each also created on every partition). */
  indexes: string[];
  /** The existing table's indexes and unique constraints, renamed out of the way. */
  oldIndexes: string[];
  oldUniques: string[];
  /** The foreign keys, added to the partitioned table. */
  foreignKeys: string[];
}

/** Months created ahead of the current one (the retention job keeps this many ahead, RETENTION_PARTITIONS_AHEAD). */
const MONTHS_AHEAD = 3;

/**
 * Replaces `t.table` by a partitioned table of the same columns, CHECKs, defaults and sequence,
 * with primary key `(id, column)`; the existing rows become its partition `<table>_legacy` (when
 * there are any), the following months up to {@link MONTHS_AHEAD} after the current one get their
 * own partitions.
 */
async function partitionMonthly(q: QueryRunner, t: MonthlyTable): Promise<void> {
  const legacy = `${t.table}_legacy`;
  await q.query(`ALTER TABLE "${t.table}" RENAME TO "${legacy}"`);
  await q.query(`ALTER TABLE "${legacy}" DROP CONSTRAINT "${t.table}_pkey"`);
  for (const name of t.oldUniques) await q.query(`ALTER TABLE "${legacy}" DROP CONSTRAINT "${name}"`);
  for (const name of t.oldIndexes)
    await q.query(`ALTER INDEX "${name}" RENAME TO "${name.replace(t.table, legacy)}"`);
  await q.query(
    `CREATE TABLE "${t.table}" (LIKE "${legacy}" INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE ("${t.column}")`,
  );
  await q.query(`ALTER SEQUENCE "${t.table}_id_seq" OWNED BY "${t.table}"."id"`);
  await q.query(
    `ALTER TABLE "${t.table}" ADD CONSTRAINT "${t.table}_pkey" PRIMARY KEY ("id", "${t.column}")`,
  );
  for (const sql of t.indexes) await q.query(sql);
  for (const sql of t.foreignKeys) await q.query(sql);

  const [{ until }] = (await q.query(
    `SELECT (date_trunc('month', max("${t.column}") AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC' AS until
       FROM "${legacy}"`,
  )) as { until: Date | null }[];
  if (until) {
    // Checked first (one scan), so ATTACH PARTITION trusts the constraint instead of scanning.
    await q.query(
      `ALTER TABLE "${legacy}" ADD CONSTRAINT "${legacy}_range_check" CHECK ("${t.column}" < '${until.toISOString()}')`,
    );
    await q.query(
      `ALTER TABLE "${t.table}" ATTACH PARTITION "${legacy}" FOR VALUES FROM (MINVALUE) TO ('${until.toISOString()}')`,
    );
    await q.query(`ALTER TABLE "${legacy}" DROP CONSTRAINT "${legacy}_range_check"`);
  } else {
    await q.query(`DROP TABLE "${legacy}"`);
  }
  const now = new Date();
  // From the end of the legacy partition (no gap up to now), else from the current month.
  let month = until ? until.getTime() : Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1);
  const last = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + MONTHS_AHEAD, 1);
  while (month <= last) {
    const from = new Date(month);
    const to = new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth() + 1, 1));
    const name = `${t.table}_p${from.getUTCFullYear()}${String(from.getUTCMonth() + 1).padStart(2, '0')}`;
    await q.query(
      `CREATE TABLE "${name}" PARTITION OF "${t.table}" FOR VALUES FROM ('${from.toISOString()}') TO ('${to.toISOString()}')`,
    );
    month = to.getTime();
  }
}
