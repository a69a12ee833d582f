import { Injectable } from '@nestjs/common';
import { parseExactJson, stringifyExactJson } from '../common/exact-json.js';
import { Tx } from '../database/transaction.js';
import { CouponSettlementState, SettlementOperation } from '../settlement/settlement.types.js';

/** A coupon row locked for a batch or a registration: registration and settlement state. */
export interface LockedCoupon extends CouponSettlementState {
  couponCode: string;
  accountId: string | null;
  currency: string | null;
  registrationHash: string | null;
}

/** A snapshot to store in a coupon's history. */
export interface SnapshotRow {
  couponCode: string;
  status: number;
  realWin: string | null;
  applied: boolean;
  transition: string;
  generation: number;
  operations: SettlementOperation[];
  payload: unknown;
}

/** A bet to upsert by (`coupon_code`, `uuid`); `payload` is the event as it came. */
export interface BetRow {
  couponCode: string;
  uuid: string;
  status: number;
  payload: unknown;
}

/** The coupon as `GET /coupons/{coupon_code}` reads it, before shaping. */
export interface CouponRow extends LockedCoupon {
  stake: string | null;
  registeredAt: Date | null;
}

const COUPON_COLUMNS = `coupon_code AS "couponCode", account_id AS "accountId", currency,
  registration_hash AS "registrationHash", status, real_win::text AS "realWin",
  settlement_generation AS generation, generation_settled AS "generationSettled",
  settled_amount::text AS "settledAmount", recalculation_open AS "recalculationOpen",
  needs_review AS "needsReview", review_reason AS "reviewReason"`;

/** SQL of coupons, their snapshot history and bets (CONTRACT §4 step 5, §6). */
@Injectable()
export class CouponRepository {
  /**
   * Creates the coupons of a batch that do not exist yet, then row-locks all of them `FOR UPDATE`
   * in ascending `coupon_code` order (bytewise): the fixed lock order that keeps batches sharing
   * coupons free of deadlocks. Locking does not rewrite the rows (unlike an upsert's no-op update).
   * @returns the state of each coupon before this batch, in ascending `coupon_code` order.
   */
  async lockForBatch(tx: Tx, couponCodes: string[]): Promise<LockedCoupon[]> {
    await tx.query(
      `INSERT INTO coupons (coupon_code)
       SELECT code FROM unnest($1::text[]) AS code ORDER BY code COLLATE "C"
       ON CONFLICT (coupon_code) DO NOTHING`,
      [couponCodes],
    );
    const { rows } = await tx.query<LockedCoupon>(
      `SELECT ${COUPON_COLUMNS} FROM coupons
       WHERE coupon_code = ANY($1::text[]) ORDER BY coupon_code COLLATE "C" FOR UPDATE`,
      [couponCodes],
    );
    return rows;
  }

  /** Locks one coupon for registration, creating its row if no callback has arrived yet. */
  async lockOne(tx: Tx, couponCode: string): Promise<LockedCoupon> {
    return (await this.lockForBatch(tx, [couponCode]))[0];
  }

  /** Writes the settlement state of the coupons a batch changed (`last_batch_id`: the batch that last changed it). */
  async saveStates(
    tx: Tx,
    batchId: string,
    states: (CouponSettlementState & { couponCode: string })[],
  ): Promise<void> {
    if (!states.length) return;
    await tx.query(
      `UPDATE coupons c SET status = r.status, real_win = r.real_win, settlement_generation = r.generation,
         generation_settled = r.generation_settled, settled_amount = r.settled_amount,
         recalculation_open = r.recalculation_open, needs_review = r.needs_review,
         review_reason = r.review_reason, last_batch_id = $1, updated_at = now()
       FROM jsonb_to_recordset($2::jsonb) AS r(coupon_code text, status int, real_win numeric, generation int,
         generation_settled boolean, settled_amount numeric, recalculation_open boolean, needs_review boolean,
         review_reason text)
       WHERE c.coupon_code = r.coupon_code`,
      [
        batchId,
        JSON.stringify(
          states.map((s) => ({
            coupon_code: s.couponCode,
            status: s.status,
            real_win: s.realWin,
            generation: s.generation,
            generation_settled: s.generationSettled,
            settled_amount: s.settledAmount,
            recalculation_open: s.recalculationOpen,
            needs_review: s.needsReview,
            review_reason: s.reviewReason,
          })),
        ),
      ],
    );
  }

  /** Appends one snapshot per coupon of the batch to the coupons' history. */
  async insertSnapshots(tx: Tx, batchId: string, snapshots: SnapshotRow[], lossless = true): Promise<void> {
    if (!snapshots.length) return;
    await tx.query(
      `INSERT INTO coupon_snapshots (coupon_code, batch_id, status, real_win, applied, transition, generation, operations, payload)
       SELECT r.coupon_code, $1, r.status, r.real_win, r.applied, r.transition, r.generation, r.operations, r.payload
       FROM jsonb_to_recordset($2::jsonb) AS r(coupon_code text, status int, real_win numeric, applied boolean,
         transition text, generation int, operations jsonb, payload jsonb)`,
      [
        batchId,
        stringifyExactJson(
          snapshots.map((s) => ({
            coupon_code: s.couponCode,
            status: s.status,
            real_win: s.realWin,
            applied: s.applied,
            transition: s.transition,
            generation: s.generation,
            operations: s.operations,
            payload: s.payload,
          })),
          lossless,
        ),
      ],
    );
  }

  /**
   * Inserts or updates bets by (`coupon_code`, `uuid`) from applied snapshots; a bet whose status
   * and payload are unchanged is not rewritten (`last_batch_id` is the batch that last changed it).
   */
  async upsertBets(tx: Tx, batchId: string, bets: BetRow[], lossless = true): Promise<void> {
    if (!bets.length) return;
    await tx.query(
      `INSERT INTO bets (coupon_code, uuid, status, payload, last_batch_id)
       SELECT r.coupon_code, r.uuid, r.status, r.payload, $1
       FROM jsonb_to_recordset($2::jsonb) AS r(coupon_code text, uuid text, status int, payload jsonb)
       ORDER BY r.coupon_code COLLATE "C", r.uuid COLLATE "C"
       ON CONFLICT (coupon_code, uuid) DO UPDATE
         SET status = EXCLUDED.status, payload = EXCLUDED.payload, last_batch_id = EXCLUDED.last_batch_id, updated_at = now()
         WHERE (bets.status, bets.payload) IS DISTINCT FROM (EXCLUDED.status, EXCLUDED.payload)`,
      [
        batchId,
        stringifyExactJson(
          bets.map((b) => ({
            coupon_code: b.couponCode,
            uuid: b.uuid,
            status: b.status,
            payload: b.payload,
          })),
          lossless,
        ),
      ],
    );
  }

  /** Records a coupon's registration (account, stake, currency, hash of the request). */
  async register(
    tx: Tx,
    couponCode: string,
    reg: { accountId: string; stake: string; currency: string; registrationHash: string },
  ): Promise<void> {
    await tx.query(
      `UPDATE coupons SET account_id = $2, stake = $3, currency = $4, registration_hash = $5,
         registered_at = now(), updated_at = now()
       WHERE coupon_code = $1`,
      [couponCode, reg.accountId, reg.stake, reg.currency, reg.registrationHash],
    );
  }

  /** Operations decided for a coupon's applied snapshots, oldest first (deferred while unallocated). */
  async decidedOperations(
    tx: Tx,
    couponCode: string,
  ): Promise<{ batchId: string; operations: SettlementOperation[] }[]> {
    const { rows } = await tx.query<{ batchId: string; operations: SettlementOperation[] }>(
      `SELECT batch_id AS "batchId", operations FROM coupon_snapshots
       WHERE coupon_code = $1 AND jsonb_array_length(operations) > 0 ORDER BY id`,
      [couponCode],
    );
    return rows;
  }

  /** A coupon with its registration, or undefined. */
  async find(tx: Tx, couponCode: string): Promise<CouponRow | undefined> {
    const { rows } = await tx.query<CouponRow>(
      `SELECT ${COUPON_COLUMNS}, stake::text AS stake, registered_at AS "registeredAt"
       FROM coupons WHERE coupon_code = $1`,
      [couponCode],
    );
    return rows[0];
  }

  /** A coupon's bets: the stored event payload with its current `uuid` and `status`. */
  async bets(tx: Tx, couponCode: string): Promise<Record<string, unknown>[]> {
    // As text: pg would parse jsonb with JSON.parse and round big or precise numbers.
    const { rows } = await tx.query<{ event: string }>(
      `SELECT (payload || jsonb_build_object('uuid', uuid, 'status', status))::text AS event
       FROM bets WHERE coupon_code = $1 ORDER BY created_at, uuid COLLATE "C"`,
      [couponCode],
    );
    return rows.map((r) => parseExactJson(r.event).value as Record<string, unknown>);
  }
}
