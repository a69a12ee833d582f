import { Injectable } from '@nestjs/common';
import { In } from 'typeorm';
import { Statement, Tx } from '../../platform/database/transaction.js';
import { LEDGER_SQLSTATE, ledgerErrorOf } from './ledger.exception.js';
import { AccountEntity } from './entities/account.entity.js';
import { FinancialOperationEntity } from './entities/financial-operation.entity.js';
import { OperationType, Posting, signedAmountSql } from './ledger.types.js';
import { ErrorCode } from '../../platform/common/domain.exception.js';

/** The one row the posting statement returns. */
export interface PostingRow {
  /** Inserted operations: key → id (null when none). */
  inserted: Record<string, string> | null;
  types: OperationType[] | null;
  /** Player account → balance after the posting. */
  balances: Record<string, string> | null;
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
  /** Name of the partner API key that made it; null for rows from before keys had names. */
  actor: string | null;
}

/** A player account as `GET /accounts` lists it. */
export interface AccountListRow {
  id: string;
  currency: string;
  balance: string;
  createdAt: Date;
  updatedAt: Date;
}

/** One ledger entry of an account's statement, with its operation and the balance right after it. */
export interface StatementRow {
  entryId: string;
  at: Date;
  operationKey: string;
  type: OperationType;
  couponCode: string | null;
  /** Signed: positive credits the account. */
  amount: string;
  balanceAfter: string;
  currency: string;
}

/** Filters of {@link LedgerRepository.statement}: `from` inclusive, `to` exclusive, `before` an entry id. */
export interface StatementFilter {
  from?: Date;
  to?: Date;
  before?: string;
  limit: number;
}

/** SQL of the ledger tables: accounts, financial operations, ledger entries, adjustments (CONTRACT §7). */
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

  /** Creates a player account on first use (CONTRACT §10); an existing one is left as it is. */
  ensurePlayerAccountStatement(id: string, currency: string): Statement {
    return {
      name: 'lg_ensure_player',
      text: `INSERT INTO accounts (id, kind, currency) VALUES ($1, 'player', $2) ON CONFLICT (id) DO NOTHING`,
      values: [id, currency],
    };
  }

  /**
   * Row-locks player accounts `FOR NO KEY UPDATE` in ascending id order, the ledger's lock order
   * (players by id, then the house account, see {@link postingStatement}). Not `FOR UPDATE`: that
   * conflicts with the `FOR KEY SHARE` locks foreign keys take (e.g. a coupon registration's
   * `coupons.account_id`), so two transactions that referenced the account first would deadlock.
   */
  lockPlayersStatement(ids: string[]): Statement<{ id: string }> {
    return {
      name: 'lg_lock_players',
      text: `SELECT id FROM accounts WHERE id = ANY($1::text[]) ORDER BY id COLLATE "C" FOR NO KEY UPDATE`,
      values: [ids],
    };
  }

  /**
   * The whole posting (CONTRACT §7) in one statement: locks the players (ascending id); checks
   * accounts, currencies and `requireFunds` (in the given order); takes one free house sub-account
   * per currency among `houseIds` (`SKIP LOCKED`; waits only when all are held); inserts the new
   * operations, two entries each, the balance deltas, and the rows `writers` add for the new
   * operations (the outboxes' CTE bodies, reading `ins`: docs/wallet.md). An existing key must name
   * the same operation. A failed check raises its {@link LEDGER_SQLSTATE}, mapped to a
   * LedgerException.
   */
  postingStatement(
    postings: Posting[],
    houseIds: string[],
    playerIds: string[],
    writers: readonly string[],
  ): Statement<PostingRow> {
    const code = LEDGER_SQLSTATE;
    // One of the house sub-accounts $10 of currency c.currency, at random: a free one, or with
    // `wait` any one, waiting for its lock.
    const pickHouse = (wait: boolean) =>
      `(SELECT h.id FROM unnest($10::text[]) AS p(id) JOIN accounts h ON h.id = p.id
         WHERE h.kind = 'house' AND h.currency = c.currency
         ORDER BY random() LIMIT 1 FOR NO KEY UPDATE OF h${wait ? '' : ' SKIP LOCKED'})`;
    return {
      name: 'lg_post',
      genericPlan: true,
      text: `WITH oin AS MATERIALIZED (
               SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[], $6::numeric[],
                                    $7::text[], $8::text[], $9::boolean[]) WITH ORDINALITY
                 AS o(key, type, code, generation, account, amount, currency, batch_id, require_funds, ord)
             ), lk AS MATERIALIZED (
               -- Joined to the ids, not filtered by \`= ANY($11)\`: the generic plan may scan
               -- accounts, and a scan filtered by an array parameter compares each row with
               -- every id (pickHouse too).
               SELECT a.id, a.currency::text AS currency, a.balance
               FROM unnest($11::text[]) AS p(id) JOIN accounts a ON a.id = p.id
               ORDER BY a.id COLLATE "C" FOR NO KEY UPDATE OF a
             ), funds AS MATERIALIZED (
               -- Only when an operation requires funds: each new operation's player balance after
               -- it, the operations before it (in the given order) included.
               SELECT f.account, f.amount, f.delta, f.require_funds,
                      l.balance + sum(f.delta) OVER (PARTITION BY f.account ORDER BY f.ord) AS after
               FROM (SELECT o.*, ${signedAmountSql('o.type', 'o.amount')} AS delta
                     FROM oin o
                     WHERE NOT EXISTS (SELECT 1 FROM financial_operations x WHERE x.operation_key = o.key)) f
               JOIN lk l ON l.id = f.account
               WHERE (SELECT bool_or(require_funds) FROM oin)
             ), checked AS MATERIALIZED (
               SELECT coalesce(bool_and(receiver_assert(
                 a.id IS NOT NULL AND a.currency = o.currency,
                 CASE WHEN a.id IS NULL THEN '${code[ErrorCode.NOT_FOUND]}' ELSE '${code[ErrorCode.CURRENCY_MISMATCH]}' END,
                 CASE WHEN a.id IS NULL THEN format('account %s does not exist', o.account)
                      ELSE format('account %s holds %s, not %s', o.account, a.currency, o.currency) END)), true)
               AND (SELECT coalesce(bool_and(receiver_assert(after >= 0, '${code[ErrorCode.INSUFFICIENT_FUNDS]}',
                      format('balance of %s is below %s', account, amount))), true)
                    FROM funds WHERE require_funds AND delta < 0) AS ok
               FROM oin o LEFT JOIN lk a ON a.id = o.account
             ), house AS MATERIALIZED (
               -- After the players (it waits for the checks): one house sub-account per currency.
               SELECT currency, id FROM (
                 SELECT c.currency, coalesce(${pickHouse(false)}, ${pickHouse(true)}) AS id
                 FROM (SELECT DISTINCT currency FROM oin) c
                 WHERE (SELECT ok FROM checked)) h
               WHERE receiver_assert(id IS NOT NULL, '${code[ErrorCode.NOT_FOUND]}', format('no house account holds %s', currency))
             ), ins AS (
               INSERT INTO financial_operations (operation_key, type, coupon_code, generation, account_id, amount, currency, batch_id)
               SELECT key, type, code, generation, account, amount, currency, batch_id FROM oin
               WHERE (SELECT ok FROM checked)
               ORDER BY ord
               ON CONFLICT (operation_key) DO NOTHING
               RETURNING id, operation_key, type, account_id, currency,
                 ${signedAmountSql('type', 'amount')} AS delta
             ), mv AS MATERIALIZED (
               SELECT i.id, 0 AS side, i.account_id AS account, i.delta FROM ins i
               UNION ALL
               SELECT i.id, 1, h.id, -i.delta FROM ins i JOIN house h ON h.currency = i.currency
             ), ent AS (
               INSERT INTO ledger_entries (operation_id, account_id, amount)
               SELECT id, account, delta FROM mv ORDER BY id, side
             ), bal AS (
               UPDATE accounts a SET balance = a.balance + d.delta, updated_at = now()
               FROM (SELECT account, sum(delta) AS delta FROM mv GROUP BY account) d
               WHERE a.id = d.account AND d.delta <> 0
             )${writers
               .map(
                 (sql, i) => `, posted_${i} AS (
               ${sql}
             )`,
               )
               .join('')}
             SELECT (SELECT json_object_agg(operation_key, id::text) FROM ins) AS inserted,
               (SELECT array_agg(type::text ORDER BY id) FROM ins) AS types,
               (SELECT json_object_agg(l.id, (l.balance + coalesce(d.delta, 0))::text)
                  FROM lk l LEFT JOIN (SELECT account_id, sum(delta) AS delta FROM ins GROUP BY account_id) d
                    ON d.account_id = l.id) AS balances,
               coalesce(bool_and(receiver_assert(
                 f.id IS NOT NULL AND f.type = o.type AND f.account_id = o.account
                   AND f.coupon_code IS NOT DISTINCT FROM o.code AND f.generation IS NOT DISTINCT FROM o.generation
                   AND f.currency = o.currency AND f.amount = o.amount,
                 '${code[ErrorCode.OPERATION_KEY_COLLISION]}',
                 format('operation key collision on %s: the stored operation differs', o.key))), true) AS same
             FROM oin o LEFT JOIN financial_operations f ON f.operation_key = o.key
             WHERE o.key NOT IN (SELECT operation_key FROM ins)`,
      values: [
        postings.map((p) => p.key),
        postings.map((p) => p.type),
        postings.map((p) => p.couponCode ?? null),
        postings.map((p) => p.generation ?? null),
        postings.map((p) => p.accountId),
        postings.map((p) => p.amount),
        postings.map((p) => p.currency),
        postings.map((p) => p.batchId ?? null),
        postings.map((p) => p.requireFunds === true),
        houseIds,
        playerIds,
      ],
      mapError: ledgerErrorOf,
    };
  }

  /** An account without locking it, or null. */
  findAccount(tx: Tx, id: string): Promise<AccountEntity | null> {
    return tx.manager.findOneBy(AccountEntity, { id });
  }

  /** The operations of a coupon in the order they were made. */
  operationsOfCoupon(tx: Tx, couponCode: string): Promise<FinancialOperationEntity[]> {
    return tx.manager.find(FinancialOperationEntity, { where: { couponCode }, order: { id: 'ASC' } });
  }

  /** The operations of a coupon posted for the batches `batchIds` (its snapshots'), in the order made. */
  operationsOfBatches(tx: Tx, couponCode: string, batchIds: string[]): Promise<FinancialOperationEntity[]> {
    return tx.manager.find(FinancialOperationEntity, {
      where: { couponCode, batchId: In(batchIds) },
      order: { id: 'ASC' },
    });
  }

  /**
   * Player accounts by id (ascending, the column's collation), those whose id starts with
   * `prefix` when given (`^@`: the SP-GiST index, whatever the collation), after `after`.
   */
  async listAccounts(
    tx: Tx,
    prefix: string | undefined,
    after: string | undefined,
    limit: number,
  ): Promise<AccountListRow[]> {
    const { rows } = await tx.query<AccountListRow>(
      `SELECT id, currency, balance::text AS balance, created_at AS "createdAt", updated_at AS "updatedAt"
         FROM accounts
        WHERE kind = 'player' ${prefix === undefined ? '' : 'AND id ^@ $3'} AND ($1::text IS NULL OR id > $1)
        ORDER BY id LIMIT $2`,
      prefix === undefined ? [after ?? null, limit] : [after ?? null, limit, prefix],
    );
    return rows;
  }

  /**
   * One page of an account's statement, newest first (entry id descending), with each entry's
   * balance right after it. The account's entries are inserted under its row lock, so their id
   * order is the order they were committed in; the balance after an entry is the account's
   * balance minus its newer entries, read in the same statement (one snapshot) through
   * `ledger_entries (account_id, id)`: the posting statement stays as it is.
   * @returns undefined when there is no such player account.
   */
  async statement(tx: Tx, accountId: string, f: StatementFilter): Promise<StatementRow[] | undefined> {
    const { rows } = await tx.query<StatementRow & { sort: string | null }>(
      `WITH a AS MATERIALIZED (
         SELECT balance FROM accounts WHERE id = $1 AND kind = 'player'
       ), page AS MATERIALIZED (
         SELECT e.id, e.created_at, e.amount, e.operation_id FROM ledger_entries e
          WHERE e.account_id = $1 AND ($2::bigint IS NULL OR e.id < $2)
            AND ($3::timestamptz IS NULL OR e.created_at >= $3) AND ($4::timestamptz IS NULL OR e.created_at < $4)
            AND EXISTS (SELECT 1 FROM a)
          ORDER BY e.id DESC LIMIT $5
       ), span AS (
         -- Every entry of the account from the page's oldest on (those the time filter left out
         -- included), each with the sum of the entries after it.
         SELECT n.id, sum(n.amount) OVER (ORDER BY n.id DESC ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS later
           FROM ledger_entries n
          WHERE n.account_id = $1 AND n.id >= (SELECT min(id) FROM page)
       )
       SELECT p.id AS sort, p.id::text AS "entryId", p.created_at AS at, o.operation_key AS "operationKey", o.type,
              o.coupon_code AS "couponCode", p.amount::text AS amount, o.currency::text AS currency,
              ((SELECT balance FROM a) - coalesce(s.later, 0))::text AS "balanceAfter"
         FROM page p JOIN span s ON s.id = p.id JOIN financial_operations o ON o.id = p.operation_id
       UNION ALL
       SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM a
       ORDER BY sort DESC NULLS LAST`,
      [accountId, f.before ?? null, f.from ?? null, f.to ?? null, f.limit],
    );
    if (!rows.length) return undefined; // not even the account's row
    return rows.filter((r) => r.sort !== null).map(({ sort: _, ...r }) => r);
  }

  /** The adjustment stored under an idempotency key, if any. */
  async findAdjustment(tx: Tx, idempotencyKey: string): Promise<AdjustmentRow | undefined> {
    const { rows } = await tx.query<AdjustmentRow>(
      `SELECT a.idempotency_key AS "idempotencyKey", a.account_id AS "accountId", a.request_hash AS "requestHash",
              a.amount::text AS amount, a.currency, a.reason, o.operation_key AS "operationKey",
              a.balance_after::text AS "balanceAfter", a.created_at AS "createdAt", a.actor
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
      `INSERT INTO account_adjustments (idempotency_key, account_id, request_hash, amount, currency, reason, operation_id, balance_after, actor)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [
        row.idempotencyKey,
        row.accountId,
        row.requestHash,
        row.amount,
        row.currency,
        row.reason,
        row.operationId,
        row.balanceAfter,
        row.actor,
      ],
    );
  }
}
