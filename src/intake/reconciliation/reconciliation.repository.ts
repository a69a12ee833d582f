import { Injectable } from '@nestjs/common';
import { CallbackBatchEntity } from '../../core/settlement/entities/callback-batch.entity.js';
import { CouponSnapshotEntity } from '../../core/coupons/entities/coupon-snapshot.entity.js';
import { Tx } from '../../platform/database/transaction.js';
import { CouponResolutionEntity } from './entities/coupon-resolution.entity.js';
import { SettlementOperation } from '../../core/settlement-rules/settlement.types.js';

/** A stored operator resolution (`coupon_resolutions`), amounts as decimal strings. */
export interface ResolutionRow {
  idempotencyKey: string;
  couponCode: string;
  requestHash: string;
  status: number;
  realWin: string;
  reason: string;
  resolvedBy: string;
  batchId: string;
  transition: string;
  generation: number;
  operations: SettlementOperation[];
  resolvedAt: Date;
  /** Name of the partner API key that made it; null for rows from before keys had names. */
  actor: string | null;
}

/** What a synthetic batch decided for its one coupon (from the snapshot history). */
export interface SyntheticOutcome {
  transition: string;
  generation: number;
  operations: SettlementOperation[];
}

/** Queries of the polling fallback and reconciliation (CONTRACT §9). */
@Injectable()
export class ReconciliationRepository {
  /**
   * Coupons the scheduled reconciliation reads: flagged `needs_review`, or unsettled (current
   * generation not settled) and unchanged for `afterMs`; either way not read in the last `afterMs`.
   * Never-read coupons first, then the longest unchanged. At most `limit` codes.
   */
  async candidates(tx: Tx, afterMs: number, limit: number): Promise<string[]> {
    const { rows } = await tx.query<{ code: string }>(
      `SELECT coupon_code AS code FROM coupons
       WHERE (needs_review OR (NOT generation_settled AND updated_at <= now() - $1 * interval '1 millisecond'))
         AND (last_reconciled_at IS NULL OR last_reconciled_at <= now() - $1 * interval '1 millisecond')
       ORDER BY last_reconciled_at NULLS FIRST, updated_at, coupon_code COLLATE "C"
       LIMIT $2`,
      [afterMs, limit],
    );
    return rows.map((r) => r.code);
  }

  /** Records that a coupon was read from SportAPI now (spaces the scheduled reads). */
  async markReconciled(tx: Tx, couponCode: string): Promise<void> {
    await tx.query(`UPDATE coupons SET last_reconciled_at = now() WHERE coupon_code = $1`, [couponCode]);
  }

  /**
   * The batch of the coupon's latest snapshot (its history, CONTRACT §6), or undefined when no
   * batch has touched it: what a coupon read is compared with to know whether anything changed
   * since the same read was applied.
   */
  async latestSnapshotBatch(tx: Tx, couponCode: string): Promise<string | undefined> {
    const latest = await tx.manager.findOne(CouponSnapshotEntity, {
      select: { batchId: true },
      where: { couponCode },
      order: { id: 'DESC' },
    });
    return latest?.batchId;
  }

  /** Whether the batch id was claimed (`callback_batches`). */
  batchExists(tx: Tx, batchId: string): Promise<boolean> {
    return tx.manager.existsBy(CallbackBatchEntity, { batchId });
  }

  /** What the synthetic batch `batchId` decided for `couponCode`, or undefined. */
  async outcome(tx: Tx, batchId: string, couponCode: string): Promise<SyntheticOutcome | undefined> {
    const snapshot = await tx.manager.findOne(CouponSnapshotEntity, {
      select: { transition: true, generation: true, operations: true },
      where: { batchId, couponCode },
    });
    return snapshot
      ? {
          transition: snapshot.transition,
          generation: snapshot.generation,
          operations: snapshot.operations as SettlementOperation[],
        }
      : undefined;
  }

  /** A resolution by its Idempotency-Key, or undefined. */
  async findResolution(tx: Tx, idempotencyKey: string): Promise<ResolutionRow | undefined> {
    const row = await tx.manager.findOneBy(CouponResolutionEntity, { idempotencyKey });
    return row ? { ...row, operations: row.operations as SettlementOperation[] } : undefined;
  }

  /**
   * Inserts a resolution; false when its Idempotency-Key exists (nothing inserted, the
   * transaction is not aborted).
   */
  async insertResolution(tx: Tx, row: Omit<ResolutionRow, 'resolvedAt'>): Promise<boolean> {
    const { rowCount } = await tx.query(
      `INSERT INTO coupon_resolutions (idempotency_key, coupon_code, request_hash, status, real_win, reason,
         resolved_by, batch_id, transition, generation, operations, actor)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb, $12)
       ON CONFLICT (idempotency_key) DO NOTHING`,
      [
        row.idempotencyKey,
        row.couponCode,
        row.requestHash,
        row.status,
        row.realWin,
        row.reason,
        row.resolvedBy,
        row.batchId,
        row.transition,
        row.generation,
        JSON.stringify(row.operations),
        row.actor,
      ],
    );
    return rowCount === 1;
  }
}
