import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 14 (inbox mode keeps up): the per-coupon order of inbox claims (docs/inbox-mode.md#order)
 * reads `callback_inbox_pending_coupons`, one row per coupon of each pending inbox row, with one
 * primary-key probe per coupon, instead of comparing `coupon_codes` arrays pair by pair (two
 * 100-coupon arrays: about 0.1 ms of CPU a pair; a claim behind 3 000 pending rows took 7.8 s).
 * Triggers on `callback_inbox` keep the table: rows added when an inbox row is inserted pending
 * (or returns to pending), removed when it leaves `pending` or is deleted, all of them on
 * TRUNCATE; whatever writes the inbox (any version of the receiver, an operator's SQL) keeps it
 * exact. The GIN index it replaces goes; rows pending at the migration get their coupons here.
 */
export class InboxPendingCoupons1796255594454 implements MigrationInterface {
  name = 'InboxPendingCoupons1796255594454';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."callback_inbox_pending_coupons_idx"`);
    await queryRunner.query(
      `CREATE TABLE "callback_inbox_pending_coupons" ("coupon_code" text COLLATE "C" NOT NULL, "inbox_id" bigint NOT NULL, CONSTRAINT "callback_inbox_pending_coupons_pkey" PRIMARY KEY ("coupon_code", "inbox_id"))`,
    );
    await queryRunner.query(`
      CREATE FUNCTION callback_inbox_pending_coupons_sync() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'TRUNCATE' THEN
          DELETE FROM callback_inbox_pending_coupons;
          RETURN NULL;
        END IF;
        IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.status = 'pending' THEN
          DELETE FROM callback_inbox_pending_coupons p USING unnest(OLD.coupon_codes) AS c(code)
           WHERE p.coupon_code = c.code COLLATE "C" AND p.inbox_id = OLD.id;
        END IF;
        IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.status = 'pending' THEN
          INSERT INTO callback_inbox_pending_coupons (coupon_code, inbox_id)
          SELECT DISTINCT code, NEW.id FROM unnest(NEW.coupon_codes) AS code;
        END IF;
        RETURN NULL;
      END $$`);
    await queryRunner.query(
      `CREATE TRIGGER callback_inbox_pending_coupons_insert AFTER INSERT ON callback_inbox FOR EACH ROW WHEN (NEW.status = 'pending') EXECUTE FUNCTION callback_inbox_pending_coupons_sync()`,
    );
    await queryRunner.query(
      `CREATE TRIGGER callback_inbox_pending_coupons_update AFTER UPDATE OF id, status, coupon_codes ON callback_inbox FOR EACH ROW WHEN (OLD.id IS DISTINCT FROM NEW.id OR OLD.status IS DISTINCT FROM NEW.status OR OLD.coupon_codes IS DISTINCT FROM NEW.coupon_codes) EXECUTE FUNCTION callback_inbox_pending_coupons_sync()`,
    );
    await queryRunner.query(
      `CREATE TRIGGER callback_inbox_pending_coupons_delete AFTER DELETE ON callback_inbox FOR EACH ROW WHEN (OLD.status = 'pending') EXECUTE FUNCTION callback_inbox_pending_coupons_sync()`,
    );
    await queryRunner.query(
      `CREATE TRIGGER callback_inbox_pending_coupons_truncate AFTER TRUNCATE ON callback_inbox FOR EACH STATEMENT EXECUTE FUNCTION callback_inbox_pending_coupons_sync()`,
    );
    await queryRunner.query(
      `INSERT INTO "callback_inbox_pending_coupons" ("coupon_code", "inbox_id")
       SELECT DISTINCT code, id FROM "callback_inbox", unnest(coupon_codes) AS code WHERE status = 'pending'`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    for (const t of ['insert', 'update', 'delete', 'truncate']) {
      await queryRunner.query(`DROP TRIGGER callback_inbox_pending_coupons_${t} ON callback_inbox`);
    }
    await queryRunner.query(`DROP FUNCTION callback_inbox_pending_coupons_sync()`);
    await queryRunner.query(`DROP TABLE "callback_inbox_pending_coupons"`);
    await queryRunner.query(
      `CREATE INDEX "callback_inbox_pending_coupons_idx" ON "callback_inbox" USING gin ("coupon_codes") WHERE (status = 'pending'::text)`,
    );
  }
}
