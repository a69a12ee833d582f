import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { Decimal } from 'decimal.js';
import type { Actor } from '../../platform/auth/actor.js';
import { DomainException, ErrorCode } from '../../platform/common/domain.exception.js';
import { replayOf } from '../../platform/common/idempotency-key.js';
import { formatAmount } from '../../platform/common/money.js';
import { MONEY_CONFIG } from './money.config.js';
import type { MoneyConfig } from './money.config.js';
import { Statement, TransactionRunner, Tx } from '../../platform/database/transaction.js';
import { LedgerMetrics } from './ledger-metrics.js';
import { PostedOperationWriters } from './posted-operation-writers.js';
import { OperatorActionLog } from '../../platform/operator-actions/operator-action-log.js';
import type { ActionSpec } from '../../platform/operator-actions/operator-actions.types.js';
import { Cursor, CURSOR_PART, Page, pageSize, toPage } from '../../platform/common/pagination.js';
import type { AccountSummaryView, StatementEntryView, StatementPageView } from './dto/statement.dto.js';
import { AdjustmentRow, LedgerRepository, PostingRow, StatementRow } from './ledger.repository.js';
import { OperationType, Posting, PostingResult } from './ledger.types.js';
import { adjustmentOperationKey, houseAccountIds } from './postings.js';

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
  /** Name of the partner API key that made it (null before keys had names). */
  actor: string | null;
}

/**
 * The double-entry ledger (CONTRACT §7), the only way money moves. Every financial operation
 * moves money between a player account and the house account of its currency in one posting
 * statement ({@link LedgerRepository.postingStatement}): two entries summing to zero, balances
 * updated under row locks taken players first (ascending id), house last. Operation keys are
 * unique, so posting the same operation twice is a no-op. Refusals are LedgerExceptions.
 */
@Injectable()
export class LedgerService {
  /** House accounts known to exist (created by a committed transaction). */
  private readonly knownHouseAccounts = new Set<string>();

  constructor(
    @Inject(MONEY_CONFIG) private readonly money: MoneyConfig,
    private readonly ledger: LedgerRepository,
    private readonly transactions: TransactionRunner,
    private readonly metrics: LedgerMetrics,
    private readonly actions: OperatorActionLog,
    private readonly writers: PostedOperationWriters,
  ) {}

  /**
   * The statements that post `postings` inside `tx`, for the caller to send in one of its groups
   * (the callback sends them with COMMIT): the house sub-accounts never seen before
   * (`HOUSE_SUB_ACCOUNTS` per currency), then the posting. The inserted operations are counted in `settlement_ledger_operations_total` once
   * `tx` has committed. The posting's error is a LedgerException.
   */
  postingStatements(tx: Tx, postings: Posting[]): { houses?: Statement; posting: Statement<PostingRow> } {
    const all = [...new Set(postings.map((p) => p.currency))].flatMap((currency) =>
      houseAccountIds(currency, this.money.houseSubAccounts).map((id) => ({ id, currency })),
    );
    const houses = all.filter((h) => !this.knownHouseAccounts.has(h.id));
    const posting: Statement<PostingRow> = {
      ...this.ledger.postingStatement(
        postings,
        all.map((h) => h.id),
        [...new Set(postings.map((p) => p.accountId))],
        this.writers.sql('ins'),
      ),
      onResult: ({ rows }) => {
        const types = rows[0]?.types ?? [];
        if (types.length) tx.afterCommit(() => this.metrics.ledgerOperationsCommitted(types));
      },
    };
    if (!houses.length) return { posting };
    tx.afterCommit(() => houses.forEach((h) => this.knownHouseAccounts.add(h.id)));
    return { houses: this.ledger.ensureHouseAccountsStatement(houses), posting };
  }

  /**
   * Posts `postings` inside `tx` now (one round trip).
   * @throws LedgerException NOT_FOUND (no such account), CURRENCY_MISMATCH, INSUFFICIENT_FUNDS
   *   (a `requireFunds` operation would overdraw its player), OPERATION_KEY_COLLISION.
   */
  async post(tx: Tx, postings: Posting[]): Promise<PostingResult> {
    if (!postings.length) return { inserted: new Map(), types: [], balances: new Map() };
    const { posting } = await tx.send(this.postingStatements(tx, postings));
    const row = posting.rows[0];
    return {
      inserted: new Map(Object.entries(row.inserted ?? {})),
      types: row.types ?? [],
      balances: new Map(Object.entries(row.balances ?? {})),
    };
  }

  /** The statement creating a player account on first use (CONTRACT §10); its currency is checked by the posting. */
  ensurePlayerAccountStatement(accountId: string, currency: string): Statement {
    return this.ledger.ensurePlayerAccountStatement(accountId, currency);
  }

  /** `GET /accounts/{id}` (CONTRACT §10). @throws DomainException NOT_FOUND. */
  async getAccount(accountId: string): Promise<AccountView> {
    return this.transactions.run(async (tx) => {
      const account = await this.ledger.findAccount(tx, accountId);
      if (!account || account.kind !== 'player') {
        throw new DomainException(ErrorCode.NOT_FOUND, `account ${accountId} not found`);
      }
      return {
        id: account.id,
        currency: account.currency,
        balance: this.money.currencies.format(account.balance, account.currency),
      };
    });
  }

  /** `GET /accounts`: player accounts by id, those starting with `prefix` when given. */
  async listAccounts(
    prefix: string | undefined,
    query: { limit?: string | number; cursor?: string },
  ): Promise<Page<AccountSummaryView>> {
    const limit = pageSize(query);
    const after =
      query.cursor === undefined ? undefined : Cursor.decode(query.cursor, [/^[A-Za-z0-9._@-]{1,64}$/])[0];
    const rows = await this.transactions.run((tx) => this.ledger.listAccounts(tx, prefix, after, limit + 1));
    return toPage(
      rows,
      limit,
      (r) => [r.id],
      (r) => ({
        id: r.id,
        currency: r.currency,
        balance: this.money.currencies.format(r.balance, r.currency),
        createdAt: r.createdAt.toISOString(),
        updatedAt: r.updatedAt.toISOString(),
      }),
    );
  }

  /**
   * `GET /accounts/{id}/statement`: one page of the player account's ledger entries, newest first,
   * each with its operation and the balance right after it ({@link LedgerRepository.statement}).
   * @throws DomainException NOT_FOUND (no such player account).
   */
  async statement(
    accountId: string,
    query: { from?: string; to?: string; limit?: string | number; cursor?: string },
  ): Promise<StatementPageView> {
    const limit = pageSize(query);
    const before = query.cursor === undefined ? undefined : Cursor.decode(query.cursor, [CURSOR_PART.id])[0];
    const { account, rows } = await this.statementPage(accountId, query, before, limit + 1);
    return {
      accountId: account.id,
      currency: account.currency,
      balance: account.balance,
      ...toPage(
        rows,
        limit,
        (r) => [r.entryId],
        (r) => this.entryView(r),
      ),
    };
  }

  /**
   * Every entry of the statement's range, newest first, a page of `pageRows` at a time, each page
   * in its own short transaction (the balance after an entry never changes once committed, so the
   * pages agree however long the export takes). The first page is read before this returns, so an
   * unknown account is a 404 and not a broken download.
   * @throws DomainException NOT_FOUND.
   */
  async statementExport(
    accountId: string,
    query: { from?: string; to?: string },
    pageRows = 1000,
  ): Promise<AsyncIterable<StatementEntryView[]>> {
    const first = await this.statementPage(accountId, query, undefined, pageRows);
    const read = (before: string) => this.statementPage(accountId, query, before, pageRows);
    const view = (r: StatementRow) => this.entryView(r);
    return (async function* () {
      let rows = first.rows;
      while (rows.length) {
        yield rows.map(view);
        if (rows.length < pageRows) return;
        rows = (await read(rows[rows.length - 1].entryId)).rows;
      }
    })();
  }

  private async statementPage(
    accountId: string,
    query: { from?: string; to?: string },
    before: string | undefined,
    limit: number,
  ): Promise<{ account: AccountView; rows: StatementRow[] }> {
    return this.transactions.run(async (tx) => {
      const account = await this.ledger.findAccount(tx, accountId);
      const rows =
        account?.kind === 'player'
          ? await this.ledger.statement(tx, accountId, {
              from: query.from ? new Date(query.from) : undefined,
              to: query.to ? new Date(query.to) : undefined,
              before,
              limit,
            })
          : undefined;
      if (!account || !rows) throw new DomainException(ErrorCode.NOT_FOUND, `account ${accountId} not found`);
      return {
        account: {
          id: account.id,
          currency: account.currency,
          balance: this.money.currencies.format(account.balance, account.currency),
        },
        rows,
      };
    });
  }

  private entryView(r: StatementRow): StatementEntryView {
    return {
      entryId: r.entryId,
      at: new Date(r.at).toISOString(),
      operationKey: r.operationKey,
      type: r.type,
      couponCode: r.couponCode,
      amount: this.money.currencies.format(r.amount, r.currency),
      balanceAfter: this.money.currencies.format(r.balanceAfter, r.currency),
      currency: r.currency,
    };
  }

  /**
   * A deposit (positive amount) or withdrawal (negative) under an idempotency key, in one
   * transaction (CONTRACT §10), recorded with `actor` (the partner API key's name) and as an
   * operator action (a refusal too, docs/api.md#operator-actions); the amount was
   * checked against its currency by the DTO. The same key and body return the first result (with
   * its actor, whichever key asks again); the same key with another body is refused.
   * @returns the view and whether it was replayed from an earlier request.
   * @throws DomainException IDEMPOTENCY_CONFLICT; LedgerException CURRENCY_MISMATCH,
   *   INSUFFICIENT_FUNDS.
   */
  async adjust(
    accountId: string,
    idempotencyKey: string,
    request: { amount: string; currency: string; reason: string },
    actor: Actor,
  ): Promise<{ view: AdjustmentView; replayed: boolean }> {
    const amount = new Decimal(request.amount);
    // The amount with at least 2 fraction digits (never rounded): the hashes of 2-digit requests
    // are those stored before per-currency precision.
    const requestHash = createHash('sha256')
      .update(JSON.stringify([accountId, formatAmount(amount), request.currency, request.reason]))
      .digest('hex');
    const spec = (done?: { view: AdjustmentView; replayed: boolean }): ActionSpec => ({
      action: 'adjustment',
      targetKind: 'account',
      targetId: accountId,
      reason: request.reason,
      details: {
        idempotencyKey,
        operationKey: adjustmentOperationKey(idempotencyKey),
        amount: this.money.currencies.format(amount.toFixed(), request.currency),
        currency: request.currency,
        ...(done ? { balance: done.view.balance, replayed: done.replayed } : {}),
      },
    });
    return this.actions.perform(actor, spec(), () =>
      this.transactions.run(async (tx) => {
        await this.actions.begin(tx, actor);
        const result = await this.adjustIn(
          tx,
          accountId,
          idempotencyKey,
          request,
          actor,
          amount,
          requestHash,
        );
        await this.actions.ok(tx, actor, spec(result));
        return result;
      }),
    );
  }

  /** The adjustment inside its transaction (the first result again for a replayed key). */
  private async adjustIn(
    tx: Tx,
    accountId: string,
    idempotencyKey: string,
    request: { amount: string; currency: string; reason: string },
    actor: Actor,
    amount: Decimal,
    requestHash: string,
  ): Promise<{ view: AdjustmentView; replayed: boolean }> {
    const earlier = await this.replayAdjustment(tx, idempotencyKey, requestHash);
    if (earlier) return { view: earlier, replayed: true };
    // The player's row lock orders requests with the same key: look again once it is held.
    await tx.send({
      account: this.ledger.ensurePlayerAccountStatement(accountId, request.currency),
      lock: this.ledger.lockPlayersStatement([accountId]),
    });
    const meanwhile = await this.replayAdjustment(tx, idempotencyKey, requestHash);
    if (meanwhile) return { view: meanwhile, replayed: true };
    const key = adjustmentOperationKey(idempotencyKey);
    const type = amount.isNegative() ? OperationType.WITHDRAWAL : OperationType.DEPOSIT;
    const result = await this.post(tx, [
      {
        key,
        type,
        accountId,
        currency: request.currency,
        amount: amount.abs().toFixed(),
        requireFunds: type === OperationType.WITHDRAWAL,
      },
    ]);
    const operationId = result.inserted.get(key);
    if (operationId === undefined)
      throw new DomainException(ErrorCode.IDEMPOTENCY_CONFLICT, 'operation key already used');
    await this.ledger.insertAdjustment(tx, {
      idempotencyKey,
      accountId,
      requestHash,
      amount: amount.toFixed(),
      currency: request.currency,
      reason: request.reason,
      operationId,
      balanceAfter: result.balances.get(accountId) as string,
      actor: actor.name,
    });
    const stored = (await this.ledger.findAdjustment(tx, idempotencyKey)) as AdjustmentRow;
    return { view: this.adjustmentView(stored), replayed: false };
  }

  private async replayAdjustment(
    tx: Tx,
    idempotencyKey: string,
    requestHash: string,
  ): Promise<AdjustmentView | undefined> {
    const earlier = replayOf(await this.ledger.findAdjustment(tx, idempotencyKey), requestHash);
    return earlier && this.adjustmentView(earlier);
  }

  /** An adjustment with its amounts at the currency's precision. */
  private adjustmentView(row: AdjustmentRow): AdjustmentView {
    return {
      accountId: row.accountId,
      idempotencyKey: row.idempotencyKey,
      amount: this.money.currencies.format(row.amount, row.currency),
      currency: row.currency,
      reason: row.reason,
      operationKey: row.operationKey,
      balance: this.money.currencies.format(row.balanceAfter, row.currency),
      createdAt: new Date(row.createdAt).toISOString(),
      actor: row.actor,
    };
  }
}
