import { Injectable } from '@nestjs/common';
import { Tx } from '../database/transaction.js';
import { SettlementOperation } from '../settlement/settlement.types.js';

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
}

/** What a synthetic batch decided for its one coupon (from the snapshot history). */
export interface SyntheticOutcome {
  transition: string;
  generation: number;
  operations: SettlementOperation[];
}

const RESOLUTION_COLUMNS = `idempotency_key AS "idempotencyKey", coupon_code AS "couponCode",
  request_hash AS "requestHash", status, real_win::text AS "realWin", reason, resolved_by AS "resolvedBy",
  batch_id AS "batchId", transition, generation, operations, resolved_at AS "resolvedAt"`;

/** SQL of the polling fallback and reconciliation (CONTRACT §9). */
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
    const { rows } = await tx.query<{ batchId: string }>(
      `SELECT batch_id AS "batchId" FROM coupon_snapshots WHERE coupon_code = $1 ORDER BY id DESC LIMIT 1`,
      [couponCode],
    );
    return rows[0]?.batchId;
  }

  /** Whether the batch id was claimed (`callback_batches`). */
  async batchExists(tx: Tx, batchId: string): Promise<boolean> {
    const { rowCount } = await tx.query(`SELECT 1 FROM callback_batches WHERE batch_id = $1`, [batchId]);
    return (rowCount ?? 0) > 0;
  }

  /** What the synthetic batch `batchId` decided for `couponCode`, or undefined. */
  async outcome(tx: Tx, batchId: string, couponCode: string): Promise<SyntheticOutcome | undefined> {
    const { rows } = await tx.query<SyntheticOutcome>(
      `SELECT transition, generation, operations FROM coupon_snapshots WHERE batch_id = $1 AND coupon_code = $2`,
      [batchId, couponCode],
    );
    return rows[0];
  }

  /** A resolution by its Idempotency-Key, or undefined. */
  async findResolution(tx: Tx, idempotencyKey: string): Promise<ResolutionRow | undefined> {
    const { rows } = await tx.query<ResolutionRow>(
      `SELECT ${RESOLUTION_COLUMNS} FROM coupon_resolutions WHERE idempotency_key = $1`,
      [idempotencyKey],
    );
    return rows[0];
  }

  /**
   * Inserts a resolution; false when its Idempotency-Key exists (nothing inserted, the
   * transaction is not aborted).
   */
  async insertResolution(tx: Tx, row: Omit<ResolutionRow, 'resolvedAt'>): Promise<boolean> {
    const { rowCount } = await tx.query(
      `INSERT INTO coupon_resolutions (idempotency_key, coupon_code, request_hash, status, real_win, reason,
         resolved_by, batch_id, transition, generation, operations)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb)
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
      ],
    );
    return rowCount === 1;
  }
}
