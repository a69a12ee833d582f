import type { SqlResult, Statement } from '../../platform/database/transaction.js';
import type { OperationType } from '../ledger/ledger.types.js';
import type { SnapshotSource, TransitionName } from '../settlement-rules/settlement.types.js';

/** A financial operation a coupon's transition decided (CONTRACT §6, §7). */
export interface TransitionOperation {
  /** `<coupon_code>:<generation>:<type>` (CONTRACT §7): the ledger's unique key. */
  operationKey: string;
  type: OperationType;
  generation: number;
  /** Positive decimal string; the type gives the direction. */
  amount: string;
}

/**
 * One coupon's settlement transition in a batch being applied (CONTRACT §6), as a
 * {@link SettlementHook} sees it: the coupon, what the snapshot did (`transition`, `applied`), the
 * generation after it, and the financial operations it decided.
 */
export interface CouponTransition {
  batchId: string;
  /** `callback` (SportAPI's batch, inline or inbox), `poll` (a coupon read) or `resolution` (an operator's). */
  source: SnapshotSource;
  couponCode: string;
  /** null: the coupon is not registered yet (its operations wait for the registration). */
  accountId: string | null;
  currency: string | null;
  status: number;
  realWin: string | null;
  transition: TransitionName;
  /** false: stored as history only. */
  applied: boolean;
  generation: number;
  operations: readonly TransitionOperation[];
  /** true: `operations` are posted to the ledger in this transaction; false: deferred to the registration. */
  posted: boolean;
}

/**
 * What a hook may do in the batch's transaction (docs/extending.md#settlement-hooks): its own
 * queries and the time left, nothing else. No commit, rollback, savepoint or other transaction:
 * the batch commits or rolls back as a whole (a hook makes it roll back by throwing). A query that
 * is a transaction-control or session statement (`COMMIT`, `ROLLBACK`, `BEGIN`, `SAVEPOINT`,
 * `SET`, …) is refused (the hook fails, the batch rolls back).
 */
export interface HookTx {
  /** One statement with positional parameters (`$1`…), in the batch's transaction: one round trip. */
  query<R = Record<string, unknown>>(text: string, values?: unknown[]): Promise<SqlResult<R>>;
  /** Milliseconds before the batch's deadline. @throws DeadlineExceededError when none is left. */
  timeLeft(): number;
  /** Epoch milliseconds: the batch's deadline. */
  readonly deadline: number;
}

/** What a hook may use while it runs, inside the batch's transaction. */
export interface SettlementHookContext {
  /**
   * The batch's transaction, narrowed to what a hook may do ({@link HookTx}: `query` is a round
   * trip; prefer {@link write}). Never move money but through `LedgerService` (docs/extending.md).
   */
  tx: HookTx;
  /**
   * Adds a statement to the batch's last group, sent with its writes and its COMMIT: the hook's
   * own rows, written with the batch or not at all, at no round trip of their own.
   */
  write(statement: Statement): void;
  /** Epoch milliseconds: the batch's deadline (the callback's receipt plus `CALLBACK_DEADLINE_MS`). */
  deadline: number;
  /** Aborted when the deadline passes: stop whatever the hook awaits. */
  signal: AbortSignal;
}

/**
 * The extension point "when a coupon settles, also …" (docs/extending.md): a provider of a
 * partner's module (given to `AppModule.forRoot`) that extends this class is called inside the
 * settlement transaction for each coupon transition of every batch applied (the callback, inline
 * or from the inbox; quarantine replays; reconciliation; resolutions), in lock order. It may read
 * and write through `context`; its writes commit or roll back with the batch. Throwing rolls the
 * whole batch back: the callback answers 503 and SportAPI delivers it again (an inbox row is
 * retried, an operator is answered 503). It must finish within the deadline (it is cut there,
 * the batch rolled back) and must never call the network, open its own transaction or connection,
 * or move money other than through `LedgerService`; for the network, publish an event instead
 * (an `EventPublisher`). With no hook registered, applying a batch costs nothing more.
 */
export abstract class SettlementHook {
  /** Short name in logs and errors, e.g. `bonus-engine`. */
  abstract readonly name: string;

  abstract onTransition(transition: CouponTransition, context: SettlementHookContext): void | Promise<void>;
}
