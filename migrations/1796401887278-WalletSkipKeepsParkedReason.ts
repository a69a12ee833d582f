import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 29 (docs/wallet.md, "Operators"): a row an operator skips keeps the reason it was parked
 * for, so the CHECK that tied `parked_reason` to the `parked` status lets a skipped row keep one.
 * Rows skipped before this migration have none (the skip cleared it). `down` clears the reasons
 * of skipped rows again, which the old CHECK requires.
 */
export class WalletSkipKeepsParkedReason1796401887278 implements MigrationInterface {
  name = 'WalletSkipKeepsParkedReason1796401887278';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "wallet_outbox" DROP CONSTRAINT "wallet_outbox_parked_check"`);
    await queryRunner.query(
      `ALTER TABLE "wallet_outbox" ADD CONSTRAINT "wallet_outbox_parked_reason_kept_check" CHECK (status = 'skipped' OR (status = 'parked') = (parked_reason IS NOT NULL))`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "wallet_outbox" DROP CONSTRAINT "wallet_outbox_parked_reason_kept_check"`,
    );
    await queryRunner.query(`UPDATE "wallet_outbox" SET "parked_reason" = NULL WHERE "status" = 'skipped'`);
    await queryRunner.query(
      `ALTER TABLE "wallet_outbox" ADD CONSTRAINT "wallet_outbox_parked_check" CHECK (((status = 'parked'::text) = (parked_reason IS NOT NULL)))`,
    );
  }
}
