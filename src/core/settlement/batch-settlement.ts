import { stringifyExactJson } from '../../platform/common/exact-json.js';
import type { BatchWrites, LockedCoupon } from '../coupons/coupon.repository.js';
import type { Posting } from '../ledger/ledger.types.js';
import { couponOperationKey } from '../ledger/postings.js';
import type { CouponTransition } from './settlement-hook.js';
import { settlementPostings } from '../settlement-rules/settlement-postings.js';
import { decideSettlement, sameSettlementState } from '../settlement-rules/decide-settlement.js';
import { SnapshotSource, StatusKind, TransitionName } from '../settlement-rules/settlement.types.js';
import type { ParsedBatch, ParsedCoupon } from './parsed-batch.js';

/** A coupon of a batch with its 1-based `position` in the body's `coupons` array. */
export interface OrderedCoupon {
  coupon: ParsedCoupon;
  position: number;
}

/** Ascending bytewise order of coupon codes (the lock order; `COLLATE "C"` in SQL). */
const byCode = (a: OrderedCoupon, b: OrderedCoupon) =>
  a.coupon.couponCode < b.coupon.couponCode ? -1 : a.coupon.couponCode > b.coupon.couponCode ? 1 : 0;

/**
 * The batch's coupons in the lock order (ascending `coupon_code`), each with its position. The
 * coupons are wrapped, not copied: a spread copy of 100 payload-bearing coupons cost more than
 * the sort.
 */
export function orderedCoupons(batch: ParsedBatch): OrderedCoupon[] {
  return batch.coupons.map((coupon, i) => ({ coupon, position: i + 1 })).sort(byCode);
}

/** What applying a claimed batch writes: its rows besides money, its postings, each coupon's transition. */
export interface BatchSettlement {
  writes: BatchWrites;
  postings: Posting[];
  transitions: Map<string, TransitionName>;
}

/**
 * Decides each coupon's settlement transition (CONTRACT §6, {@link decideSettlement}) with the
 * rules of `source` from its locked state, a registered coupon's amounts checked against the
 * minor units of its currency (`minorUnitsOf`, §3): the snapshots, changed coupon states and bets
 * to write, and the postings of registered coupons (§7; an unallocated coupon keeps its
 * operations on the snapshot until it is registered), in the order of `ordered`: the batch's
 * coupons as {@link orderedCoupons} gave them to the caller for the lock. With `collect`, each
 * coupon's transition as the settlement hooks see it is added to it (only when hooks are
 * registered: nothing is built for them otherwise). Pure but for `collect`.
 * @throws Error when a coupon of the batch was not locked.
 */
export function settleBatch(
  batch: ParsedBatch,
  ordered: OrderedCoupon[],
  locked: Map<string, LockedCoupon>,
  kindOf: (status: number) => StatusKind,
  source: SnapshotSource,
  minorUnitsOf: (currency: string) => number,
  collect?: CouponTransition[],
): BatchSettlement {
  const writes: BatchWrites = {
    batchId: batch.batchId,
    snapshots: [],
    states: [],
    payloadsJson: batch.payloadsAsSent
      ? null
      : stringifyExactJson(
          batch.coupons.map((c) => c.payload),
          batch.losslessNumbers,
        ),
  };
  const postings: Posting[] = [];
  const transitions = new Map<string, TransitionName>();
  for (const { coupon, position } of ordered) {
    const current = locked.get(coupon.couponCode);
    if (!current) throw new Error(`coupon ${coupon.couponCode} was not locked`);
    const minorUnits = current.currency === null ? null : minorUnitsOf(current.currency);
    const decision = decideSettlement(current, coupon, kindOf(coupon.status), source, minorUnits);
    transitions.set(coupon.couponCode, decision.transition);
    if (!sameSettlementState(current, decision.state))
      writes.states.push({ ...decision.state, couponCode: coupon.couponCode });
    writes.snapshots.push({
      couponCode: coupon.couponCode,
      position,
      status: coupon.status,
      realWin: coupon.realWin,
      applied: decision.applied,
      transition: decision.transition,
      generation: decision.state.generation,
      operations: decision.operations,
      eventStatuses: coupon.events.map((e) => e.status),
    });
    const { accountId, currency } = current;
    if (collect) {
      collect.push({
        batchId: batch.batchId,
        source,
        couponCode: coupon.couponCode,
        accountId,
        currency,
        status: coupon.status,
        realWin: coupon.realWin,
        transition: decision.transition,
        applied: decision.applied,
        generation: decision.state.generation,
        operations: decision.operations.map((op) => ({
          operationKey: couponOperationKey(coupon.couponCode, op.generation, op.type),
          type: op.type,
          generation: op.generation,
          amount: op.amount,
        })),
        posted: accountId !== null && currency !== null,
      });
    }
    if (decision.operations.length && accountId !== null && currency !== null) {
      postings.push(
        ...settlementPostings(
          { couponCode: coupon.couponCode, accountId, currency },
          batch.batchId,
          decision.operations,
        ),
      );
    }
  }
  return { writes, postings, transitions };
}
