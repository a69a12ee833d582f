import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Fewer index writes per pushed operation (issue 40, docs/wallet.md, "What a push costs"):
 * - `<outbox>_status_idx` (every row, written by every insert and every change of status) gives way
 *   to `<outbox>_held_idx`, parked and skipped rows only: the operators' lists of those; pending
 *   rows have `<outbox>_pending_idx`, and delivered ones, most of the table, are listed from the
 *   primary key;
 * - `fillfactor` 50 on both outbox tables: the claim (attempts, lease) and the stored body change
 *   no indexed column, so with room on the page they are HOT updates that write no index entry.
 *   It applies to pages written from now on.
 * - `<prefix>_delivery_attempts_outbox_idx` becomes the unique
 *   `<prefix>_delivery_attempts_outbox_request_key` (row, request id, start; the partition key is in
 *   every unique index of a partitioned table): a record run again adds no line by `ON CONFLICT`,
 *   an index probe at any size, where the `NOT EXISTS` it replaces was planned as a scan of every
 *   attempt once the table had been small when a connection planned it.
 * The index changes as `migration:generate` writes them (test/e2e/schema.e2e.spec.ts).
 */
export class LeanerOutbox1796630000000 implements MigrationInterface {
  name = 'LeanerOutbox1796630000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."wallet_outbox_status_idx"`);
    await queryRunner.query(`DROP INDEX "public"."event_outbox_status_idx"`);
    await queryRunner.query(
      `CREATE INDEX "wallet_outbox_held_idx" ON "wallet_outbox" ("id") WHERE status IN ('parked', 'skipped')`,
    );
    await queryRunner.query(
      `CREATE INDEX "event_outbox_held_idx" ON "event_outbox" ("publisher", "id") WHERE status IN ('parked', 'skipped')`,
    );
    for (const prefix of ['wallet', 'event']) {
      await queryRunner.query(`DROP INDEX "public"."${prefix}_delivery_attempts_outbox_idx"`);
      await queryRunner.query(
        `CREATE UNIQUE INDEX "${prefix}_delivery_attempts_outbox_request_key" ON "${prefix}_delivery_attempts" ("outbox_id", "request_id", "started_at") `,
      );
    }
    await queryRunner.query(`ALTER TABLE "wallet_outbox" SET (fillfactor = 50)`);
    await queryRunner.query(`ALTER TABLE "event_outbox" SET (fillfactor = 50)`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "event_outbox" RESET (fillfactor)`);
    await queryRunner.query(`ALTER TABLE "wallet_outbox" RESET (fillfactor)`);
    for (const prefix of ['wallet', 'event']) {
      await queryRunner.query(`DROP INDEX "public"."${prefix}_delivery_attempts_outbox_request_key"`);
      await queryRunner.query(
        `CREATE INDEX "${prefix}_delivery_attempts_outbox_idx" ON "${prefix}_delivery_attempts" ("outbox_id", "id") `,
      );
    }
    await queryRunner.query(`DROP INDEX "public"."event_outbox_held_idx"`);
    await queryRunner.query(`DROP INDEX "public"."wallet_outbox_held_idx"`);
    await queryRunner.query(
      `CREATE INDEX "event_outbox_status_idx" ON "event_outbox" ("publisher", "status", "id") `,
    );
    await queryRunner.query(`CREATE INDEX "wallet_outbox_status_idx" ON "wallet_outbox" ("status", "id") `);
  }
}
