import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The retention policy (issue 32, docs/retention.md) finds the wallet's and the events' finished
 * outbox rows by when they finished: a partial index per finishing state, so its hourly report
 * reads the rows past the cutoff instead of the whole outbox.
 */
export class RetentionOutboxAge1796600100000 implements MigrationInterface {
  name = 'RetentionOutboxAge1796600100000';

  public async up(queryRunner: QueryRunner): Promise<void> {
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
    for (const table of ['wallet_outbox', 'event_outbox']) {
      await queryRunner.query(`DROP INDEX "${table}_skipped_idx"`);
      await queryRunner.query(`DROP INDEX "${table}_delivered_idx"`);
    }
  }
}
