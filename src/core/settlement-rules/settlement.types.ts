import type { Money } from '../../platform/common/money.js';
import { OperationType } from '../ledger/ledger.types.js';

/** Kinds a coupon status code maps to (CONTRACT §6). */
export enum StatusKind {
  PENDING = 'PENDING',
  WIN = 'WIN',
  REFUND = 'REFUND',
  LOSS = 'LOSS',
  RECALCULATION = 'RECALCULATION',
  UNKNOWN = 'UNKNOWN',
}

/**
 * Where a snapshot comes from. A callback snapshot never pays a conflicting result automatically;
 * a coupon read from SportAPI (`poll`, CONTRACT §9) and an operator's resolution (`resolution`)
 * are authoritative: they may re-settle a settled generation as a new one and clear
 * `needs_review` (§6, §9).
 */
export enum SnapshotSource {
  CALLBACK = 'callback',
  POLL = 'poll',
  RESOLUTION = 'resolution',
}

/**
 * The settlement part of a coupon's state (CONTRACT §6): generation `g`, whether `g` is settled
 * and for how much, whether a recalculation is open, and the applied status and `realWin`.
 */
export interface CouponSettlementState {
  status: number | null;
  realWin: Money | null;
  generation: number;
  generationSettled: boolean;
  /** Amount generation `g` was settled for (what it credited); null while unsettled. */
  settledAmount: Money | null;
  recalculationOpen: boolean;
  needsReview: boolean;
  reviewReason: string | null;
}

/** One coupon's snapshot as it matters to settlement: its status code and canonical `realWin`. */
export interface SettlementSnapshot {
  status: number;
  /** Canonical decimal string, or null when absent/null in the callback. */
  realWin: Money | null;
}

/** A financial operation decided by a transition; the ledger turns it into entries. */
export interface SettlementOperation {
  type: OperationType.FINAL_CREDIT | OperationType.RECALCULATION_DEBIT;
  generation: number;
  /** Positive decimal string; the type gives the direction. */
  amount: Money;
}

/** Names of the transitions, stored with every snapshot for audit. */
export enum TransitionName {
  PENDING_APPLIED = 'pending_applied',
  PENDING_STALE = 'pending_stale',
  SETTLED = 'settled',
  SAME_RESULT = 'same_result',
  CONFLICTING_RESULT = 'conflicting_result',
  FINAL_WITHOUT_AMOUNT = 'final_without_amount',
  INCONSISTENT_RESULT = 'inconsistent_result',
  RECALCULATION_OPENED = 'recalculation_opened',
  RECALCULATION_SETTLED = 'recalculation_settled',
  RECALCULATION_REPEATED = 'recalculation_repeated',
  RECALCULATION_CONFLICT = 'recalculation_conflict',
  /** An authoritative result (poll or resolution) that differs from the settled amount: new generation. */
  RESETTLED = 'resettled',
  UNKNOWN_STATUS = 'unknown_status',
  /** `realWin` finer than the coupon's currency allows (`"1500.50"` for JPY): never rounded, never paid. */
  AMOUNT_PRECISION = 'amount_precision',
}

/** Outcome of {@link decideSettlement}. */
export interface SettlementDecision {
  transition: TransitionName;
  /** true: coupon status, `realWin` and bets take the snapshot's values; false: history only. */
  applied: boolean;
  state: CouponSettlementState;
  operations: SettlementOperation[];
}
