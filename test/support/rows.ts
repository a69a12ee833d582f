import { Queryable } from './database.js';

// Row counts read straight from the database, for "written once" and "nothing kept" assertions
// (CONTRACT §4: a batch is one transaction; §7: one financial operation per key).

/** Rows a batch writes under its own id: its registration, its snapshots, its financial operations. */
export interface BatchRows {
  batches: number;
  snapshots: number;
  operations: number;
}

/** {@link BatchRows}, with the rows of the batch's coupons too (whoever wrote them). */
export interface BatchAndCouponRows extends BatchRows {
  bets: number;
  /** Coupons among `codes` that carry callback state (a status or a last batch). */
  touched_coupons: number;
}

/**
 * Counts the rows written for `batchId`; with `codes` (its coupons) also their snapshots, bets and
 * callback state, whichever batch wrote them, so that "nothing of the batch kept" covers them.
 */
export async function rowsOfBatch(db: Queryable, batchId: string): Promise<BatchRows>;
export async function rowsOfBatch(
  db: Queryable,
  batchId: string,
  codes: string[],
): Promise<BatchAndCouponRows>;
export async function rowsOfBatch(db: Queryable, batchId: string, codes?: string[]): Promise<BatchRows> {
  if (codes === undefined) {
    const { rows } = await db.query<BatchRows>(
      `SELECT (SELECT count(*)::int FROM callback_batches WHERE batch_id = $1) AS batches,
              (SELECT count(*)::int FROM coupon_snapshots WHERE batch_id = $1) AS snapshots,
              (SELECT count(*)::int FROM financial_operations WHERE batch_id = $1) AS operations`,
      [batchId],
    );
    return rows[0];
  }
  const { rows } = await db.query<BatchAndCouponRows>(
    `SELECT (SELECT count(*)::int FROM callback_batches WHERE batch_id = $1) AS batches,
            (SELECT count(*)::int FROM coupon_snapshots WHERE batch_id = $1 OR coupon_code = ANY($2)) AS snapshots,
            (SELECT count(*)::int FROM bets WHERE last_batch_id = $1 OR coupon_code = ANY($2)) AS bets,
            (SELECT count(*)::int FROM financial_operations WHERE batch_id = $1) AS operations,
            (SELECT count(*)::int FROM coupons WHERE coupon_code = ANY($2) AND (status IS NOT NULL OR last_batch_id IS NOT NULL)) AS touched_coupons`,
    [batchId, codes],
  );
  return rows[0];
}

/** Number of financial operations with the operation key `key` (CONTRACT §7: never more than 1). */
export async function opCount(db: Queryable, key: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM financial_operations WHERE operation_key = $1`,
    [key],
  );
  return rows[0].n;
}
