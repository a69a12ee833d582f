import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Polling fallback and reconciliation (CONTRACT §9): when each coupon was last read from SportAPI
 * (so the scheduled reconciliation spaces its reads), an index over the coupons it looks at, and
 * the append-only record of operators' resolutions of flagged coupons (who, why, when, under which
 * Idempotency-Key, and what it did).
 */
export class Reconciliation1764500000000 implements MigrationInterface {
  name = 'Reconciliation1764500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE coupons ADD COLUMN last_reconciled_at timestamptz NULL`);
    await q.query(
      `CREATE INDEX coupons_reconcile_idx ON coupons (updated_at) WHERE needs_review OR NOT generation_settled`,
    );
    await q.query(`
      CREATE TABLE coupon_resolutions (
        idempotency_key  text PRIMARY KEY CHECK (length(idempotency_key) BETWEEN 1 AND 128),
        coupon_code      text NOT NULL REFERENCES coupons(coupon_code),
        request_hash     char(64) NOT NULL,
        status           int NOT NULL,
        real_win         numeric(20,2) NOT NULL CHECK (real_win >= 0),
        reason           text NOT NULL CHECK (length(reason) BETWEEN 1 AND 1000),
        resolved_by      text NOT NULL CHECK (length(resolved_by) BETWEEN 1 AND 200),
        batch_id         text NOT NULL REFERENCES callback_batches(batch_id),
        transition       text NOT NULL,
        generation       int NOT NULL,
        operations       jsonb NOT NULL,
        resolved_at      timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX coupon_resolutions_coupon_idx ON coupon_resolutions (coupon_code)`);
    await q.query(
      `CREATE TRIGGER coupon_resolutions_append_only BEFORE UPDATE OR DELETE ON coupon_resolutions FOR EACH ROW EXECUTE FUNCTION forbid_ledger_mutation()`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE coupon_resolutions`);
    await q.query(`DROP INDEX coupons_reconcile_idx`);
    await q.query(`ALTER TABLE coupons DROP COLUMN last_reconciled_at`);
  }
}
