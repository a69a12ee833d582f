import type { Money } from '../../platform/common/money.js';

/** Types of financial operation (CONTRACT §7, §10); the type gives the direction. */
export enum OperationType {
  STAKE_DEBIT = 'stake_debit',
  FINAL_CREDIT = 'final_credit',
  RECALCULATION_DEBIT = 'recalculation_debit',
  DEPOSIT = 'deposit',
  WITHDRAWAL = 'withdrawal',
}

/**
 * The sign of each operation type on the player's balance (CONTRACT §7): +1 adds to it, -1 takes
 * from it; the house entry has the other sign. The one source of the direction: the posting
 * statement, the verifier, the wallet transaction and the settlement event all read it (the SQL
 * through {@link signedAmountSql}).
 */
export const SIGN_OF: Readonly<Record<OperationType, 1 | -1>> = {
  [OperationType.STAKE_DEBIT]: -1,
  [OperationType.FINAL_CREDIT]: 1,
  [OperationType.RECALCULATION_DEBIT]: -1,
  [OperationType.DEPOSIT]: 1,
  [OperationType.WITHDRAWAL]: -1,
};

/** Operation types that add to the player's balance; every other type takes from it. */
export const CREDIT_TYPES: readonly OperationType[] = (Object.keys(SIGN_OF) as OperationType[]).filter(
  (t) => SIGN_OF[t] > 0,
);

/** `credit` (adds to the player's balance) or `debit`, as the wallet and the settlement events say it. */
export function directionOf(type: OperationType): 'credit' | 'debit' {
  return SIGN_OF[type] > 0 ? 'credit' : 'debit';
}

/**
 * SQL of `amount` signed for the player's account by the operation type `type` (both SQL
 * expressions): `CASE WHEN type IN ('final_credit', 'deposit') THEN amount ELSE -amount END`, from
 * {@link SIGN_OF}.
 */
export function signedAmountSql(type: string, amount: string): string {
  return `CASE WHEN ${type} IN (${CREDIT_TYPES.map((t) => `'${t}'`).join(', ')}) THEN ${amount} ELSE -${amount} END`;
}

/** Kinds of ledger account: a player's, or the house settlement account of a currency. */
export type AccountKind = 'player' | 'house';

/**
 * A financial operation to post (CONTRACT §7): it moves `amount` between the player's account and
 * the house account of `currency`.
 */
export interface Posting {
  /** Unique operation key, e.g. `000000000272:1:final_credit` (see postings.ts). */
  key: string;
  type: OperationType;
  accountId: string;
  currency: string;
  /** Positive decimal string. */
  amount: Money;
  couponCode?: string;
  generation?: number;
  batchId?: string;
  /** Refuse (INSUFFICIENT_FUNDS) when the player's balance would go below zero. */
  requireFunds?: boolean;
}

/** What a posting did: the operations inserted now (keys that existed are skipped). */
export interface PostingResult {
  /** Keys of the inserted operations, each with its database id. */
  inserted: Map<string, string>;
  /** Types of the inserted operations (counted in the metrics after COMMIT). */
  types: OperationType[];
  /** Balance of every player account of the posting after it (decimal strings). */
  balances: Map<string, Money>;
}
