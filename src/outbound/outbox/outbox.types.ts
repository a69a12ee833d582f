import type { OperationType } from '../../core/ledger/ledger.types.js';

/** State of an outbox row: waiting (or being) delivered, delivered, parked for an operator, skipped by one. */
export type OutboxStatus = 'pending' | 'delivered' | 'parked' | 'skipped';

/** Statuses an operator lists (`GET /wallet/outbox?status=`, `GET /events/{publisher}/outbox?status=`). */
export const OUTBOX_STATUSES: readonly OutboxStatus[] = ['pending', 'delivered', 'parked', 'skipped'];

/**
 * Why a row is parked: the destination refused it (a definite no), knows its id with another body
 * (conflict), or gave no definite answer for the destination's retry budget.
 */
export type ParkReason = 'refused' | 'conflict' | 'retry_budget_exhausted';

/** Outcome of one delivery attempt, as recorded and counted. */
export type AttemptOutcome = 'delivered' | 'retry' | 'refused' | 'conflict' | 'unauthorized';

/** Review reason set on a coupon whose wallet transaction was parked (refused or conflict). */
export const WALLET_REFUSED_REVIEW_REASON = 'wallet_refused';

/**
 * What a destination (a wallet connector, an event publisher) reports for one attempt.
 * `delivered`: applied (or published) now or before (its idempotency). `retry`: no definite answer
 * (transport error, timeout, 408, 429, 5xx, a broker that did not confirm): the same message again
 * later, not before `afterMs` when the destination said so. `refused`: a definite no, parked for an
 * operator. `conflict`: the destination knows the id with another body. `unauthorized`: our
 * credentials are wrong: all delivery to it pauses. `status` and `answer` (an excerpt) are kept
 * with the attempt.
 */
export type OutboxDelivery =
  | { outcome: 'delivered'; status?: number; answer?: string }
  | { outcome: 'retry'; reason: string; afterMs?: number; status?: number; answer?: string }
  | { outcome: 'refused' | 'conflict' | 'unauthorized'; reason: string; status?: number; answer?: string };

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
 * The fields of its operation every outbox message carries, in this order (the wallet
 * transaction, the settlement event; docs/wallet-http-contract.md, docs/events.md), `amount` a
 * positive decimal string at the currency's minor units (e.g. `12.50`, `1000`, `0.123`).
 */
export type OperationMessageFields = Pick<
  OutboxOperation,
  'accountId' | 'amount' | 'currency' | 'couponCode' | 'generation' | 'batchId'
>;

/** The {@link OperationMessageFields} of `op`, its amount at the currency's precision (`format`). */
export function messageFieldsOf(
  op: OutboxOperation,
  format: (amount: string, currency: string) => string,
): OperationMessageFields {
  return {
    accountId: op.accountId,
    amount: format(op.amount, op.currency),
    currency: op.currency,
    couponCode: op.couponCode,
    generation: op.generation,
    batchId: op.batchId,
  };
}

/** One claimed row as a destination receives it: its message and the message's exact bytes. */
export interface OutboxMessage {
  outboxId: string;
  /** This attempt's number (1 for the first). */
  attempt: number;
  operation: OutboxOperation;
  /** The message as built at the row's first claim (the wallet transaction, the settlement event). */
  message: unknown;
  /** Its exact JSON bytes, the same on every attempt. */
  body: Buffer;
}

/**
 * Where an outbox delivers: the wallet connector or an event publisher, adapted. `deliver` is
 * called at least once per message (again after a crash or a lost answer, with the same bytes);
 * `deliverMany` (optional) takes messages of distinct accounts and answers one result per message,
 * in order. Answers are checked ({@link OutboxDelivery}); a throw counts as `retry` (`refused` when
 * no retry can fix it: `permanentFailure`).
 */
export interface OutboxDeliverer {
  readonly name: string;
  deliver(message: OutboxMessage, requestId: string, signal: AbortSignal): Promise<unknown>;
  deliverMany?(messages: OutboxMessage[], requestId: string, signal: AbortSignal): Promise<unknown>;
}

/** How a destination's rows are delivered: timings in milliseconds. */
export interface OutboxSettings {
  /** One delivery (or batch call); cut at this plus 1 s and counted as `retry`. */
  timeoutMs: number;
  /** A row retried without a definite answer for this long is parked. */
  retryForMs: number;
  retryBaseMs: number;
  retryMaxMs: number;
  /** Delivery workers per process (the governor's maximum for the destination's kind). */
  concurrency: number;
  /** Rows (heads of distinct accounts) a worker claims at once. */
  claimSize: number;
  /** Messages per call when the deliverer has `deliverMany`; 1: one call per message. */
  batchSize: number;
  pollIntervalMs: number;
}

/**
 * One outbox destination (docs/extending.md, "Outboxes"): its tables (same columns for every
 * destination), the rows of the table that are its own (`scope`: a column and its value, when the
 * table holds several destinations' rows), the operation types the posting statement writes rows
 * for, whether a parked row flags its coupon, how its messages are built and its timings.
 */
export interface OutboxDestination {
  /** In logs, the operator actions' details and metric labels: `wallet`, `rabbitmq`, `nats`. */
  name: string;
  /** Prefix of its prepared statements' names (unique per destination): `wo`, `eo_rabbitmq`. */
  statementPrefix: string;
  tables: { outbox: string; attempts: string; state: string };
  /** The table's rows of this destination, e.g. `publisher = 'nats'`; null: every row is its own. */
  scope: { column: string; value: string } | null;
  operationTypes: readonly OperationType[];
  /** Review reason set on the coupon of a row parked as refused or conflict; null: no flag. */
  flagReason: string | null;
  /** The message of an operation (a pure function: every process builds the same). */
  messageOf(operation: OutboxOperation): unknown;
  settings: OutboxSettings;
}
