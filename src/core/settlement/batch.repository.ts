import { Injectable } from '@nestjs/common';
import { Statement } from '../../platform/database/transaction.js';

/** Result of applying a batch inside a caller's transaction: applied now, or the same body before. */
export type BatchClaim = 'claimed' | 'duplicate';

/**
 * Namespace of the transaction-level advisory lock on a new batch id (`hashtext(batch_id)`) that
 * an inline claim and an inbox append both take first and hold to COMMIT: with replicas of both
 * modes on one database, the second of two deliveries of one new batch id then sees what the
 * first committed (a claim or an inbox row) and answers duplicate or 409, never a second 200
 * for another body (CONTRACT §4 step 4, §5).
 */
export const BATCH_ID_LOCK_NAMESPACE = 727_003;

/** Transaction setting written by {@link BatchRepository.claimStatement}. */
const CLAIMED_SETTING = 'receiver.claimed';

/**
 * SQL condition, true in the statements after {@link BatchRepository.claimStatement} when that
 * claim inserted the batch id (this transaction owns the batch); for the statements sent in the
 * same group as the claim, which must do nothing for a redelivery.
 */
export const CLAIMED_BY_THIS_TRANSACTION = `current_setting('${CLAIMED_SETTING}', true) = 'true'`;

/** SQL of `callback_batches` (CONTRACT §4 step 4). */
@Injectable()
export class BatchRepository {
  /**
   * Takes the advisory lock {@link BATCH_ID_LOCK_NAMESPACE} of `batchId` (waits for a transaction
   * holding it to end). Its own statement: the statements after it see what that one committed.
   */
  batchIdLockStatement(batchId: string): Statement {
    return {
      name: 'cb_batch_lock',
      text: 'SELECT pg_advisory_xact_lock($1, hashtext($2))',
      values: [BATCH_ID_LOCK_NAMESPACE, batchId],
      waitsUntilDeadline: true,
    };
  }

  /**
   * Claims the batch id, in one group with the statements that depend on it: inserts it with its
   * payload hash and `actor` (the key's name of a reconcile, resolution or replay; else null),
   * `ON CONFLICT DO NOTHING` (waiting on a concurrent insert of the id), and notes whether this
   * transaction owns the batch for {@link CLAIMED_BY_THIS_TRANSACTION}. With `checkInbox` (the
   * hot path) it claims nothing while the inbox holds the batch id, whatever its state (a
   * quarantined one is applied only by its replay), or a pending inbox row holds one of
   * `couponCodes` (docs/inbox-mode.md); an inbox worker or a replay claims without it.
   * A batch with `inboxId` takes its bytes from that inbox row (as stored, still compressed) and
   * fails (`callback_batches_payload_check`: a NULL payload only with `payload_expired_at`) unless
   * the row's payload hash is the batch's.
   */
  claimStatement(
    batch: { batchId: string; payloadHash: string; couponCount: number; rawBody: Buffer; inboxId?: string },
    couponCodes: string[],
    options: { checkInbox: boolean; actor?: string | null },
  ): Statement<{ claimed: boolean; inboxPending: boolean }> {
    const fromInbox = batch.inboxId !== undefined;
    return {
      name: fromInbox ? 'cb_claim_from_inbox' : 'cb_claim',
      text: `WITH held AS (
               SELECT $6::boolean AND (
                 EXISTS (SELECT 1 FROM callback_inbox WHERE batch_id = $1)
                 OR EXISTS (SELECT 1 FROM callback_inbox_pending_coupons WHERE coupon_code = ANY($5::text[] COLLATE "C"))
               ) AS inbox_pending
             ), claim AS (
               INSERT INTO callback_batches (batch_id, payload_hash, coupon_count, payload, actor)
               SELECT $1, $2, $3, ${
                 fromInbox
                   ? '(SELECT payload FROM callback_inbox WHERE id = $4::bigint AND payload_hash = $2::char(64))'
                   : '$4'
               }, $7 FROM held WHERE NOT held.inbox_pending
               ON CONFLICT (batch_id) DO NOTHING RETURNING 1
             )
             SELECT set_config('${CLAIMED_SETTING}', (EXISTS (SELECT 1 FROM claim))::text, true)::boolean AS claimed,
                    (SELECT inbox_pending FROM held) AS "inboxPending"`,
      values: [
        batch.batchId,
        batch.payloadHash,
        batch.couponCount,
        batch.inboxId ?? batch.rawBody,
        couponCodes,
        options.checkInbox,
        options.actor ?? null,
      ],
      waitsUntilDeadline: true,
    };
  }

  /**
   * After {@link claimStatement} in the same group: the payload hash stored with a batch id this
   * transaction did not claim (committed by another; one row), no row when it claimed it. Its own
   * statement, so it sees the row a concurrent claim committed while the claim waited.
   */
  storedHashStatement(batchId: string): Statement<{ payload_hash: string }> {
    return {
      name: 'cb_stored_hash',
      text: `SELECT payload_hash::text AS payload_hash FROM callback_batches
              WHERE batch_id = $1 AND NOT ${CLAIMED_BY_THIS_TRANSACTION}`,
      values: [batchId],
    };
  }

  /** The payload hash stored with a committed batch id (one row), or no row. */
  payloadHashStatement(batchId: string): Statement<{ payload_hash: string }> {
    return {
      name: 'cb_payload_hash',
      text: `SELECT payload_hash::text AS payload_hash FROM callback_batches WHERE batch_id = $1`,
      values: [batchId],
    };
  }
}
