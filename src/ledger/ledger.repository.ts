import { Injectable } from '@nestjs/common';
import { Statement, Tx } from '../database/transaction.js';
import { AccountKind } from './entities/account.entity.js';
import { OperationType } from './entities/financial-operation.entity.js';

/** A row of `accounts` as read under lock; `balance` is a decimal string. */
export interface AccountRow {
  id: string;
  kind: AccountKind;
  currency: string;
  balance: string;
}

/** A financial operation to insert (amount positive, decimal string). */
export interface OperationRow {
  key: string;
  type: OperationType;
  couponCode: string | null;
  generation: number | null;
  accountId: string;
  amount: string;
  currency: string;
  batchId: string | null;
}

/** An operation as stored, as the partner API shows it. */
export interface StoredOperation {
  key: string;
  type: OperationType;
  generation: number | null;
  amount: string;
  accountId: string;
  createdAt: Date;
}

/** SQLSTATEs raised (through `receiver_assert`) by {@link LedgerRepository.postOperationsStatement}. */
export const LEDGER_SQLSTATE = {
  /** An account of an operation does not exist. */
  ACCOUNT_MISSING: 'RL404',
  /** An account holds another currency than its operation. */
  CURRENCY_MISMATCH: 'RL422',
  /** A key that existed already names another operation (type, coupon, generation, account, amount). */
  KEY_COLLISION: 'RL409',
} as const;

/**
 * Operations as the column arrays the `unnest($1..$8)` of {@link LedgerRepository} statements
 * reads: key, type, coupon code, generation, account, amount, currency, batch id.
 */
function operationColumns(ops: OperationRow[]): unknown[][] {
  return [
    ops.map((o) => o.key),
    ops.map((o) => o.type),
    ops.map((o) => o.couponCode),
    ops.map((o) => o.generation),
    ops.map((o) => o.accountId),
    ops.map((o) => o.amount),
    ops.map((o) => o.currency),
    ops.map((o) => o.batchId),
  ];
}

/** SQL of the ledger tables (accounts, financial operations, ledger entries, adjustments). */
@Injectable()
export class LedgerRepository {
  /** Creates the house accounts that do not exist yet (ascending id order). */
  ensureHouseAccountsStatement(houses: { id: string; currency: string }[]): Statement {
    return {
      name: 'lg_ensure_houses',
      text: `INSERT INTO accounts (id, kind, currency)
             SELECT id, 'house', currency FROM unnest($1::text[], $2::text[]) AS h(id, currency) ORDER BY id COLLATE "C"
             ON CONFLICT (id) DO NOTHING`,
      values: [houses.map((h) => h.id), houses.map((h) => h.currency)],
    };
  }

  /**
   * The whole posting of settlement operations (CONTRACT §7) in one statement, for a pipelined
   * transaction whose next statement is COMMIT: locks the player accounts `playerIds`
   * `FOR NO KEY UPDATE` in ascending id order, checks every operation's player and house account
   * (`houseIds[i]`) exists in the operation's currency, inserts the operations whose key is new,
   * two entries per inserted operation (player: +amount for credits, -amount for debits; house:
   * the opposite) and adds each account's summed delta to its balance: that update, the
   * statement's last step, is what locks the house account (after the players, the ledger's lock
   * order, see {@link lockAccounts}), so it is held only until the COMMIT that follows. A key that existed must
   * name the very same operation. Any failed check raises ({@link LEDGER_SQLSTATE}), so the
   * statement fails and the transaction rolls back. Returns one row: `inserted`, the count, and
   * `types`, the type of each inserted operation (null when none).
   * Amounts are positive decimal strings; signs follow the operation type as in `LedgerService`.
   */
  postOperationsStatement(ops: OperationRow[], houseIds: string[], playerIds: string[]): Statement {
    return {
      name: 'lg_post_settlement',
      text: `WITH oin AS MATERIALIZED (
               SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[], $6::numeric[],
                                    $7::text[], $8::text[], $9::text[])
                 AS o(key, type, code, generation, account, amount, currency, batch_id, house)
             ), lk AS MATERIALIZED (
               SELECT id, currency::text AS currency FROM accounts
               WHERE id = ANY($10::text[]) ORDER BY id COLLATE "C" FOR NO KEY UPDATE
             ), acc AS MATERIALIZED (
               SELECT id, currency FROM lk
               UNION ALL
               SELECT id, currency::text FROM accounts WHERE id IN (SELECT house FROM oin)
             ), checked AS MATERIALIZED (
               SELECT coalesce(bool_and(receiver_assert(
                 a.id IS NOT NULL AND a.currency = x.currency,
                 CASE WHEN a.id IS NULL THEN '${LEDGER_SQLSTATE.ACCOUNT_MISSING}' ELSE '${LEDGER_SQLSTATE.CURRENCY_MISMATCH}' END,
                 CASE WHEN a.id IS NULL THEN format('account %s does not exist', x.account)
                      ELSE format('account %s holds %s, not %s', x.account, a.currency, x.currency) END)), true) AS ok
               FROM (SELECT account, currency FROM oin UNION ALL SELECT house, currency FROM oin) x
               LEFT JOIN acc a ON a.id = x.account
             ), ins AS (
               INSERT INTO financial_operations (operation_key, type, coupon_code, generation, account_id, amount, currency, batch_id)
               SELECT key, type, code, generation, account, amount, currency, batch_id FROM oin
               WHERE (SELECT ok FROM checked)
               ON CONFLICT (operation_key) DO NOTHING
               RETURNING id, operation_key, type, account_id,
                 CASE WHEN type IN ('final_credit', 'deposit') THEN amount ELSE -amount END AS delta
             ), mv AS MATERIALIZED (
               SELECT i.id, 0 AS side, i.account_id AS account, i.delta FROM ins i
               UNION ALL
               SELECT i.id, 1, o.house, -i.delta FROM ins i JOIN oin o ON o.key = i.operation_key
             ), ent AS (
               INSERT INTO ledger_entries (operation_id, account_id, amount)
               SELECT id, account, delta FROM mv ORDER BY id, side
             ), bal AS (
               -- Run after the main query (not referenced by it): the house accounts are locked
               -- here, in ascending id order, right before the balances change and COMMIT follows.
               UPDATE accounts a SET balance = a.balance + d.delta, updated_at = now()
               FROM (SELECT account, sum(delta) AS delta FROM mv GROUP BY account) d
               WHERE a.id = d.account AND d.delta <> 0
                 AND (SELECT count(*) FROM (
                       SELECT id FROM accounts WHERE id IN (SELECT house FROM oin)
                       ORDER BY id COLLATE "C" FOR NO KEY UPDATE) hl) >= 0
             )
             SELECT (SELECT count(*) FROM ins)::int AS inserted,
               (SELECT array_agg(type::text ORDER BY id) FROM ins) AS types,
               coalesce(bool_and(receiver_assert(
                 f.id IS NOT NULL AND f.type = o.type AND f.account_id = o.account
                   AND f.coupon_code IS NOT DISTINCT FROM o.code AND f.generation IS NOT DISTINCT FROM o.generation
                   AND f.currency = o.currency AND f.amount = o.amount,
                 '${LEDGER_SQLSTATE.KEY_COLLISION}',
                 format('operation key collision on %s: the stored operation differs', o.key))), true) AS same
             FROM oin o LEFT JOIN financial_operations f ON f.operation_key = o.key
             WHERE o.key NOT IN (SELECT operation_key FROM ins)`,
      values: [...operationColumns(ops), houseIds, playerIds],
    };
  }

  /** Creates accounts that do not exist yet; existing ones are left as they are. */
  async ensureAccounts(
    tx: Tx,
    accounts: { id: string; kind: AccountKind; currency: string }[],
  ): Promise<void> {
    if (!accounts.length) return;
    await tx.query(
      `INSERT INTO accounts (id, kind, currency)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) ORDER BY 1
       ON CONFLICT (id) DO NOTHING`,
      [accounts.map((a) => a.id), accounts.map((a) => a.kind), accounts.map((a) => a.currency)],
    );
  }

  /**
   * Locks the accounts `FOR NO KEY UPDATE` in the one fixed order of the ledger (no deadlocks):
   * player accounts by ascending id, then house accounts by ascending id. House accounts come last
   * because every settlement touches one: the settlement posting locks it with its final balance
   * update just before COMMIT ({@link postOperationsStatement}), so it is held as briefly as possible.
   * Not `FOR UPDATE`: that conflicts with the `FOR KEY SHARE` locks foreign keys take on accounts
   * (e.g. a coupon registration's `coupons.account_id`), so two transactions that both referenced
   * the account before locking it would deadlock. Only the balance changes, never the key.
   */
  async lockAccounts(tx: Tx, ids: string[]): Promise<AccountRow[]> {
    const { rows } = await tx.query<AccountRow>(
      `SELECT id, kind, currency, balance::text AS balance FROM accounts
       WHERE id = ANY($1::text[]) ORDER BY kind = 'house', id COLLATE "C" FOR NO KEY UPDATE`,
      [ids],
    );
    return rows;
  }

  /**
   * Inserts operations whose key is new; existing keys are skipped without aborting the
   * transaction (`ON CONFLICT DO NOTHING`). @returns the inserted rows with their ids.
   */
  async insertOperations(tx: Tx, ops: OperationRow[]): Promise<(OperationRow & { id: string })[]> {
    if (!ops.length) return [];
    const { rows } = await tx.query<{ id: string; key: string }>(
      `INSERT INTO financial_operations (operation_key, type, coupon_code, generation, account_id, amount, currency, batch_id)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[], $6::numeric[], $7::text[], $8::text[])
       ON CONFLICT (operation_key) DO NOTHING
       RETURNING id::text AS id, operation_key AS key`,
      [...operationColumns(ops)],
    );
    const byKey = new Map(ops.map((o) => [o.key, o]));
    return rows.map((r) => ({ ...(byKey.get(r.key) as OperationRow), id: r.id }));
  }

  /** Stored operations by key, as rows comparable with {@link OperationRow}. */
  async findOperations(tx: Tx, keys: string[]): Promise<OperationRow[]> {
    if (!keys.length) return [];
    const { rows } = await tx.query<OperationRow>(
      `SELECT operation_key AS key, type, coupon_code AS "couponCode", generation, account_id AS "accountId",
              amount::text AS amount, currency, batch_id AS "batchId"
       FROM financial_operations WHERE operation_key = ANY($1::text[])`,
      [keys],
    );
    return rows;
  }

  /** Appends ledger entries (signed amounts). */
  async insertEntries(
    tx: Tx,
    entries: { operationId: string; accountId: string; amount: string }[],
  ): Promise<void> {
    if (!entries.length) return;
    await tx.query(
      `INSERT INTO ledger_entries (operation_id, account_id, amount)
       SELECT * FROM unnest($1::bigint[], $2::text[], $3::numeric[])`,
      [entries.map((e) => e.operationId), entries.map((e) => e.accountId), entries.map((e) => e.amount)],
    );
  }

  /** Adds signed deltas to the materialised balances of accounts already locked by this transaction. */
  async applyBalanceDeltas(tx: Tx, deltas: Map<string, string>): Promise<Map<string, string>> {
    if (!deltas.size) return new Map();
    const ids = [...deltas.keys()];
    const { rows } = await tx.query<{ id: string; balance: string }>(
      `UPDATE accounts a SET balance = a.balance + d.delta, updated_at = now()
       FROM unnest($1::text[], $2::numeric[]) AS d(id, delta)
       WHERE a.id = d.id
       RETURNING a.id, a.balance::text AS balance`,
      [ids, ids.map((id) => deltas.get(id))],
    );
    return new Map(rows.map((r) => [r.id, r.balance]));
  }

  /** An account without locking it, or undefined. */
  async findAccount(tx: Tx, id: string): Promise<AccountRow | undefined> {
    const { rows } = await tx.query<AccountRow>(
      `SELECT id, kind, currency, balance::text AS balance FROM accounts WHERE id = $1`,
      [id],
    );
    return rows[0];
  }

  /** The operations of a coupon in the order they were made. */
  async operationsOfCoupon(tx: Tx, couponCode: string): Promise<StoredOperation[]> {
    const { rows } = await tx.query<StoredOperation>(
      `SELECT operation_key AS key, type, generation, amount::text AS amount, account_id AS "accountId", created_at AS "createdAt"
       FROM financial_operations WHERE coupon_code = $1 ORDER BY id`,
      [couponCode],
    );
    return rows;
  }

  /** The adjustment stored under an idempotency key, if any. */
  async findAdjustment(tx: Tx, idempotencyKey: string): Promise<AdjustmentRow | undefined> {
    const { rows } = await tx.query<AdjustmentRow>(
      `SELECT a.idempotency_key AS "idempotencyKey", a.account_id AS "accountId", a.request_hash AS "requestHash",
              a.amount::text AS amount, a.currency, a.reason, o.operation_key AS "operationKey",
              a.balance_after::text AS "balanceAfter", a.created_at AS "createdAt"
       FROM account_adjustments a JOIN financial_operations o ON o.id = a.operation_id
       WHERE a.idempotency_key = $1`,
      [idempotencyKey],
    );
    return rows[0];
  }

  /** Records an adjustment's request and first result under its idempotency key. */
  async insertAdjustment(
    tx: Tx,
    row: Omit<AdjustmentRow, 'createdAt' | 'operationKey'> & { operationId: string },
  ): Promise<void> {
    await tx.query(
      `INSERT INTO account_adjustments (idempotency_key, account_id, request_hash, amount, currency, reason, operation_id, balance_after)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [
        row.idempotencyKey,
        row.accountId,
        row.requestHash,
        row.amount,
        row.currency,
        row.reason,
        row.operationId,
        row.balanceAfter,
      ],
    );
  }
}

/** A stored adjustment and its first result. */
export interface AdjustmentRow {
  idempotencyKey: string;
  accountId: string;
  requestHash: string;
  amount: string;
  currency: string;
  reason: string;
  operationKey: string;
  balanceAfter: string;
  createdAt: Date;
}
