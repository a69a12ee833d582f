import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Trace context (issue 41, docs/operating.md "Traces"), all nullable without a default (tracing
 * is off by default, older rows have none, adding them rewrites nothing; partitions get them from
 * their partitioned table): `delivery_attempts.trace_id`, `wallet_delivery_attempts.trace_id` and
 * `event_delivery_attempts.trace_id`, the trace id (32 hex) of the attempt, shown with it;
 * `wallet_outbox.traceparent` and `event_outbox.traceparent`, the W3C trace context of the
 * transaction that wrote the row (as Debezium's outbox router keeps it), which its deliveries join;
 * `callback_inbox.traceparent`, the accepting delivery's, which the row's apply joins.
 * As `migration:generate` writes it (test/e2e/schema.e2e.spec.ts checks the entities against it).
 */
export class TraceContext1796620000000 implements MigrationInterface {
  name = 'TraceContext1796620000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "delivery_attempts" ADD "trace_id" character(32)`);
    await queryRunner.query(`ALTER TABLE "wallet_delivery_attempts" ADD "trace_id" character(32)`);
    await queryRunner.query(`ALTER TABLE "event_delivery_attempts" ADD "trace_id" character(32)`);
    await queryRunner.query(`ALTER TABLE "wallet_outbox" ADD "traceparent" text`);
    await queryRunner.query(`ALTER TABLE "event_outbox" ADD "traceparent" text`);
    await queryRunner.query(`ALTER TABLE "callback_inbox" ADD "traceparent" text`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "callback_inbox" DROP COLUMN "traceparent"`);
    await queryRunner.query(`ALTER TABLE "event_outbox" DROP COLUMN "traceparent"`);
    await queryRunner.query(`ALTER TABLE "wallet_outbox" DROP COLUMN "traceparent"`);
    await queryRunner.query(`ALTER TABLE "event_delivery_attempts" DROP COLUMN "trace_id"`);
    await queryRunner.query(`ALTER TABLE "wallet_delivery_attempts" DROP COLUMN "trace_id"`);
    await queryRunner.query(`ALTER TABLE "delivery_attempts" DROP COLUMN "trace_id"`);
  }
}
