import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The retention policy (issue 32, docs/retention.md) finds the wallet's and the events' finished
 * outbox rows, and the inbox's applied rows, by when they finished: a partial index per finishing
 * state, so its hourly report reads the rows past the cutoff instead of the whole table.
 */
export class RetentionAgeIndexes1796600100000 implements MigrationInterface {
  name = 'RetentionAgeIndexes1796600100000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX "callback_inbox_done_idx" ON "callback_inbox" ("finished_at") WHERE status = 'done'`,
    );
    for (const table of ['wallet_outbox', 'event_outbox']) {
      await queryRunner.query(
        `CREATE INDEX "${table}_delivered_idx" ON "${table}" ("delivered_at") WHERE status = 'delivered'`,
      );
      await queryRunner.query(
        `CREATE INDEX "${table}_skipped_idx" ON "${table}" ("skipped_at") WHERE status = 'skipped'`,
      );
    }
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "callback_inbox_done_idx"`);
    for (const table of ['wallet_outbox', 'event_outbox']) {
      await queryRunner.query(`DROP INDEX "${table}_skipped_idx"`);
      await queryRunner.query(`DROP INDEX "${table}_delivered_idx"`);
    }
  }
}
