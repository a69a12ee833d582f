import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Who did it (issue 16, least privilege on the partner API): the name of the partner API key
 * (`OPS_API_KEYS` entry) recorded with every adjustment (`account_adjustments.actor`),
 * registration (`coupons.registered_by`), resolution (`coupon_resolutions.actor`), batch applied
 * by a reconcile, resolution or replay (`callback_batches.actor`), replay attempt
 * (`delivery_attempts.actor`) and last replay (`quarantined_bodies.replayed_by`). Nullable, no
 * default: rows from before, SportAPI's callbacks and scheduled runs have no key; adding them
 * rewrites no table.
 */
export class ApiKeyActors1796140048806 implements MigrationInterface {
  name = 'ApiKeyActors1796140048806';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "account_adjustments" ADD "actor" text`);
    await queryRunner.query(`ALTER TABLE "coupons" ADD "registered_by" text`);
    await queryRunner.query(`ALTER TABLE "callback_batches" ADD "actor" text`);
    await queryRunner.query(`ALTER TABLE "delivery_attempts" ADD "actor" text`);
    await queryRunner.query(`ALTER TABLE "quarantined_bodies" ADD "replayed_by" text`);
    await queryRunner.query(`ALTER TABLE "coupon_resolutions" ADD "actor" text`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "coupon_resolutions" DROP COLUMN "actor"`);
    await queryRunner.query(`ALTER TABLE "quarantined_bodies" DROP COLUMN "replayed_by"`);
    await queryRunner.query(`ALTER TABLE "delivery_attempts" DROP COLUMN "actor"`);
    await queryRunner.query(`ALTER TABLE "callback_batches" DROP COLUMN "actor"`);
    await queryRunner.query(`ALTER TABLE "coupons" DROP COLUMN "registered_by"`);
    await queryRunner.query(`ALTER TABLE "account_adjustments" DROP COLUMN "actor"`);
  }
}
