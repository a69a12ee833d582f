import type { OperationMessageFields, OutboxDelivery } from '../outbox/outbox.types.js';

/**
 * One financial operation as the wallet receives it (docs/wallet-http-contract.md): built once per
 * outbox row from its ledger operation and sent byte-identical on every attempt.
 */
export interface WalletTransaction extends OperationMessageFields {
  /** The operation key (CONTRACT §7): the wallet's idempotency key for this business intent. */
  transactionId: string;
  /** `credit` adds to the player's wallet balance, `debit` takes from it. */
  direction: 'credit' | 'debit';
  /** The operation type, e.g. `final_credit`, `recalculation_debit`. */
  type: string;
  /** The key of the credit a `recalculation_debit` reverses, else null. */
  reversesTransactionId: string | null;
  /** When the ledger committed the operation, ISO-8601 UTC. */
  createdAt: string;
}

/** A delivery as the outbox hands it to a connector. */
export interface WalletDeliveryRequest {
  /** The transaction; `body` is its exact JSON bytes (the HTTP connector sends them as they are). */
  transaction: WalletTransaction;
  body: Buffer;
  /** Correlation id of this attempt (logs, `X-Request-Id`). */
  requestId: string;
  /** Outbox row id and this attempt's number (1 for the first). */
  outboxId: string;
  attempt: number;
  /**
   * Aborted when the outbox gives up on this attempt (`WALLET_TIMEOUT_MS` + 1 s) and counts it as
   * `retry`: stop, and let go of the connection the attempt holds.
   */
  signal: AbortSignal;
}

/** One transaction of a batch call (see {@link WalletConnector.deliverMany}). */
export interface WalletBatchItem {
  transaction: WalletTransaction;
  /** Its exact JSON bytes: what a single call would send, and its element in the array. */
  body: Buffer;
  outboxId: string;
  attempt: number;
}

/** A batch call as the outbox hands it to a connector: transactions of distinct accounts. */
export interface WalletBatchRequest {
  items: WalletBatchItem[];
  /** Correlation id of this call (logs, `X-Request-Id`), shared by every element's attempt. */
  requestId: string;
  /** As {@link WalletDeliveryRequest.signal}, for the whole call. */
  signal: AbortSignal;
}

/**
 * What a connector reports for one attempt ({@link OutboxDelivery}, the same for every outbox
 * destination): `delivered`, `retry` (`afterMs`), `refused`, `conflict` (the wallet knows the
 * transaction id with another body), `unauthorized` (401/403: all delivery pauses).
 */
export type WalletDelivery = OutboxDelivery;

/**
 * The extension point between the outbox and the bookmaker's wallet (docs/wallet.md): the HTTP
 * connector implements it, and so can a partner's module (an in-process call to its wallet) that
 * provides this class as a token. The outbox calls {@link deliver} at least once per transaction,
 * possibly again after a crash or a lost answer, always with the same transaction id and body: the
 * implementation must apply a transaction id once. It should not throw; a throw, or an answer
 * that is none of {@link WalletDelivery}, counts as `retry` (an error no retry can fix, such as an
 * invalid header, as `refused`: `permanentFailure` in src/outbound/outbox/outbox-rules.ts).
 */
export abstract class WalletConnector {
  /** Short name shown in logs and metrics, e.g. `http`. */
  abstract readonly name: string;

  abstract deliver(request: WalletDeliveryRequest): Promise<WalletDelivery>;

  /**
   * The batch call (docs/wallet-http-contract.md#the-batch-call), used instead of {@link deliver}
   * when `WALLET_BATCH_SIZE` is above 1 and the connector has it: one answer per item, in the
   * items' order (a missing or extra answer counts as `retry` for its item). The items never hold
   * two transactions of one account. The same rules as {@link deliver} hold for each item.
   */
  deliverMany?(request: WalletBatchRequest): Promise<WalletDelivery[]>;
}
