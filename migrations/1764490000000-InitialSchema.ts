import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The whole first schema: accounts and the append-only ledger (CONTRACT §7), coupons, bets and
 * snapshot history (§6), batches, delivery attempts and the quarantine (§4, §8), adjustments (§10).
 */
export class InitialSchema1764490000000 implements MigrationInterface {
  name = 'InitialSchema1764490000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE FUNCTION forbid_ledger_mutation() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION '% is append-only', TG_TABLE_NAME USING ERRCODE = 'P0001';
      END $$`);

    await q.query(`
      CREATE TABLE accounts (
        id          text PRIMARY KEY CHECK (length(id) BETWEEN 1 AND 64),
        kind        text NOT NULL CHECK (kind IN ('player', 'house')),
        currency    char(3) NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
        balance     numeric(20,2) NOT NULL DEFAULT 0,
        created_at  timestamptz NOT NULL DEFAULT now(),
        updated_at  timestamptz NOT NULL DEFAULT now(),
        CHECK ((kind = 'house') = (id LIKE 'house:%'))
      )`);

    await q.query(`
      CREATE TABLE financial_operations (
        id             bigserial PRIMARY KEY,
        operation_key  text NOT NULL,
        type           text NOT NULL CHECK (type IN ('stake_debit', 'final_credit', 'recalculation_debit', 'deposit', 'withdrawal')),
        coupon_code    text NULL,
        generation     int NULL CHECK (generation >= 0),
        account_id     text NOT NULL REFERENCES accounts(id),
        amount         numeric(20,2) NOT NULL CHECK (amount > 0),
        currency       char(3) NOT NULL,
        batch_id       text NULL,
        created_at     timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT financial_operations_key_unique UNIQUE (operation_key),
        CHECK ((coupon_code IS NULL) = (generation IS NULL))
      )`);
    await q.query(
      `CREATE INDEX financial_operations_coupon_idx ON financial_operations (coupon_code) WHERE coupon_code IS NOT NULL`,
    );
    await q.query(`CREATE INDEX financial_operations_account_idx ON financial_operations (account_id)`);

    await q.query(`
      CREATE TABLE ledger_entries (
        id            bigserial PRIMARY KEY,
        operation_id  bigint NOT NULL REFERENCES financial_operations(id),
        account_id    text NOT NULL REFERENCES accounts(id),
        amount        numeric(20,2) NOT NULL CHECK (amount <> 0),
        created_at    timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX ledger_entries_operation_idx ON ledger_entries (operation_id)`);
    await q.query(`CREATE INDEX ledger_entries_account_idx ON ledger_entries (account_id)`);
    for (const table of ['financial_operations', 'ledger_entries']) {
      await q.query(
        `CREATE TRIGGER ${table}_append_only BEFORE UPDATE OR DELETE ON ${table} FOR EACH ROW EXECUTE FUNCTION forbid_ledger_mutation()`,
      );
    }

    await q.query(`
      CREATE TABLE account_adjustments (
        idempotency_key  text PRIMARY KEY CHECK (length(idempotency_key) BETWEEN 1 AND 128),
        account_id       text NOT NULL REFERENCES accounts(id),
        request_hash     char(64) NOT NULL,
        amount           numeric(20,2) NOT NULL CHECK (amount <> 0),
        currency         char(3) NOT NULL,
        reason           text NOT NULL,
        operation_id     bigint NOT NULL REFERENCES financial_operations(id),
        balance_after    numeric(20,2) NOT NULL,
        created_at       timestamptz NOT NULL DEFAULT now()
      )`);

    await q.query(`
      CREATE TABLE callback_batches (
        batch_id      text PRIMARY KEY CHECK (length(batch_id) BETWEEN 1 AND 128),
        payload_hash  char(64) NOT NULL,
        coupon_count  int NOT NULL CHECK (coupon_count BETWEEN 1 AND 100),
        payload       bytea NOT NULL,
        received_at   timestamptz NOT NULL DEFAULT now()
      )`);

    await q.query(`
      CREATE TABLE coupons (
        coupon_code            text PRIMARY KEY CHECK (length(coupon_code) BETWEEN 1 AND 32),
        account_id             text NULL REFERENCES accounts(id),
        stake                  numeric(20,2) NULL CHECK (stake > 0),
        currency               char(3) NULL,
        registration_hash      char(64) NULL,
        registered_at          timestamptz NULL,
        status                 int NULL,
        real_win               numeric(20,2) NULL CHECK (real_win >= 0),
        settlement_generation  int NOT NULL DEFAULT 0 CHECK (settlement_generation >= 0),
        generation_settled     boolean NOT NULL DEFAULT false,
        settled_amount         numeric(20,2) NULL CHECK (settled_amount >= 0),
        recalculation_open     boolean NOT NULL DEFAULT false,
        needs_review           boolean NOT NULL DEFAULT false,
        review_reason          text NULL,
        last_batch_id          text NULL,
        created_at             timestamptz NOT NULL DEFAULT now(),
        updated_at             timestamptz NOT NULL DEFAULT now(),
        CHECK ((account_id IS NULL) = (registered_at IS NULL)),
        CHECK (generation_settled = (settled_amount IS NOT NULL))
      )`);
    await q.query(`CREATE INDEX coupons_needs_review_idx ON coupons (updated_at) WHERE needs_review`);
    await q.query(`CREATE INDEX coupons_unallocated_idx ON coupons (created_at) WHERE account_id IS NULL`);
    await q.query(`CREATE INDEX coupons_account_idx ON coupons (account_id) WHERE account_id IS NOT NULL`);

    await q.query(`
      CREATE TABLE coupon_snapshots (
        id           bigserial PRIMARY KEY,
        coupon_code  text NOT NULL REFERENCES coupons(coupon_code),
        batch_id     text NOT NULL REFERENCES callback_batches(batch_id),
        status       int NOT NULL,
        real_win     numeric(20,2) NULL,
        applied      boolean NOT NULL,
        transition   text NOT NULL,
        generation   int NOT NULL,
        operations   jsonb NOT NULL DEFAULT '[]',
        payload      jsonb NOT NULL,
        received_at  timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT coupon_snapshots_coupon_batch_unique UNIQUE (coupon_code, batch_id)
      )`);
    await q.query(`CREATE INDEX coupon_snapshots_batch_idx ON coupon_snapshots (batch_id)`);

    await q.query(`
      CREATE TABLE bets (
        coupon_code    text NOT NULL REFERENCES coupons(coupon_code),
        uuid           text NOT NULL CHECK (length(uuid) BETWEEN 1 AND 64),
        status         int NOT NULL,
        payload        jsonb NOT NULL,
        last_batch_id  text NOT NULL,
        created_at     timestamptz NOT NULL DEFAULT now(),
        updated_at     timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (coupon_code, uuid)
      )`);

    await q.query(`
      CREATE TABLE delivery_attempts (
        id            bigserial PRIMARY KEY,
        batch_id      text NULL,
        request_id    text NULL,
        received_at   timestamptz NOT NULL,
        outcome       text NOT NULL CHECK (outcome IN ('processed', 'duplicate', 'conflict', 'rejected', 'unauthorized', 'failed')),
        http_status   int NOT NULL,
        error_code    text NULL,
        coupon_count  int NULL,
        duration_ms   int NOT NULL,
        payload_hash  char(64) NULL
      )`);
    await q.query(`CREATE INDEX delivery_attempts_batch_idx ON delivery_attempts (batch_id)`);
    await q.query(`CREATE INDEX delivery_attempts_received_idx ON delivery_attempts (received_at)`);

    await q.query(`
      CREATE TABLE quarantined_bodies (
        id              bigserial PRIMARY KEY,
        batch_id        text NULL,
        reason          text NOT NULL,
        details         jsonb NULL,
        http_status     int NOT NULL,
        body            bytea NOT NULL,
        content_type    text NULL,
        payload_hash    char(64) NOT NULL,
        received_at     timestamptz NOT NULL DEFAULT now(),
        replayed_at     timestamptz NULL,
        replay_outcome  text NULL
      )`);
    await q.query(`CREATE INDEX quarantined_bodies_batch_idx ON quarantined_bodies (batch_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const t of [
      'quarantined_bodies',
      'delivery_attempts',
      'bets',
      'coupon_snapshots',
      'coupons',
      'callback_batches',
      'account_adjustments',
      'ledger_entries',
      'financial_operations',
      'accounts',
    ]) {
      await q.query(`DROP TABLE ${t}`);
    }
    await q.query(`DROP FUNCTION forbid_ledger_mutation()`);
  }
}
