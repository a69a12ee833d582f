import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `wallet_outbox_state.changed_at` is null until the first pause or resume, as a publisher's
 * (new-user report 2, finding 7): `GET /wallet/status` answered the time of the WalletOutbox
 * migration's insert, which with `changedBy: null` read as a pause by the receiver. The row as
 * inserted is set back to null: not paused with no actor is only that row, because the receiver
 * only ever pauses (a 401/403), and a resume always names its operator. Generated, plus the UPDATE.
 */
export class WalletStatusNeverChanged1796510000000 implements MigrationInterface {
  name = 'WalletStatusNeverChanged1796510000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "wallet_outbox_state" ALTER COLUMN "changed_at" DROP NOT NULL`);
    await queryRunner.query(`ALTER TABLE "wallet_outbox_state" ALTER COLUMN "changed_at" DROP DEFAULT`);
    await queryRunner.query(
      `UPDATE "wallet_outbox_state" SET "changed_at" = NULL WHERE NOT "paused" AND "changed_by" IS NULL`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `UPDATE "wallet_outbox_state" SET "changed_at" = now() WHERE "changed_at" IS NULL`,
    );
    await queryRunner.query(`ALTER TABLE "wallet_outbox_state" ALTER COLUMN "changed_at" SET DEFAULT now()`);
    await queryRunner.query(`ALTER TABLE "wallet_outbox_state" ALTER COLUMN "changed_at" SET NOT NULL`);
  }
}
