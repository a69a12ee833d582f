import type { Money } from '../common/money.js';

/** Types of financial operation (CONTRACT §7, §10); the type gives the direction. */
export enum OperationType {
  STAKE_DEBIT = 'stake_debit',
  FINAL_CREDIT = 'final_credit',
  RECALCULATION_DEBIT = 'recalculation_debit',
  DEPOSIT = 'deposit',
  WITHDRAWAL = 'withdrawal',
}

/** Operation types that add to the player's balance; every other type takes from it. */
export const CREDIT_TYPES: readonly OperationType[] = [OperationType.FINAL_CREDIT, OperationType.DEPOSIT];

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
