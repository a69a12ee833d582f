/** State of an outbox row: waiting (or being) delivered, delivered, parked for an operator, skipped by one. */
export type OutboxStatus = 'pending' | 'delivered' | 'parked' | 'skipped';

/** Statuses an operator lists (`GET /wallet/outbox?status=`). */
export const OUTBOX_STATUSES: readonly OutboxStatus[] = ['pending', 'delivered', 'parked', 'skipped'];

/**
 * Why a row is parked: the wallet refused it (a definite 4xx), knows its transaction id with
 * another body (409), or gave no definite answer for `WALLET_RETRY_FOR`.
 */
export type ParkReason = 'refused' | 'conflict' | 'retry_budget_exhausted';

/** Outcome of one delivery attempt, as recorded and counted. */
export type AttemptOutcome = 'delivered' | 'retry' | 'refused' | 'conflict' | 'unauthorized';

/** Review reason set on a coupon whose wallet transaction was parked (refused or conflict). */
export const WALLET_REFUSED_REVIEW_REASON = 'wallet_refused';
