import { OperationType } from '../ledger/ledger.types.js';
import { fractionDigits, isPositive, sameAmount } from '../../platform/common/money.js';
import {
  CouponSettlementState,
  SettlementDecision,
  SettlementOperation,
  SettlementSnapshot,
  SnapshotSource,
  StatusKind,
  TransitionName,
} from './settlement.types.js';

/** State of a coupon no callback has touched yet: generation 0, unsettled, nothing open. */
export const INITIAL_SETTLEMENT_STATE: CouponSettlementState = Object.freeze({
  status: null,
  realWin: null,
  generation: 0,
  generationSettled: false,
  settledAmount: null,
  recalculationOpen: false,
  needsReview: false,
  reviewReason: null,
});

function credit(generation: number, amount: string): SettlementOperation[] {
  return isPositive(amount) ? [{ type: OperationType.FINAL_CREDIT, generation, amount }] : [];
}

function flagged(state: CouponSettlementState, reason: string): CouponSettlementState {
  return { ...state, needsReview: true, reviewReason: reason };
}

/** An authoritative result resolves the review: the flag and its reason are cleared. */
const RESOLVED: Partial<CouponSettlementState> = { needsReview: false, reviewReason: null };

/**
 * Re-settles settled generation `g` as `g+1` (CONTRACT §9): `recalculation_debit` for `g+1` of
 * what `g` credited, `final_credit` for `g+1` of the authoritative amount (no row for 0).
 */
function resettle(
  state: CouponSettlementState,
  amount: string,
): { generation: number; operations: SettlementOperation[] } {
  const generation = state.generation + 1;
  const credited = state.settledAmount ?? '0.00';
  const operations: SettlementOperation[] = isPositive(credited)
    ? [{ type: OperationType.RECALCULATION_DEBIT, generation, amount: credited }]
    : [];
  operations.push(...credit(generation, amount));
  return { generation, operations };
}

/**
 * The settlement rules of CONTRACT §6 as one pure function (no I/O, no clock, never throws): from
 * a coupon's state, one snapshot and its status kind, whether the snapshot is applied or history
 * only, the next state and the operations to post (at most one per type). A non-`callback`
 * `source` is authoritative (§9). `minorUnits` of a registered coupon's currency (§3): a finer
 * `realWin` is history only and flags `amount_precision`; null (unallocated) checks nothing.
 * Beyond the contract's table: docs/architecture.md#settlement-rules-contract-6.
 */
export function decideSettlement(
  state: CouponSettlementState,
  snapshot: SettlementSnapshot,
  kind: StatusKind,
  source: SnapshotSource = SnapshotSource.CALLBACK,
  minorUnits: number | null = null,
): SettlementDecision {
  const authoritative = source !== SnapshotSource.CALLBACK;
  const resolved = authoritative ? RESOLVED : {};
  const applyTo = (next: Partial<CouponSettlementState>): CouponSettlementState => ({
    ...state,
    status: snapshot.status,
    realWin: snapshot.realWin,
    ...next,
  });
  const historyOnly = (
    transition: TransitionName,
    next: CouponSettlementState = state,
  ): SettlementDecision => ({
    transition,
    applied: false,
    state: next,
    operations: [],
  });

  if (minorUnits !== null && snapshot.realWin !== null && fractionDigits(snapshot.realWin) > minorUnits) {
    // "1500.50" for a JPY coupon: neither rounded nor paid, whatever the status says.
    return historyOnly(TransitionName.AMOUNT_PRECISION, flagged(state, TransitionName.AMOUNT_PRECISION));
  }

  switch (kind) {
    case StatusKind.PENDING:
      if (!state.generationSettled && !state.recalculationOpen) {
        // An authoritative PENDING supersedes a flag raised while unsettled (an unknown status,
        // a final result without or contradicting its amount): nothing was paid, nothing is owed.
        return {
          transition: TransitionName.PENDING_APPLIED,
          applied: true,
          state: applyTo(resolved),
          operations: [],
        };
      }
      return historyOnly(TransitionName.PENDING_STALE);

    case StatusKind.WIN:
    case StatusKind.REFUND:
    case StatusKind.LOSS: {
      const amount = snapshot.realWin ?? (kind === StatusKind.LOSS ? '0.00' : null);
      if (amount === null) {
        return historyOnly(
          TransitionName.FINAL_WITHOUT_AMOUNT,
          flagged(state, TransitionName.FINAL_WITHOUT_AMOUNT),
        );
      }
      if (
        (kind === StatusKind.WIN && !isPositive(amount)) ||
        (kind === StatusKind.LOSS && isPositive(amount))
      ) {
        // §6: a WIN pays more than 0, a LOSS pays 0. A status contradicting its amount is not paid.
        return historyOnly(
          TransitionName.INCONSISTENT_RESULT,
          flagged(state, TransitionName.INCONSISTENT_RESULT),
        );
      }
      if (!state.generationSettled) {
        return {
          transition: TransitionName.SETTLED,
          applied: true,
          state: applyTo({
            realWin: amount,
            generationSettled: true,
            settledAmount: amount,
            recalculationOpen: false,
            ...resolved,
          }),
          operations: credit(state.generation, amount),
        };
      }
      if (state.settledAmount !== null && sameAmount(state.settledAmount, amount)) {
        return {
          transition: TransitionName.SAME_RESULT,
          applied: true,
          state: applyTo({ realWin: amount, recalculationOpen: false, ...resolved }),
          operations: [],
        };
      }
      if (authoritative) {
        const { generation, operations } = resettle(state, amount);
        return {
          transition: TransitionName.RESETTLED,
          applied: true,
          state: applyTo({
            realWin: amount,
            generation,
            generationSettled: true,
            settledAmount: amount,
            recalculationOpen: false,
            ...RESOLVED,
          }),
          operations,
        };
      }
      return historyOnly(
        TransitionName.CONFLICTING_RESULT,
        flagged(state, TransitionName.CONFLICTING_RESULT),
      );
    }

    case StatusKind.RECALCULATION: {
      if (!state.recalculationOpen) {
        const next = state.generation + 1;
        const credited =
          state.generationSettled && state.settledAmount !== null ? state.settledAmount : '0.00';
        const operations: SettlementOperation[] = isPositive(credited)
          ? [{ type: OperationType.RECALCULATION_DEBIT, generation: next, amount: credited }]
          : [];
        const settledNow = snapshot.realWin !== null;
        if (settledNow) operations.push(...credit(next, snapshot.realWin as string));
        return {
          transition: settledNow ? TransitionName.RECALCULATION_SETTLED : TransitionName.RECALCULATION_OPENED,
          applied: true,
          state: applyTo({
            generation: next,
            generationSettled: settledNow,
            settledAmount: settledNow ? snapshot.realWin : null,
            recalculationOpen: true,
            ...(settledNow ? resolved : {}),
          }),
          operations,
        };
      }
      if (snapshot.realWin === null) return historyOnly(TransitionName.RECALCULATION_REPEATED);
      if (!state.generationSettled) {
        return {
          transition: TransitionName.RECALCULATION_SETTLED,
          applied: true,
          state: applyTo({ generationSettled: true, settledAmount: snapshot.realWin, ...resolved }),
          operations: credit(state.generation, snapshot.realWin),
        };
      }
      if (state.settledAmount !== null && sameAmount(state.settledAmount, snapshot.realWin)) {
        if (authoritative && state.needsReview) {
          // The authoritative read confirms what was paid: nothing moves, the review is resolved.
          return {
            transition: TransitionName.RECALCULATION_REPEATED,
            applied: true,
            state: applyTo(RESOLVED),
            operations: [],
          };
        }
        return historyOnly(TransitionName.RECALCULATION_REPEATED);
      }
      if (authoritative) {
        // The recalculation stays open: a redelivered RECALCULATION snapshot is then a repeat.
        const { generation, operations } = resettle(state, snapshot.realWin);
        return {
          transition: TransitionName.RESETTLED,
          applied: true,
          state: applyTo({
            generation,
            generationSettled: true,
            settledAmount: snapshot.realWin,
            ...RESOLVED,
          }),
          operations,
        };
      }
      return historyOnly(
        TransitionName.RECALCULATION_CONFLICT,
        flagged(state, TransitionName.RECALCULATION_CONFLICT),
      );
    }

    default:
      return {
        transition: TransitionName.UNKNOWN_STATUS,
        applied: true,
        state: flagged({ ...state, status: snapshot.status }, TransitionName.UNKNOWN_STATUS),
        operations: [],
      };
  }
}

/**
 * What the registration of a coupon settled while unallocated may post (CONTRACT §7, §3): the
 * operations decided by its snapshots (`decided`, oldest first) that fit its currency's
 * `minorUnits`. A finer one is never posted and flags the coupon `amount_precision` (the rest
 * stays as decided: a finer credit and the recalculation debit that cancels it are the same
 * amount, so both are left out together); a generation settled for a finer amount becomes
 * unsettled, so the ledger (credits minus debits) keeps matching the state.
 * @returns the decided rows with the operations to post, and the new state (null: unchanged).
 */
export function admitDeferredOperations<T extends { operations: SettlementOperation[] }>(
  state: CouponSettlementState,
  decided: T[],
  minorUnits: number,
): { admitted: T[]; state: CouponSettlementState | null } {
  const fits = (amount: string | null) => amount === null || fractionDigits(amount) <= minorUnits;
  const admitted = decided.map((d) => ({ ...d, operations: d.operations.filter((op) => fits(op.amount)) }));
  const refused = admitted.some((d, i) => d.operations.length !== decided[i].operations.length);
  if (!refused && fits(state.realWin) && fits(state.settledAmount)) return { admitted: decided, state: null };
  const unsettle = !fits(state.settledAmount);
  return {
    admitted,
    state: flagged(
      unsettle ? { ...state, generationSettled: false, settledAmount: null } : state,
      TransitionName.AMOUNT_PRECISION,
    ),
  };
}

/** Whether two settlement states are equal field by field (amounts compared as decimals). */
export function sameSettlementState(a: CouponSettlementState, b: CouponSettlementState): boolean {
  const amount = (x: string | null, y: string | null) =>
    x === null || y === null ? x === y : sameAmount(x, y);
  return (
    a.status === b.status &&
    amount(a.realWin, b.realWin) &&
    a.generation === b.generation &&
    a.generationSettled === b.generationSettled &&
    amount(a.settledAmount, b.settledAmount) &&
    a.recalculationOpen === b.recalculationOpen &&
    a.needsReview === b.needsReview &&
    a.reviewReason === b.reviewReason
  );
}
