import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The wallet outbox (issue 15, docs/wallet.md): `wallet_outbox`, one row per financial operation
 * of a pushed type, written by the posting statement in the transaction that posts it;
 * `wallet_delivery_attempts`, the history of every attempt; `wallet_outbox_state`, the one row
 * (id 1) saying whether delivery is paused. Generated from the entities, plus that row.
 */
export class WalletOutbox1796143780085 implements MigrationInterface {
  name = 'WalletOutbox1796143780085';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "wallet_outbox" ("id" BIGSERIAL NOT NULL, "operation_id" bigint NOT NULL, "operation_key" text NOT NULL, "account_id" text NOT NULL, "status" text NOT NULL DEFAULT 'pending', "attempts" integer NOT NULL DEFAULT '0', "next_attempt_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "leased_until" TIMESTAMP WITH TIME ZONE, "retry_from" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "body" bytea, "last_status" integer, "last_error" text, "parked_reason" text, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "delivered_at" TIMESTAMP WITH TIME ZONE, "parked_at" TIMESTAMP WITH TIME ZONE, "skipped_at" TIMESTAMP WITH TIME ZONE, "skipped_by" text, "skip_reason" text, "retried_at" TIMESTAMP WITH TIME ZONE, "retried_by" text, CONSTRAINT "wallet_outbox_operation_unique" UNIQUE ("operation_id"), CONSTRAINT "wallet_outbox_parked_check" CHECK ((status = 'parked') = (parked_reason IS NOT NULL)), CONSTRAINT "wallet_outbox_parked_reason_check" CHECK (parked_reason IN ('refused', 'conflict', 'retry_budget_exhausted')), CONSTRAINT "wallet_outbox_attempts_check" CHECK (attempts >= 0), CONSTRAINT "wallet_outbox_status_check" CHECK (status IN ('pending', 'delivered', 'parked', 'skipped')), CONSTRAINT "wallet_outbox_pkey" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "wallet_outbox_status_idx" ON "wallet_outbox"  ("status", "id") `);
    await queryRunner.query(
      `CREATE INDEX "wallet_outbox_open_account_idx" ON "wallet_outbox"  ("account_id", "id") WHERE status IN ('pending', 'parked')`,
    );
    await queryRunner.query(
      `CREATE INDEX "wallet_outbox_pending_idx" ON "wallet_outbox"  ("id") WHERE status = 'pending'`,
    );
    await queryRunner.query(
      `CREATE TABLE "wallet_delivery_attempts" ("id" BIGSERIAL NOT NULL, "outbox_id" bigint NOT NULL, "attempt" integer NOT NULL, "request_id" text NOT NULL, "connector" text NOT NULL, "started_at" TIMESTAMP WITH TIME ZONE NOT NULL, "duration_ms" integer NOT NULL, "outcome" text NOT NULL, "http_status" integer, "answer" text, CONSTRAINT "wallet_delivery_attempts_duration_check" CHECK (duration_ms >= 0), CONSTRAINT "wallet_delivery_attempts_outcome_check" CHECK (outcome IN ('delivered', 'retry', 'refused', 'conflict', 'unauthorized')), CONSTRAINT "wallet_delivery_attempts_pkey" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "wallet_delivery_attempts_outbox_idx" ON "wallet_delivery_attempts"  ("outbox_id", "id") `,
    );
    await queryRunner.query(
      `CREATE TABLE "wallet_outbox_state" ("id" smallint NOT NULL, "paused" boolean NOT NULL DEFAULT false, "reason" text, "changed_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "changed_by" text, CONSTRAINT "wallet_outbox_state_single_check" CHECK (id = 1), CONSTRAINT "wallet_outbox_state_pkey" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "wallet_outbox" ADD CONSTRAINT "wallet_outbox_operation_id_fkey" FOREIGN KEY ("operation_id") REFERENCES "financial_operations"("id") ON DELETE NO ACTION ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "wallet_delivery_attempts" ADD CONSTRAINT "wallet_delivery_attempts_outbox_id_fkey" FOREIGN KEY ("outbox_id") REFERENCES "wallet_outbox"("id") ON DELETE NO ACTION ON UPDATE NO ACTION`,
    );
    await queryRunner.query(`INSERT INTO "wallet_outbox_state" ("id") VALUES (1)`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "wallet_delivery_attempts" DROP CONSTRAINT "wallet_delivery_attempts_outbox_id_fkey"`,
    );
    await queryRunner.query(`ALTER TABLE "wallet_outbox" DROP CONSTRAINT "wallet_outbox_operation_id_fkey"`);
    await queryRunner.query(`DROP TABLE "wallet_outbox_state"`);
    await queryRunner.query(`DROP INDEX "public"."wallet_delivery_attempts_outbox_idx"`);
    await queryRunner.query(`DROP TABLE "wallet_delivery_attempts"`);
    await queryRunner.query(`DROP INDEX "public"."wallet_outbox_pending_idx"`);
    await queryRunner.query(`DROP INDEX "public"."wallet_outbox_open_account_idx"`);
    await queryRunner.query(`DROP INDEX "public"."wallet_outbox_status_idx"`);
    await queryRunner.query(`DROP TABLE "wallet_outbox"`);
  }
}
