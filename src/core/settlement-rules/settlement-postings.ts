import { couponOperationKey } from '../ledger/postings.js';
import type { Posting } from '../ledger/ledger.types.js';
import type { SettlementOperation } from './settlement.types.js';

/** Postings of the operations a settlement transition decided for a registered coupon (CONTRACT §6, §7). */
export function settlementPostings(
  coupon: { couponCode: string; accountId: string; currency: string },
  batchId: string,
  operations: SettlementOperation[],
): Posting[] {
  return operations.map((op) => ({
    key: couponOperationKey(coupon.couponCode, op.generation, op.type),
    type: op.type,
    accountId: coupon.accountId,
    currency: coupon.currency,
    amount: op.amount,
    couponCode: coupon.couponCode,
    generation: op.generation,
    batchId,
  }));
}
