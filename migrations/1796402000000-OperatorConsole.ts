import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The operator console's API (issue 30, docs/api.md#operator-console-api). Generated from the
 * entities, plus by hand: the append-only trigger of `operator_actions` and its backfill from the
 * actor columns that existed before it (marked `"backfilled": true` in `details`).
 *
 * - `operator_actions`: the log of actions taken with keys of scope money or operate;
 * - `delivery_minutes`: delivery attempts per closed minute and outcome (the overview's rollup);
 * - `bulk_actions`, `bulk_action_items`: bulk replays, retries and skips with their frozen rows;
 * - indexes for the lists and the search: `ledger_entries (account_id, id)` in place of
 *   `(account_id)` (the statement's balance after each entry), `coupons (updated_at)`,
 *   `bets (uuid)`, `delivery_attempts (request_id)`, `wallet_delivery_attempts (request_id)`,
 *   `accounts` SP-GiST on `id` (prefix search), unreplayed quarantine entries.
 */
export class OperatorConsole1796402000000 implements MigrationInterface {
  name = 'OperatorConsole1796402000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "operator_actions" ("id" BIGSERIAL NOT NULL, "at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "actor" text NOT NULL, "action" text NOT NULL, "target_kind" text, "target_id" text, "reason" text, "request_id" text, "outcome" text NOT NULL, "details" jsonb NOT NULL DEFAULT '{}', CONSTRAINT "operator_actions_outcome_check" CHECK (length(outcome) BETWEEN 1 AND 64), CONSTRAINT "operator_actions_target_kind_check" CHECK (target_kind IN ('account', 'coupon', 'quarantine', 'outbox', 'wallet', 'bulk_action')), CONSTRAINT "operator_actions_action_check" CHECK (action IN ('adjustment', 'registration', 'resolution', 'reconcile', 'replay', 'outbox_retry', 'outbox_skip', 'wallet_pause', 'wallet_resume', 'bulk_run', 'bulk_cancel')), CONSTRAINT "operator_actions_pkey" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "operator_actions_request_idx" ON "operator_actions"  ("request_id") WHERE request_id IS NOT NULL`,
    );
    await queryRunner.query(`CREATE INDEX "operator_actions_at_idx" ON "operator_actions"  ("at") `);
    await queryRunner.query(
      `CREATE INDEX "operator_actions_target_idx" ON "operator_actions"  ("target_kind", "target_id", "id") `,
    );
    await queryRunner.query(
      `CREATE INDEX "operator_actions_action_idx" ON "operator_actions"  ("action", "id") `,
    );
    await queryRunner.query(
      `CREATE INDEX "operator_actions_actor_idx" ON "operator_actions"  ("actor", "id") `,
    );
    await queryRunner.query(
      `CREATE TABLE "delivery_minutes" ("minute" TIMESTAMP WITH TIME ZONE NOT NULL, "processed" integer NOT NULL DEFAULT '0', "accepted" integer NOT NULL DEFAULT '0', "duplicate" integer NOT NULL DEFAULT '0', "conflict" integer NOT NULL DEFAULT '0', "rejected" integer NOT NULL DEFAULT '0', "unauthorized" integer NOT NULL DEFAULT '0', "failed" integer NOT NULL DEFAULT '0', CONSTRAINT "delivery_minutes_counts_check" CHECK (processed >= 0 AND accepted >= 0 AND duplicate >= 0 AND conflict >= 0 AND rejected >= 0 AND unauthorized >= 0 AND failed >= 0), CONSTRAINT "delivery_minutes_pkey" PRIMARY KEY ("minute"))`,
    );
    await queryRunner.query(
      `CREATE TABLE "bulk_actions" ("id" BIGSERIAL NOT NULL, "kind" text NOT NULL, "filter" jsonb NOT NULL, "reason" text NOT NULL, "actor" text NOT NULL, "request_id" text, "cap" integer NOT NULL, "total" integer NOT NULL, "status" text NOT NULL DEFAULT 'running', "done_count" integer NOT NULL DEFAULT '0', "skipped_count" integer NOT NULL DEFAULT '0', "failed_count" integer NOT NULL DEFAULT '0', "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "finished_at" TIMESTAMP WITH TIME ZONE, "cancelled_by" text, CONSTRAINT "bulk_actions_counts_check" CHECK (done_count + skipped_count + failed_count <= total), CONSTRAINT "bulk_actions_cap_check" CHECK (cap BETWEEN 1 AND 10000), CONSTRAINT "bulk_actions_status_check" CHECK (status IN ('running', 'done', 'cancelled')), CONSTRAINT "bulk_actions_kind_check" CHECK (kind IN ('quarantine_replay', 'outbox_retry', 'outbox_skip')), CONSTRAINT "bulk_actions_pkey" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "bulk_actions_running_idx" ON "bulk_actions"  ("id") WHERE status = 'running'`,
    );
    await queryRunner.query(
      `CREATE TABLE "bulk_action_items" ("bulk_action_id" bigint NOT NULL, "seq" integer NOT NULL, "target_id" bigint NOT NULL, "group_keys" text array, "outcome" text, "code" text, "message" text, "attempts" integer NOT NULL DEFAULT '0', "finished_at" TIMESTAMP WITH TIME ZONE, CONSTRAINT "bulk_action_items_seq_check" CHECK (seq >= 1), CONSTRAINT "bulk_action_items_outcome_check" CHECK (outcome IN ('done', 'skipped', 'failed')), CONSTRAINT "bulk_action_items_pkey" PRIMARY KEY ("bulk_action_id", "seq"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "bulk_action_items_pending_idx" ON "bulk_action_items"  ("bulk_action_id", "seq") WHERE outcome IS NULL`,
    );
    await queryRunner.query(`CREATE INDEX "accounts_id_prefix_idx" ON "accounts" USING spgist ("id") `);
    await queryRunner.query(
      `CREATE INDEX "ledger_entries_account_entry_idx" ON "ledger_entries"  ("account_id", "id") `,
    );
    await queryRunner.query(`DROP INDEX "public"."ledger_entries_account_idx"`);
    await queryRunner.query(`CREATE INDEX "coupons_updated_idx" ON "coupons"  ("updated_at") `);
    await queryRunner.query(`CREATE INDEX "bets_uuid_idx" ON "bets"  ("uuid") `);
    await queryRunner.query(
      `CREATE INDEX "delivery_attempts_request_idx" ON "delivery_attempts"  ("request_id") `,
    );
    await queryRunner.query(
      `CREATE INDEX "quarantined_bodies_unreplayed_idx" ON "quarantined_bodies"  ("id") WHERE replayed_at IS NULL`,
    );
    await queryRunner.query(
      `CREATE INDEX "wallet_delivery_attempts_request_idx" ON "wallet_delivery_attempts"  ("request_id") `,
    );
    await queryRunner.query(
      `ALTER TABLE "bulk_action_items" ADD CONSTRAINT "bulk_action_items_bulk_action_id_fkey" FOREIGN KEY ("bulk_action_id") REFERENCES "bulk_actions"("id") ON DELETE NO ACTION ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `CREATE TRIGGER operator_actions_append_only BEFORE UPDATE OR DELETE ON operator_actions FOR EACH ROW EXECUTE FUNCTION forbid_ledger_mutation()`,
    );
    await queryRunner.query(BACKFILL);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER operator_actions_append_only ON operator_actions`);
    await queryRunner.query(
      `ALTER TABLE "bulk_action_items" DROP CONSTRAINT "bulk_action_items_bulk_action_id_fkey"`,
    );
    await queryRunner.query(`DROP INDEX "public"."wallet_delivery_attempts_request_idx"`);
    await queryRunner.query(`DROP INDEX "public"."quarantined_bodies_unreplayed_idx"`);
    await queryRunner.query(`DROP INDEX "public"."delivery_attempts_request_idx"`);
    await queryRunner.query(`DROP INDEX "public"."bets_uuid_idx"`);
    await queryRunner.query(`DROP INDEX "public"."coupons_updated_idx"`);
    await queryRunner.query(`DROP INDEX "public"."ledger_entries_account_entry_idx"`);
    await queryRunner.query(`DROP INDEX "public"."accounts_id_prefix_idx"`);
    await queryRunner.query(`DROP INDEX "public"."bulk_action_items_pending_idx"`);
    await queryRunner.query(`DROP TABLE "bulk_action_items"`);
    await queryRunner.query(`DROP INDEX "public"."bulk_actions_running_idx"`);
    await queryRunner.query(`DROP TABLE "bulk_actions"`);
    await queryRunner.query(`DROP TABLE "delivery_minutes"`);
    await queryRunner.query(`DROP INDEX "public"."operator_actions_actor_idx"`);
    await queryRunner.query(`DROP INDEX "public"."operator_actions_action_idx"`);
    await queryRunner.query(`DROP INDEX "public"."operator_actions_target_idx"`);
    await queryRunner.query(`DROP INDEX "public"."operator_actions_at_idx"`);
    await queryRunner.query(`DROP INDEX "public"."operator_actions_request_idx"`);
    await queryRunner.query(`DROP TABLE "operator_actions"`);
    await queryRunner.query(
      `CREATE INDEX "ledger_entries_account_idx" ON "ledger_entries" USING btree ("account_id") `,
    );
  }
}

/**
 * What the actor columns kept before this log existed, as its first rows, oldest first. A
 * registration is taken only for a key that also did something of scope money or operate (the
 * log leaves out keys that only register; which scopes a key had is not stored). Only the last
 * retry and the last skip of an outbox row were kept; every quarantine replay has its attempt.
 */
export const BACKFILL = `
  WITH operators AS (
    SELECT actor FROM account_adjustments WHERE actor IS NOT NULL
    UNION SELECT actor FROM coupon_resolutions WHERE actor IS NOT NULL
    UNION SELECT actor FROM callback_batches WHERE actor IS NOT NULL
    UNION SELECT replayed_by FROM quarantined_bodies WHERE replayed_by IS NOT NULL
    UNION SELECT retried_by FROM wallet_outbox WHERE retried_by IS NOT NULL
    UNION SELECT skipped_by FROM wallet_outbox WHERE skipped_by IS NOT NULL
    UNION SELECT changed_by FROM wallet_outbox_state WHERE changed_by IS NOT NULL
  ), history (at, actor, action, target_kind, target_id, reason, outcome, details) AS (
    SELECT a.created_at, a.actor, 'adjustment', 'account', a.account_id, a.reason, 'ok',
           jsonb_build_object('idempotencyKey', a.idempotency_key, 'operationKey', o.operation_key,
             'amount', round(a.amount, greatest(2, scale(trim_scale(a.amount))))::text, 'currency', a.currency)
      FROM account_adjustments a JOIN financial_operations o ON o.id = a.operation_id
     WHERE a.actor IS NOT NULL
    UNION ALL
    SELECT c.registered_at, c.registered_by, 'registration', 'coupon', c.coupon_code, NULL, 'ok',
           jsonb_build_object('accountId', c.account_id,
             'stake', round(c.stake, greatest(2, scale(trim_scale(c.stake))))::text, 'currency', c.currency)
      FROM coupons c WHERE c.registered_by IN (SELECT actor FROM operators)
    UNION ALL
    SELECT r.resolved_at, r.actor, 'resolution', 'coupon', r.coupon_code, r.reason, 'ok',
           jsonb_build_object('idempotencyKey', r.idempotency_key, 'resolvedBy', r.resolved_by, 'status', r.status,
             'realWin', round(r.real_win, greatest(2, scale(trim_scale(r.real_win))))::text,
             'batchId', r.batch_id, 'transition', r.transition, 'generation', r.generation)
      FROM coupon_resolutions r WHERE r.actor IS NOT NULL
    UNION ALL
    SELECT b.received_at, b.actor, 'reconcile', 'coupon',
           (SELECT s.coupon_code FROM coupon_snapshots s WHERE s.batch_id = b.batch_id LIMIT 1), NULL, 'ok',
           jsonb_build_object('batchId', b.batch_id, 'outcome', 'applied')
      FROM callback_batches b WHERE b.actor IS NOT NULL AND b.batch_id LIKE 'poll:%'
    UNION ALL
    SELECT d.received_at, d.actor, 'replay', 'quarantine', q.id::text, NULL,
           CASE WHEN d.http_status = 200 THEN 'ok' ELSE coalesce(d.error_code, d.outcome) END,
           jsonb_build_object('batchId', d.batch_id, 'outcome', d.outcome)
      FROM quarantined_bodies q JOIN delivery_attempts d ON d.request_id = 'quarantine-replay:' || q.id
     WHERE q.replay_count > 0 AND d.actor IS NOT NULL
    UNION ALL
    SELECT w.retried_at, w.retried_by, 'outbox_retry', 'outbox', w.id::text, NULL, 'ok',
           jsonb_build_object('operationKey', w.operation_key, 'accountId', w.account_id)
      FROM wallet_outbox w WHERE w.retried_by IS NOT NULL
    UNION ALL
    SELECT w.skipped_at, w.skipped_by, 'outbox_skip', 'outbox', w.id::text, w.skip_reason, 'ok',
           jsonb_build_object('operationKey', w.operation_key, 'accountId', w.account_id)
      FROM wallet_outbox w WHERE w.skipped_by IS NOT NULL
    UNION ALL
    SELECT s.changed_at, s.changed_by, CASE WHEN s.paused THEN 'wallet_pause' ELSE 'wallet_resume' END, 'wallet',
           NULL, s.reason, 'ok', '{}'::jsonb
      FROM wallet_outbox_state s WHERE s.changed_by IS NOT NULL
  )
  INSERT INTO operator_actions (at, actor, action, target_kind, target_id, reason, request_id, outcome, details)
  SELECT at, actor, action, target_kind, target_id, reason, NULL, outcome, details || '{"backfilled": true}'::jsonb
    FROM history ORDER BY at`;
