import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The settlement events' outbox (issue 33, docs/events.md): `event_outbox`, one row per financial
 * operation of a published type and publisher, written by the posting statement in the
 * transaction that posts it; `event_delivery_attempts`, every publish attempt;
 * `event_outbox_state`, a publisher's pause state. The wallet outbox's columns and rules, per
 * `publisher`. Operator actions learn to record a publisher's pause and resume. Written as
 * `migration:generate` writes it from the entities.
 */
export class SettlementEvents1796500000000 implements MigrationInterface {
  name = 'SettlementEvents1796500000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "event_outbox" ("id" BIGSERIAL NOT NULL, "publisher" text NOT NULL, "operation_id" bigint NOT NULL, "operation_key" text NOT NULL, "account_id" text NOT NULL, "status" text NOT NULL DEFAULT 'pending', "attempts" integer NOT NULL DEFAULT '0', "next_attempt_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "leased_until" TIMESTAMP WITH TIME ZONE, "retry_from" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "body" bytea, "last_status" integer, "last_error" text, "parked_reason" text, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "delivered_at" TIMESTAMP WITH TIME ZONE, "parked_at" TIMESTAMP WITH TIME ZONE, "skipped_at" TIMESTAMP WITH TIME ZONE, "skipped_by" text, "skip_reason" text, "retried_at" TIMESTAMP WITH TIME ZONE, "retried_by" text, CONSTRAINT "event_outbox_operation_unique" UNIQUE ("operation_id", "publisher"), CONSTRAINT "event_outbox_parked_reason_kept_check" CHECK (status = 'skipped' OR (status = 'parked') = (parked_reason IS NOT NULL)), CONSTRAINT "event_outbox_parked_reason_check" CHECK (parked_reason IN ('refused', 'conflict', 'retry_budget_exhausted')), CONSTRAINT "event_outbox_attempts_check" CHECK (attempts >= 0), CONSTRAINT "event_outbox_status_check" CHECK (status IN ('pending', 'delivered', 'parked', 'skipped')), CONSTRAINT "event_outbox_pkey" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "event_outbox_status_idx" ON "event_outbox"  ("publisher", "status", "id") `,
    );
    await queryRunner.query(
      `CREATE INDEX "event_outbox_open_account_idx" ON "event_outbox"  ("publisher", "account_id", "id") WHERE status IN ('pending', 'parked')`,
    );
    await queryRunner.query(
      `CREATE INDEX "event_outbox_pending_idx" ON "event_outbox"  ("publisher", "id") WHERE status = 'pending'`,
    );
    await queryRunner.query(
      `CREATE TABLE "event_delivery_attempts" ("id" BIGSERIAL NOT NULL, "outbox_id" bigint NOT NULL, "attempt" integer NOT NULL, "request_id" text NOT NULL, "connector" text NOT NULL, "started_at" TIMESTAMP WITH TIME ZONE NOT NULL, "duration_ms" integer NOT NULL, "outcome" text NOT NULL, "http_status" integer, "answer" text, CONSTRAINT "event_delivery_attempts_duration_check" CHECK (duration_ms >= 0), CONSTRAINT "event_delivery_attempts_outcome_check" CHECK (outcome IN ('delivered', 'retry', 'refused', 'conflict', 'unauthorized')), CONSTRAINT "event_delivery_attempts_pkey" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "event_delivery_attempts_request_idx" ON "event_delivery_attempts"  ("request_id") `,
    );
    await queryRunner.query(
      `CREATE INDEX "event_delivery_attempts_outbox_idx" ON "event_delivery_attempts"  ("outbox_id", "id") `,
    );
    await queryRunner.query(
      `CREATE TABLE "event_outbox_state" ("publisher" text NOT NULL, "paused" boolean NOT NULL DEFAULT false, "reason" text, "changed_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "changed_by" text, CONSTRAINT "event_outbox_state_pkey" PRIMARY KEY ("publisher"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "operator_actions" DROP CONSTRAINT "operator_actions_target_kind_check"`,
    );
    await queryRunner.query(`ALTER TABLE "operator_actions" DROP CONSTRAINT "operator_actions_action_check"`);
    await queryRunner.query(
      `ALTER TABLE "operator_actions" ADD CONSTRAINT "operator_actions_target_kind_check" CHECK (target_kind IN ('account', 'coupon', 'quarantine', 'outbox', 'wallet', 'event_outbox', 'publisher', 'bulk_action'))`,
    );
    await queryRunner.query(
      `ALTER TABLE "operator_actions" ADD CONSTRAINT "operator_actions_action_check" CHECK (action IN ('adjustment', 'registration', 'resolution', 'reconcile', 'replay', 'outbox_retry', 'outbox_skip', 'wallet_pause', 'wallet_resume', 'publisher_pause', 'publisher_resume', 'bulk_run', 'bulk_cancel'))`,
    );
    await queryRunner.query(
      `ALTER TABLE "event_outbox" ADD CONSTRAINT "event_outbox_operation_id_fkey" FOREIGN KEY ("operation_id") REFERENCES "financial_operations"("id") ON DELETE NO ACTION ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "event_delivery_attempts" ADD CONSTRAINT "event_delivery_attempts_outbox_id_fkey" FOREIGN KEY ("outbox_id") REFERENCES "event_outbox"("id") ON DELETE NO ACTION ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "event_delivery_attempts" DROP CONSTRAINT "event_delivery_attempts_outbox_id_fkey"`,
    );
    await queryRunner.query(`ALTER TABLE "event_outbox" DROP CONSTRAINT "event_outbox_operation_id_fkey"`);
    await queryRunner.query(`ALTER TABLE "operator_actions" DROP CONSTRAINT "operator_actions_action_check"`);
    await queryRunner.query(
      `ALTER TABLE "operator_actions" DROP CONSTRAINT "operator_actions_target_kind_check"`,
    );
    await queryRunner.query(
      `ALTER TABLE "operator_actions" ADD CONSTRAINT "operator_actions_action_check" CHECK (action IN ('adjustment', 'registration', 'resolution', 'reconcile', 'replay', 'outbox_retry', 'outbox_skip', 'wallet_pause', 'wallet_resume', 'bulk_run', 'bulk_cancel'))`,
    );
    await queryRunner.query(
      `ALTER TABLE "operator_actions" ADD CONSTRAINT "operator_actions_target_kind_check" CHECK (target_kind IN ('account', 'coupon', 'quarantine', 'outbox', 'wallet', 'bulk_action'))`,
    );
    await queryRunner.query(`DROP TABLE "event_outbox_state"`);
    await queryRunner.query(`DROP INDEX "public"."event_delivery_attempts_outbox_idx"`);
    await queryRunner.query(`DROP INDEX "public"."event_delivery_attempts_request_idx"`);
    await queryRunner.query(`DROP TABLE "event_delivery_attempts"`);
    await queryRunner.query(`DROP INDEX "public"."event_outbox_pending_idx"`);
    await queryRunner.query(`DROP INDEX "public"."event_outbox_open_account_idx"`);
    await queryRunner.query(`DROP INDEX "public"."event_outbox_status_idx"`);
    await queryRunner.query(`DROP TABLE "event_outbox"`);
  }
}
