import { Injectable } from '@nestjs/common';
import { parseExactJson } from '../../platform/common/exact-json.js';
import { RecentSet } from '../../platform/common/recent-set.js';
import { Statement, Tx } from '../../platform/database/transaction.js';
import { CouponSettlementState, SettlementOperation } from '../settlement-rules/settlement.types.js';

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

/** The coupon as `GET /coupons/{coupon_code}` reads it, before shaping. */
export interface CouponRow extends LockedCoupon {
  stake: string | null;
  registeredAt: Date | null;
  registeredBy: string | null;
}

const COUPON_COLUMNS = `coupon_code AS "couponCode", account_id AS "accountId", currency,
  registration_hash AS "registrationHash", status, real_win::text AS "realWin",
  settlement_generation AS generation, generation_settled AS "generationSettled",
  settled_amount::text AS "settledAmount", recalculation_open AS "recalculationOpen",
  needs_review AS "needsReview", review_reason AS "reviewReason"`;

/** Filters of {@link CouponRepository.list} (all optional) and the keyset position. */
export interface CouponFilter {
  needsReview?: boolean;
  reviewReason?: string;
  unallocated?: boolean;
  status?: number;
  currency?: string;
  updatedFrom?: Date;
  updatedTo?: Date;
  /** The last row of the previous page: its `updated_at` (ISO 8601 with microseconds) and code. */
  after?: { updatedAt: string; couponCode: string };
  limit: number;
}

/** A coupon as `GET /coupons` lists it, before shaping; `cursorAt` is `updated_at` with microseconds. */
export interface CouponListRow {
  couponCode: string;
  accountId: string | null;
  stake: string | null;
  currency: string | null;
  status: number | null;
  realWin: string | null;
  generation: number;
  generationSettled: boolean;
  recalculationOpen: boolean;
  needsReview: boolean;
  reviewReason: string | null;
  lastBatchId: string | null;
  createdAt: Date;
  updatedAt: Date;
  cursorAt: string;
}

/** One stored snapshot of a coupon, with the key that applied its batch (null: SportAPI). */
export interface SnapshotHistoryRow {
  id: string;
  batchId: string;
  status: number;
  realWin: string | null;
  applied: boolean;
  transition: string;
  generation: number;
  decided: SettlementOperation[];
  receivedAt: Date;
  actor: string | null;
}

/** `updated_at` as the lists' cursors carry it: UTC, microseconds. */
export const CURSOR_TIME = `'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'`;

/** What one claimed batch writes besides money (CONTRACT §4 step 5, §6), for {@link CouponRepository.applyBatchStatement}. */
export interface BatchWrites {
  batchId: string;
  /**
   * One per coupon; `position` is its 1-based index in the body's `coupons` array,
   * `eventStatuses` the validated status of each of its events in body order (the bets' status
   * comes from here, never from the payload's JSON text: `2.0` is a valid status 2, CONTRACT §3).
   */
  snapshots: (Omit<SnapshotRow, 'payload'> & { position: number; eventStatuses: number[] })[];
  /**
   * The coupons' payloads in body order as JSON text (lossless writer), or null to take them
   * from the batch's stored body (`callback_batches.payload`, written by the claim in this
   * transaction): only for bodies whose jsonb form holds the very same keys and strings.
   */
  payloadsJson: string | null;
  /** Settlement states the batch changed. */
  states: (CouponSettlementState & { couponCode: string })[];
}

/** The `jsonb_to_recordset` input of changed settlement states. */
function statesJson(states: (CouponSettlementState & { couponCode: string })[]): string {
  return JSON.stringify(
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
  );
}

/** How many coupon codes a process remembers as committed (a few MB). */
const COMMITTED_COUPONS = 100_000;

/** SQL of coupons, their snapshot history and bets (CONTRACT §4 step 5, §6). */
@Injectable()
export class CouponRepository {
  /**
   * Codes of coupons this process saw committed, most recent last: a coupon row is never deleted,
   * so a batch of only such coupons needs no insert of missing rows before its lock.
   */
  private readonly committed = new RecentSet(COMMITTED_COUPONS);

  /**
   * The statements that lock `couponCodes` for a batch ({@link lockStatement} as `locked`), after
   * inserting the missing ones ({@link insertMissingStatement} as `coupons`) unless this process
   * saw every one of them committed. Give the rows to {@link allLocked}.
   */
  lockGroup(
    couponCodes: string[],
    onlyIf?: string,
  ): { coupons?: Statement; locked: Statement<LockedCoupon> } {
    const locked = this.lockStatement(couponCodes, onlyIf);
    return this.committed.hasAll(couponCodes)
      ? { locked }
      : { coupons: this.insertMissingStatement(couponCodes, onlyIf), locked };
  }

  /**
   * The rows of {@link lockGroup}, or, when a coupon taken for committed has no row (a database
   * restored under a running process), those of the insert and lock sent again in `tx`. Once `tx`
   * has committed, the coupons are remembered as committed.
   */
  async allLocked(tx: Tx, couponCodes: string[], rows: LockedCoupon[]): Promise<LockedCoupon[]> {
    tx.afterCommit(() => couponCodes.forEach((code) => this.committed.add(code)));
    if (rows.length === couponCodes.length) return rows;
    for (const code of couponCodes) this.committed.delete(code);
    return this.lockForBatch(tx, couponCodes);
  }

  /**
   * Inserts, in ascending `coupon_code` order, the coupons among `couponCodes` that have no row
   * yet; only when the SQL condition `onlyIf` holds, when given (the hot path sends this right
   * after its batch claim in the same group, see {@link BatchRepository.claimStatement}). The
   * coupons already there are left out by an index lookup first (half the cost of letting the
   * insert find each conflict); one inserted meanwhile by another transaction is still a conflict
   * that the insert skips.
   */
  insertMissingStatement(couponCodes: string[], onlyIf?: string): Statement {
    return {
      name: onlyIf ? 'cp_insert_missing_if' : 'cp_insert_missing',
      text: `INSERT INTO coupons (coupon_code)
             SELECT code FROM unnest($1::text[]) AS code
             WHERE ${onlyIf ? `${onlyIf} AND ` : ''}NOT EXISTS (SELECT 1 FROM coupons c WHERE c.coupon_code = code)
             ORDER BY code COLLATE "C"
             ON CONFLICT (coupon_code) DO NOTHING`,
      values: [couponCodes],
    };
  }

  /**
   * Row-locks the coupons `FOR UPDATE` in ascending `coupon_code` order (bytewise), the fixed lock
   * order that keeps batches sharing coupons free of deadlocks; locking does not rewrite the rows.
   * Only when the SQL condition `onlyIf` holds, when given. Rows as {@link LockedCoupon}.
   */
  lockStatement(couponCodes: string[], onlyIf?: string): Statement<LockedCoupon> {
    return {
      name: onlyIf ? 'cp_lock_if' : 'cp_lock',
      text: `SELECT ${COUPON_COLUMNS} FROM coupons
             WHERE coupon_code = ANY($1::text[]) ${onlyIf ? `AND ${onlyIf}` : ''}
             ORDER BY coupon_code COLLATE "C" FOR UPDATE`,
      values: [couponCodes],
    };
  }

  /**
   * Everything a claimed batch writes besides money, in one statement: one snapshot per coupon
   * (history, CONTRACT §6), the settlement states the batch changed (`last_batch_id`: the batch
   * that last changed it), and the bets of applied snapshots, taken from the stored coupon
   * payloads (upsert by `coupon_code`, `uuid` in ascending order; a bet whose status and payload
   * are unchanged is not rewritten). The coupons must be locked by this transaction.
   */
  applyBatchStatement(w: BatchWrites): Statement {
    // $1 batch id, $2 snapshots, $3 the sent payloads (or the states), then (sent payloads) the
    // states, and the changed coupons' codes: `push` answers each one's number.
    const values: unknown[] = [
      w.batchId,
      JSON.stringify(
        w.snapshots.map((s) => ({
          coupon_code: s.couponCode,
          position: s.position,
          status: s.status,
          real_win: s.realWin,
          applied: s.applied,
          transition: s.transition,
          generation: s.generation,
          operations: s.operations,
          event_statuses: s.eventStatuses,
        })),
      ),
      w.payloadsJson ?? statesJson(w.states),
    ];
    const statesParam = w.payloadsJson === null ? 3 : values.push(statesJson(w.states));
    const codesParam = values.push(w.states.map((st) => st.couponCode));
    return {
      name: w.payloadsJson === null ? 'cp_apply_stored' : 'cp_apply_sent',
      genericPlan: true,
      text: `WITH meta AS MATERIALIZED (
               SELECT * FROM jsonb_to_recordset($2::jsonb) AS m(coupon_code text, position int, status int,
                 real_win numeric, applied boolean, transition text, generation int, operations jsonb,
                 event_statuses jsonb)
             ), body AS MATERIALIZED (
               SELECT p.value AS payload, p.ord FROM jsonb_array_elements(${
                 w.payloadsJson === null
                   ? `(SELECT convert_from(payload, 'UTF8')::jsonb -> 'coupons' FROM callback_batches WHERE batch_id = $1)`
                   : '$3::jsonb'
               }) WITH ORDINALITY AS p(value, ord)
             ), snap AS (
               INSERT INTO coupon_snapshots (coupon_code, batch_id, status, real_win, applied, transition, generation, operations, payload)
               SELECT m.coupon_code, $1, m.status, m.real_win, m.applied, m.transition, m.generation, m.operations, b.payload
               FROM meta m JOIN body b ON b.ord = m.position
             ), st AS (
               UPDATE coupons c SET status = r.status, real_win = r.real_win, settlement_generation = r.generation,
                 generation_settled = r.generation_settled, settled_amount = r.settled_amount,
                 recalculation_open = r.recalculation_open, needs_review = r.needs_review,
                 review_reason = r.review_reason, last_batch_id = $1, updated_at = now()
               FROM jsonb_to_recordset($${statesParam}::jsonb) AS r(coupon_code text, status int,
                 real_win numeric, generation int, generation_settled boolean, settled_amount numeric,
                 recalculation_open boolean, needs_review boolean, review_reason text)
               -- The codes as an array too: an index scan however few coupons the generic plan saw.
               WHERE c.coupon_code = r.coupon_code AND c.coupon_code = ANY ($${codesParam}::text[])
             ), bet AS (
               INSERT INTO bets (coupon_code, uuid, status, payload, last_batch_id)
               SELECT m.coupon_code, e.value ->> 'uuid', (m.event_statuses ->> (e.ord::int - 1))::int, e.value, $1
               FROM meta m JOIN body b ON b.ord = m.position
               CROSS JOIN LATERAL jsonb_array_elements(b.payload -> 'events') WITH ORDINALITY AS e(value, ord)
               WHERE m.applied
               ORDER BY m.coupon_code COLLATE "C", (e.value ->> 'uuid') COLLATE "C"
               ON CONFLICT (coupon_code, uuid) DO UPDATE
                 SET status = EXCLUDED.status, payload = EXCLUDED.payload, last_batch_id = EXCLUDED.last_batch_id, updated_at = now()
                 WHERE (bets.status, bets.payload) IS DISTINCT FROM (EXCLUDED.status, EXCLUDED.payload)
             )
             SELECT count(*)::int AS snapshots FROM meta`,
      values,
    };
  }

  /**
   * Creates the coupons that do not exist yet, then row-locks all of them (see
   * {@link lockStatement}), in one round trip.
   * @returns the state of each coupon before the caller's changes, in ascending `coupon_code` order.
   */
  async lockForBatch(tx: Tx, couponCodes: string[]): Promise<LockedCoupon[]> {
    const { locked } = await tx.send({
      insert: this.insertMissingStatement(couponCodes),
      locked: this.lockStatement(couponCodes),
    });
    return locked.rows;
  }

  /** Locks one coupon, creating its row if no callback has arrived yet. */
  async lockOne(tx: Tx, couponCode: string): Promise<LockedCoupon> {
    return (await this.lockForBatch(tx, [couponCode]))[0];
  }

  /** Records a coupon's registration (account, stake, currency, hash of the request, the key's name). */
  registerStatement(
    couponCode: string,
    reg: {
      accountId: string;
      stake: string;
      currency: string;
      registrationHash: string;
      registeredBy: string;
    },
  ): Statement {
    return {
      text: `UPDATE coupons SET account_id = $2, stake = $3, currency = $4, registration_hash = $5,
               registered_at = now(), registered_by = $6, updated_at = now()
             WHERE coupon_code = $1`,
      values: [couponCode, reg.accountId, reg.stake, reg.currency, reg.registrationHash, reg.registeredBy],
    };
  }

  /** Sets a locked coupon's settlement state (a registration's `amount_precision` flag). */
  stateStatement(couponCode: string, state: CouponSettlementState): Statement {
    return {
      text: `UPDATE coupons SET generation_settled = $2, settled_amount = $3, needs_review = $4,
               review_reason = $5, updated_at = now()
             WHERE coupon_code = $1`,
      values: [
        couponCode,
        state.generationSettled,
        state.settledAmount,
        state.needsReview,
        state.reviewReason,
      ],
    };
  }

  /** Operations decided for a coupon's applied snapshots, oldest first (deferred while unallocated). */
  decidedOperationsStatement(
    couponCode: string,
  ): Statement<{ batchId: string; operations: SettlementOperation[] }> {
    return {
      text: `SELECT batch_id AS "batchId", operations FROM coupon_snapshots
             WHERE coupon_code = $1 AND jsonb_array_length(operations) > 0 ORDER BY id`,
      values: [couponCode],
    };
  }

  /** Coupons flagged `needs_review` and unallocated ones, counted over their partial indexes. */
  async flagCounts(tx: Tx): Promise<{ needingReview: number; unallocated: number }> {
    const { rows } = await tx.query<{ needingReview: number; unallocated: number }>(
      `SELECT (SELECT count(*) FROM coupons WHERE needs_review)::int AS "needingReview",
              (SELECT count(*) FROM coupons WHERE account_id IS NULL)::int AS unallocated`,
    );
    return rows[0];
  }

  /**
   * Coupons matching `f`, most recently changed first (`updated_at`, then `coupon_code`, both
   * descending), at most `f.limit`. Only the filters given are in the statement, so each plan uses
   * its index: `coupons_updated_idx`, or the partial ones of flagged and unallocated coupons.
   */
  async list(tx: Tx, f: CouponFilter): Promise<CouponListRow[]> {
    const where: string[] = [];
    const values: unknown[] = [];
    const param = (v: unknown) => `$${values.push(v)}`;
    if (f.needsReview !== undefined) where.push(f.needsReview ? 'needs_review' : 'NOT needs_review');
    if (f.unallocated !== undefined) where.push(`account_id IS ${f.unallocated ? '' : 'NOT '}NULL`);
    if (f.reviewReason !== undefined) where.push(`review_reason = ${param(f.reviewReason)}`);
    if (f.status !== undefined) where.push(`status = ${param(f.status)}`);
    if (f.currency !== undefined) where.push(`currency = ${param(f.currency)}`);
    if (f.updatedFrom) where.push(`updated_at >= ${param(f.updatedFrom)}`);
    if (f.updatedTo) where.push(`updated_at < ${param(f.updatedTo)}`);
    if (f.after) {
      const at = param(f.after.updatedAt);
      where.push(`updated_at <= ${at}::timestamptz`);
      where.push(`(updated_at, coupon_code) < (${at}::timestamptz, ${param(f.after.couponCode)})`);
    }
    const { rows } = await tx.query<CouponListRow>(
      `SELECT coupon_code AS "couponCode", account_id AS "accountId", stake::text AS stake, currency, status,
              real_win::text AS "realWin", settlement_generation AS generation,
              generation_settled AS "generationSettled", recalculation_open AS "recalculationOpen",
              needs_review AS "needsReview", review_reason AS "reviewReason", last_batch_id AS "lastBatchId",
              created_at AS "createdAt", updated_at AS "updatedAt",
              to_char(updated_at AT TIME ZONE 'UTC', ${CURSOR_TIME}) AS "cursorAt"
         FROM coupons ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
        ORDER BY updated_at DESC, coupon_code DESC LIMIT ${param(f.limit)}`,
      values,
    );
    return rows;
  }

  /**
   * A coupon's snapshots, newest first (by id), at most `limit` with an id below `before`, each
   * with the key that applied its batch (`callback_batches.actor`).
   */
  async history(
    tx: Tx,
    couponCode: string,
    before: string | undefined,
    limit: number,
  ): Promise<SnapshotHistoryRow[]> {
    const { rows } = await tx.query<SnapshotHistoryRow>(
      `SELECT s.id::text, s.batch_id AS "batchId", s.status, s.real_win::text AS "realWin", s.applied, s.transition,
              s.generation, s.operations AS decided, s.received_at AS "receivedAt", b.actor
         FROM coupon_snapshots s LEFT JOIN callback_batches b ON b.batch_id = s.batch_id
        WHERE s.coupon_code = $1 AND ($2::bigint IS NULL OR s.id < $2)
        ORDER BY s.id DESC LIMIT $3`,
      [couponCode, before ?? null, limit],
    );
    return rows;
  }

  /** A coupon with its registration, or undefined. */
  async find(tx: Tx, couponCode: string): Promise<CouponRow | undefined> {
    const { rows } = await tx.query<CouponRow>(
      `SELECT ${COUPON_COLUMNS}, stake::text AS stake, registered_at AS "registeredAt",
              registered_by AS "registeredBy"
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
