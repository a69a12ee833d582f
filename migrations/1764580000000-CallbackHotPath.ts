import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What the callback's hot path needs (issue 3):
 * - an index on `callback_batches.payload_hash`, so a byte-identical redelivery of a committed
 *   batch is recognised by one index lookup before its body is parsed (CONTRACT §4 step 4);
 * - `receiver_assert(ok, sqlstate, message)`, which raises `message` with `sqlstate` unless `ok`:
 *   a check inside a statement that runs just before COMMIT in the same round of statements
 *   (e.g. an operation key naming another operation, CONTRACT §7) fails that statement, so the
 *   transaction rolls back instead of committing.
 */
export class CallbackHotPath1764580000000 implements MigrationInterface {
  name = 'CallbackHotPath1764580000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX callback_batches_payload_hash_idx ON callback_batches (payload_hash)`);
    await q.query(`
      CREATE FUNCTION receiver_assert(ok boolean, state text, message text) RETURNS boolean
      LANGUAGE plpgsql AS $$
      BEGIN
        IF ok IS NOT TRUE THEN
          RAISE EXCEPTION USING ERRCODE = state, MESSAGE = message;
        END IF;
        RETURN true;
      END $$`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION receiver_assert(boolean, text, text)`);
    await q.query(`DROP INDEX callback_batches_payload_hash_idx`);
  }
}
