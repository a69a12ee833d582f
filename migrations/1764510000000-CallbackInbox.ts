import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Inbox mode (`CALLBACK_MODE=inbox`) and quarantine replay: `callback_inbox` keeps every accepted
 * batch (raw bytes, SHA-256, its coupon codes) until a worker applies it; the quarantine gets a
 * replay count and a link to the inbox row it came from; delivery attempts may be `accepted`
 * (committed to the inbox, applied later). CONTRACT §4, §5, §8.
 */
export class CallbackInbox1764510000000 implements MigrationInterface {
  name = 'CallbackInbox1764510000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE callback_inbox (
        id               bigserial PRIMARY KEY,
        batch_id         text NOT NULL CHECK (length(batch_id) BETWEEN 1 AND 128),
        payload_hash     char(64) NOT NULL,
        coupon_count     int NOT NULL CHECK (coupon_count BETWEEN 1 AND 100),
        coupon_codes     text[] NOT NULL,
        payload          bytea NOT NULL,
        request_id       text NULL,
        status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'quarantined')),
        attempts         int NOT NULL DEFAULT 0 CHECK (attempts >= 0),
        next_attempt_at  timestamptz NOT NULL DEFAULT now(),
        last_error       text NULL,
        outcome          text NULL CHECK (outcome IN ('processed', 'duplicate', 'conflict', 'failed')),
        received_at      timestamptz NOT NULL DEFAULT now(),
        finished_at      timestamptz NULL,
        CONSTRAINT callback_inbox_batch_unique UNIQUE (batch_id)
      )`);
    // Workers scan pending rows in arrival order and look for earlier pending rows sharing a coupon.
    await q.query(`CREATE INDEX callback_inbox_pending_idx ON callback_inbox (id) WHERE status = 'pending'`);
    await q.query(
      `CREATE INDEX callback_inbox_pending_coupons_idx ON callback_inbox USING gin (coupon_codes) WHERE status = 'pending'`,
    );

    await q.query(`ALTER TABLE quarantined_bodies ADD COLUMN replay_count int NOT NULL DEFAULT 0`);
    await q.query(
      `ALTER TABLE quarantined_bodies ADD COLUMN inbox_id bigint NULL REFERENCES callback_inbox(id)`,
    );
    await q.query(
      `CREATE INDEX quarantined_bodies_inbox_idx ON quarantined_bodies (inbox_id) WHERE inbox_id IS NOT NULL`,
    );

    await q.query(`ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_outcome_check`);
    await q.query(`
      ALTER TABLE delivery_attempts ADD CONSTRAINT delivery_attempts_outcome_check
        CHECK (outcome IN ('processed', 'accepted', 'duplicate', 'conflict', 'rejected', 'unauthorized', 'failed'))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_outcome_check`);
    await q.query(`
      ALTER TABLE delivery_attempts ADD CONSTRAINT delivery_attempts_outcome_check
        CHECK (outcome IN ('processed', 'duplicate', 'conflict', 'rejected', 'unauthorized', 'failed'))`);
    await q.query(`ALTER TABLE quarantined_bodies DROP COLUMN inbox_id`);
    await q.query(`ALTER TABLE quarantined_bodies DROP COLUMN replay_count`);
    await q.query(`DROP TABLE callback_inbox`);
  }
}
