import type { Money } from '../../platform/common/money.js';
import { OperationType, Posting } from './ledger.types.js';

/** Operation key of a coupon's financial operation: `<coupon_code>:<generation>:<type>` (CONTRACT §7). */
export function couponOperationKey(couponCode: string, generation: number, type: OperationType): string {
  return `${couponCode}:${generation}:${type}`;
}

/** Operation key of an adjustment: `adjustment:<Idempotency-Key>` (keys hold no colon, §10). */
export function adjustmentOperationKey(idempotencyKey: string): string {
  return `adjustment:${idempotencyKey}`;
}

/**
 * Ids of the house settlement sub-accounts of a currency: `house:<currency>`, then
 * `house:<currency>:1` … `:<count - 1>`. The house balance of a currency is their sum; a posting
 * takes one of them (docs/architecture.md, "House sub-accounts").
 */
export function houseAccountIds(currency: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => (i === 0 ? `house:${currency}` : `house:${currency}:${i}`));
}

/** The stake debit of a registered coupon, `<coupon_code>:0:stake_debit`, refused without funds. */
export function stakePosting(couponCode: string, accountId: string, currency: string, stake: Money): Posting {
  return {
    key: couponOperationKey(couponCode, 0, OperationType.STAKE_DEBIT),
    type: OperationType.STAKE_DEBIT,
    accountId,
    currency,
    amount: stake,
    couponCode,
    generation: 0,
    requireFunds: true,
  };
}

/**
 * The key of the operation a `recalculation_debit` of generation g reverses: generation g-1's
 * `final_credit` (CONTRACT §7, §9); null for any other operation.
 */
export function reversedOperationKey(op: {
  type: OperationType;
  couponCode: string | null;
  generation: number | null;
}): string | null {
  return op.type === OperationType.RECALCULATION_DEBIT && op.couponCode !== null && op.generation !== null
    ? couponOperationKey(op.couponCode, op.generation - 1, OperationType.FINAL_CREDIT)
    : null;
}
