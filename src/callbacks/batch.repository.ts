import { Injectable } from '@nestjs/common';
import { Tx } from '../database/transaction.js';

/** Result of claiming a batch id: new, already committed with the same body, or with another. */
export type BatchClaim = 'claimed' | 'duplicate' | 'conflict';

/** SQL of `callback_batches` (CONTRACT §4 step 4). */
@Injectable()
export class BatchRepository {
  /**
   * Inserts the batch id with its payload hash under the primary key. A concurrent transaction
   * inserting the same id makes this wait on the unique index (until the deadline, not just the
   * lock timeout); once it commits this returns
   * `duplicate` (same hash) or `conflict`, never a unique-violation error.
   */
  async claim(
    tx: Tx,
    batch: { batchId: string; payloadHash: string; couponCount: number; rawBody: Buffer },
  ): Promise<BatchClaim> {
    const inserted = await tx.queryWaitingUntilDeadline(
      `INSERT INTO callback_batches (batch_id, payload_hash, coupon_count, payload)
       VALUES ($1, $2, $3, $4) ON CONFLICT (batch_id) DO NOTHING RETURNING batch_id`,
      [batch.batchId, batch.payloadHash, batch.couponCount, batch.rawBody],
    );
    if (inserted.rowCount === 1) return 'claimed';
    const { rows } = await tx.query<{ payload_hash: string }>(
      'SELECT payload_hash FROM callback_batches WHERE batch_id = $1',
      [batch.batchId],
    );
    return rows[0]?.payload_hash === batch.payloadHash ? 'duplicate' : 'conflict';
  }
}
