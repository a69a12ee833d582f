import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { Decimal } from 'decimal.js';
import { DomainException, ErrorCode } from '../common/domain.exception.js';
import { formatAmount } from '../common/money.js';
import { TransactionRunner, Tx } from '../database/transaction.js';
import { SettlementMetrics } from '../observability/settlement-metrics.js';
import { OperationType } from './entities/financial-operation.entity.js';
import { AdjustmentRow, LedgerRepository, OperationRow } from './ledger.repository.js';

/** Direction of each operation type, seen from the player's account (+1 credit, -1 debit). */
const PLAYER_SIGN: Record<OperationType, 1 | -1> = {
  [OperationType.STAKE_DEBIT]: -1,
  [OperationType.FINAL_CREDIT]: 1,
  [OperationType.RECALCULATION_DEBIT]: -1,
  [OperationType.DEPOSIT]: 1,
  [OperationType.WITHDRAWAL]: -1,
};

/** A financial operation to post (CONTRACT §7). */
export interface PostOperation {
  /** Unique operation key, e.g. `000000000272:1:final_credit`. */
  key: string;
  type: OperationType;
  accountId: string;
  currency: string;
  /** Positive decimal string. */
  amount: string;
  couponCode?: string;
  generation?: number;
  batchId?: string;
  /** Refuse (422 insufficient_funds) when the player's balance would go below zero. */
  requireFunds?: boolean;
}

/** Result of {@link LedgerService.post}. */
export interface PostResult {
  /** Keys of the operations inserted by this call (keys that existed are skipped). */
  inserted: string[];
  /** Database ids of the inserted operations, by key. */
  operationIds: Map<string, string>;
  /** Balances after posting, of every locked account (decimal strings). */
  balances: Map<string, string>;
}

/** The `financial_operations` row of an operation to post (amount as a canonical decimal string). */
export function operationRow(o: PostOperation): OperationRow {
  return {
    key: o.key,
    type: o.type,
    couponCode: o.couponCode ?? null,
    generation: o.generation ?? null,
    accountId: o.accountId,
    amount: formatAmount(o.amount),
    currency: o.currency,
    batchId: o.batchId ?? null,
  };
}

/** Operation key of a coupon's financial operation (CONTRACT §7). */
export function couponOperationKey(couponCode: string, generation: number, type: OperationType): string {
  return `${couponCode}:${generation}:${type}`;
}

/** Id of the house settlement account of a currency. */
export function houseAccountId(currency: string): string {
  return `house:${currency}`;
}

/** Public view of an account (CONTRACT §10). */
export interface AccountView {
  id: string;
  currency: string;
  balance: string;
}

/** Public view of an adjustment (CONTRACT §10). */
export interface AdjustmentView {
  accountId: string;
  idempotencyKey: string;
  amount: string;
  currency: string;
  reason: string;
  operationKey: string;
  balance: string;
  createdAt: string;
}

/**
 * The double-entry ledger (CONTRACT §7). Every financial operation moves money between a player
 * account and the house account of its currency; its two entries sum to zero. Operations carry
 * unique keys, so posting the same operation twice is a no-op. Accounts are locked in one fixed
 * (ascending id) order before their materialised balances change, in the caller's transaction.
 */
@Injectable()
export class LedgerService {
  private readonly knownHouseAccounts = new Set<string>();

  constructor(
    private readonly ledger: LedgerRepository,
    private readonly transactions: TransactionRunner,
    private readonly metrics: SettlementMetrics,
  ) {}

  /**
   * Posts operations inside `tx`: locks the player and house accounts (sorted), inserts the
   * operations whose keys are new, appends two entries per inserted operation and updates the
   * balances. All or nothing with the caller's transaction; the inserted operations are counted
   * in `settlement_ledger_operations_total` only after that transaction has committed.
   * @throws DomainException CURRENCY_MISMATCH when an account holds another currency;
   *   INSUFFICIENT_FUNDS when an operation with `requireFunds` would overdraw the player.
   */
  async post(tx: Tx, ops: PostOperation[]): Promise<PostResult> {
    if (!ops.length) return { inserted: [], operationIds: new Map(), balances: new Map() };
    await this.ensureHouseAccounts(tx, [...new Set(ops.map((o) => o.currency))]);
    const accountIds = new Set<string>();
    for (const o of ops) {
      accountIds.add(o.accountId);
      accountIds.add(houseAccountId(o.currency));
    }
    const locked = new Map((await this.ledger.lockAccounts(tx, [...accountIds])).map((a) => [a.id, a]));
    for (const o of ops) {
      const account = locked.get(o.accountId);
      if (!account) throw new DomainException(ErrorCode.NOT_FOUND, `account ${o.accountId} does not exist`);
      if (account.currency !== o.currency) {
        throw new DomainException(
          ErrorCode.CURRENCY_MISMATCH,
          `account ${o.accountId} holds ${account.currency}, not ${o.currency}`,
        );
      }
    }
    // Funds are checked against the balance as it will be after the earlier operations of this call.
    const running = new Map([...locked.values()].map((a) => [a.id, new Decimal(a.balance)]));
    const rows: OperationRow[] = [];
    for (const o of ops) {
      const delta = new Decimal(o.amount).times(PLAYER_SIGN[o.type]);
      const after = (running.get(o.accountId) as Decimal).plus(delta);
      if (o.requireFunds && delta.isNegative() && after.isNegative()) {
        throw new DomainException(
          ErrorCode.INSUFFICIENT_FUNDS,
          `balance of ${o.accountId} is below ${formatAmount(o.amount)}`,
        );
      }
      rows.push(operationRow(o));
      running.set(o.accountId, after);
    }
    const inserted = await this.ledger.insertOperations(tx, rows);
    if (inserted.length)
      tx.afterCommit(() => this.metrics.ledgerOperationsCommitted(inserted.map((o) => o.type)));
    if (inserted.length < rows.length) await this.assertSameOperations(tx, rows, inserted);
    const entries: { operationId: string; accountId: string; amount: string }[] = [];
    const deltas = new Map<string, Decimal>();
    const add = (id: string, amount: Decimal) =>
      deltas.set(id, (deltas.get(id) ?? new Decimal(0)).plus(amount));
    for (const op of inserted) {
      const playerAmount = new Decimal(op.amount).times(PLAYER_SIGN[op.type]);
      const house = houseAccountId(op.currency);
      entries.push({ operationId: op.id, accountId: op.accountId, amount: playerAmount.toFixed(2) });
      entries.push({ operationId: op.id, accountId: house, amount: playerAmount.negated().toFixed(2) });
      add(op.accountId, playerAmount);
      add(house, playerAmount.negated());
    }
    await this.ledger.insertEntries(tx, entries);
    const changed = new Map([...deltas].filter(([, d]) => !d.isZero()).map(([id, d]) => [id, d.toFixed(2)]));
    const updated = await this.ledger.applyBalanceDeltas(tx, changed);
    const balances = new Map([...locked.values()].map((a) => [a.id, updated.get(a.id) ?? a.balance]));
    return {
      inserted: inserted.map((o) => o.key),
      operationIds: new Map(inserted.map((o) => [o.key, o.id])),
      balances,
    };
  }

  /**
   * An operation key that already existed must name the very same operation (type, coupon,
   * generation, account, amount); anything else is a key collision that would silently skip
   * money, so the whole transaction is refused.
   * @throws Error (answered 503 on the callback, 500 elsewhere, and logged).
   */
  private async assertSameOperations(
    tx: Tx,
    wanted: OperationRow[],
    inserted: OperationRow[],
  ): Promise<void> {
    const insertedKeys = new Set(inserted.map((o) => o.key));
    const skipped = wanted.filter((o) => !insertedKeys.has(o.key));
    const existing = new Map(
      (
        await this.ledger.findOperations(
          tx,
          skipped.map((o) => o.key),
        )
      ).map((o) => [o.key, o]),
    );
    for (const o of skipped) {
      const e = existing.get(o.key);
      const same =
        e !== undefined &&
        e.type === o.type &&
        e.accountId === o.accountId &&
        e.couponCode === o.couponCode &&
        e.generation === o.generation &&
        e.currency === o.currency &&
        new Decimal(e.amount).equals(o.amount);
      if (!same) throw new Error(`operation key collision on ${o.key}: the stored operation differs`);
    }
  }

  /**
   * Creates a player account on first use (CONTRACT §10) inside `tx`.
   * @throws DomainException CURRENCY_MISMATCH when it exists with another currency.
   */
  async ensurePlayerAccount(tx: Tx, accountId: string, currency: string): Promise<void> {
    await this.ledger.ensureAccounts(tx, [{ id: accountId, kind: 'player', currency }]);
    const account = await this.ledger.findAccount(tx, accountId);
    if (account && account.currency !== currency) {
      throw new DomainException(
        ErrorCode.CURRENCY_MISMATCH,
        `account ${accountId} holds ${account.currency}, not ${currency}`,
      );
    }
  }

  /**
   * `GET /accounts/{id}` (CONTRACT §10). @throws DomainException NOT_FOUND.
   */
  async getAccount(accountId: string): Promise<AccountView> {
    return this.transactions.run(async (tx) => {
      const account = await this.ledger.findAccount(tx, accountId);
      if (!account || account.kind !== 'player') {
        throw new DomainException(ErrorCode.NOT_FOUND, `account ${accountId} not found`);
      }
      return { id: account.id, currency: account.currency, balance: formatAmount(account.balance) };
    });
  }

  /**
   * A deposit (positive amount) or withdrawal (negative) under an idempotency key, in one
   * transaction (CONTRACT §10). The same key and body return the first result; the same key with
   * another body is refused.
   * @returns the view and whether it was replayed from an earlier request.
   * @throws DomainException IDEMPOTENCY_CONFLICT, CURRENCY_MISMATCH, INSUFFICIENT_FUNDS.
   */
  async adjust(
    accountId: string,
    idempotencyKey: string,
    request: { amount: string; currency: string; reason: string },
  ): Promise<{ view: AdjustmentView; replayed: boolean }> {
    const amount = new Decimal(request.amount);
    const requestHash = createHash('sha256')
      .update(JSON.stringify([accountId, amount.toFixed(2), request.currency, request.reason]))
      .digest('hex');
    return this.transactions.run(async (tx) => {
      const earlier = await this.replayAdjustment(tx, idempotencyKey, requestHash);
      if (earlier) return { view: earlier, replayed: true };
      await this.ensurePlayerAccount(tx, accountId, request.currency);
      // Lock both accounts in the one fixed order, then look again: a concurrent request with the
      // same key has committed by now if it came first, and is answered as it was.
      await this.ensureHouseAccounts(tx, [request.currency]);
      await this.ledger.lockAccounts(tx, [accountId, houseAccountId(request.currency)]);
      const committedMeanwhile = await this.replayAdjustment(tx, idempotencyKey, requestHash);
      if (committedMeanwhile) return { view: committedMeanwhile, replayed: true };
      const key = `adjustment:${idempotencyKey}`;
      const type = amount.isNegative() ? OperationType.WITHDRAWAL : OperationType.DEPOSIT;
      const result = await this.post(tx, [
        {
          key,
          type,
          accountId,
          currency: request.currency,
          amount: amount.abs().toFixed(2),
          requireFunds: type === OperationType.WITHDRAWAL,
        },
      ]);
      if (!result.inserted.length) {
        // A concurrent request with the same key committed first: answer as it did.
        const concurrent = await this.replayAdjustment(tx, idempotencyKey, requestHash);
        if (concurrent) return { view: concurrent, replayed: true };
        throw new DomainException(ErrorCode.IDEMPOTENCY_CONFLICT, 'operation key already used');
      }
      const balanceAfter = result.balances.get(accountId) as string;
      await this.ledger.insertAdjustment(tx, {
        idempotencyKey,
        accountId,
        requestHash,
        amount: amount.toFixed(2),
        currency: request.currency,
        reason: request.reason,
        operationId: result.operationIds.get(key) as string,
        balanceAfter,
      });
      const stored = (await this.ledger.findAdjustment(tx, idempotencyKey)) as AdjustmentRow;
      return { view: toAdjustmentView(stored), replayed: false };
    });
  }

  private async replayAdjustment(
    tx: Tx,
    idempotencyKey: string,
    requestHash: string,
  ): Promise<AdjustmentView | undefined> {
    const earlier = await this.ledger.findAdjustment(tx, idempotencyKey);
    if (!earlier) return undefined;
    if (earlier.requestHash !== requestHash) {
      throw new DomainException(
        ErrorCode.IDEMPOTENCY_CONFLICT,
        'this Idempotency-Key was used with a different request',
      );
    }
    return toAdjustmentView(earlier);
  }

  private async ensureHouseAccounts(tx: Tx, currencies: string[]): Promise<void> {
    const missing = currencies.filter((c) => !this.knownHouseAccounts.has(houseAccountId(c)));
    if (!missing.length) return;
    await this.ledger.ensureAccounts(
      tx,
      missing.map((c) => ({ id: houseAccountId(c), kind: 'house' as const, currency: c })),
    );
    // Remembered only once the creating transaction has committed (see CallbackService / callers).
    tx.afterCommit(() => missing.forEach((c) => this.knownHouseAccounts.add(houseAccountId(c))));
  }
}

function toAdjustmentView(row: AdjustmentRow): AdjustmentView {
  return {
    accountId: row.accountId,
    idempotencyKey: row.idempotencyKey,
    amount: formatAmount(row.amount),
    currency: row.currency,
    reason: row.reason,
    operationKey: row.operationKey,
    balance: formatAmount(row.balanceAfter),
    createdAt: new Date(row.createdAt).toISOString(),
  };
}
