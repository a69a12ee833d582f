import { directionOf } from '../../core/ledger/ledger.types.js';
import { reversedOperationKey } from '../../core/ledger/postings.js';
import { messageFieldsOf } from '../outbox/outbox.types.js';
import type { OutboxOperation } from '../outbox/outbox.types.js';
import type { WalletTransaction } from './wallet-connector.js';

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
  return {
    transactionId: op.operationKey,
    direction: directionOf(op.type),
    type: op.type,
    ...messageFieldsOf(op, format),
    reversesTransactionId: reversedOperationKey(op),
    createdAt: op.createdAt.toISOString(),
  };
}
