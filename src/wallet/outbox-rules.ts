import { CREDIT_TYPES, OperationType } from '../ledger/ledger.types.js';
import { couponOperationKey } from '../ledger/postings.js';
import type { WalletDelivery, WalletTransaction } from './wallet-connector.js';
import type { ParkReason } from './wallet.types.js';

/** The ledger operation behind an outbox row, as the claim reads it. */
export interface OutboxOperation {
  operationKey: string;
  type: OperationType;
  accountId: string;
  /** Decimal string as stored (`numeric(26,8)`). */
  amount: string;
  currency: string;
  couponCode: string | null;
  generation: number | null;
  batchId: string | null;
  createdAt: Date;
}

/**
 * The wallet transaction of an operation (docs/wallet-http-contract.md): its key as the
 * transaction id, the direction its type gives, the amount at the currency's precision (`format`),
 * and for a `recalculation_debit` of generation g the key of generation g-1's `final_credit` it
 * reverses (CONTRACT §7, §9). A pure function of the operation: every attempt builds the same.
 */
export function walletTransactionOf(
  op: OutboxOperation,
  format: (amount: string, currency: string) => string,
): WalletTransaction {
  const reverses =
    op.type === OperationType.RECALCULATION_DEBIT && op.couponCode !== null && op.generation !== null
      ? couponOperationKey(op.couponCode, op.generation - 1, OperationType.FINAL_CREDIT)
      : null;
  return {
    transactionId: op.operationKey,
    direction: CREDIT_TYPES.includes(op.type) ? 'credit' : 'debit',
    type: op.type,
    accountId: op.accountId,
    amount: format(op.amount, op.currency),
    currency: op.currency,
    couponCode: op.couponCode,
    generation: op.generation,
    batchId: op.batchId,
    reversesTransactionId: reverses,
    createdAt: op.createdAt.toISOString(),
  };
}

/** The retry policy of the outbox (`WALLET_RETRY_*`), in milliseconds. */
export interface RetryPolicy {
  retryForMs: number;
  retryBaseMs: number;
  retryMaxMs: number;
}

/**
 * What the outbox does with a row after an attempt: done; again after `delayMs`; parked for an
 * operator; or all delivery paused (the row stays pending, due again at once on resume).
 */
export type OutboxStep =
  | { kind: 'delivered' }
  | { kind: 'retry'; delayMs: number }
  | { kind: 'park'; reason: ParkReason }
  | { kind: 'pause'; reason: string };

/**
 * The outbox's rule for one attempt's answer (docs/wallet.md, "Retries and parking"): a `retry`
 * waits `WALLET_RETRY_BASE_MS` doubled per attempt (`attempt` 1 for the first), at most
 * `WALLET_RETRY_MAX_MS`, and never less than the wallet's `Retry-After`; once `retryForMs` has
 * passed since `retryFrom`, a `retry` parks the row instead. `refused` and `conflict` park it at
 * once; `unauthorized` pauses delivery.
 */
export function nextStep(
  delivery: WalletDelivery,
  attempt: { attempt: number; retryFrom: Date; now: Date },
  policy: RetryPolicy,
): OutboxStep {
  switch (delivery.outcome) {
    case 'delivered':
      return { kind: 'delivered' };
    case 'refused':
      return { kind: 'park', reason: 'refused' };
    case 'conflict':
      return { kind: 'park', reason: 'conflict' };
    case 'unauthorized':
      return { kind: 'pause', reason: `wallet answered ${delivery.status ?? '?'}: ${delivery.reason}` };
    case 'retry': {
      if (attempt.now.getTime() - attempt.retryFrom.getTime() >= policy.retryForMs)
        return { kind: 'park', reason: 'retry_budget_exhausted' };
      const backoff = Math.min(
        policy.retryMaxMs,
        policy.retryBaseMs * 2 ** Math.min(attempt.attempt - 1, 30),
      );
      return { kind: 'retry', delayMs: Math.max(backoff, delivery.afterMs ?? 0) };
    }
  }
}
