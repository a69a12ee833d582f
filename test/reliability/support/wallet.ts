import type pg from 'pg';
import type { RunningWallet } from '../../../sim/wallet.js';
import { CurrencyTable } from '../../../src/platform/common/currency.js';
import {
  pushedOperations,
  reconcileWallet,
  WalletReconciliation,
} from '../../../src/outbound/wallet/wallet-reconciler.js';

// The ledger against the stand-in wallet (sim/wallet.ts) in the reliability tests of the wallet
// outbox (docs/wallet.md): the reconciliation finance runs, and each account's order.

/** {@link reconcileWallet} of the pushed operations in `pool`'s database against `wallet`'s export. */
export async function reconcileWithWallet(
  pool: pg.Pool,
  wallet: RunningWallet,
  currencies: CurrencyTable = CurrencyTable.of(),
): Promise<WalletReconciliation> {
  const client = await pool.connect();
  try {
    return reconcileWallet(await pushedOperations(client), wallet.transactions(), (a, c) =>
      currencies.format(a.toFixed(), c),
    );
  } finally {
    client.release();
  }
}

/** Each account's pushed operation keys in ledger order (`financial_operations.id`), from `pool`'s database. */
export async function ledgerOrder(pool: pg.Pool, accounts?: string[]): Promise<Record<string, string[]>> {
  const { rows } = await pool.query<{ account_id: string; keys: string[] }>(
    `SELECT f.account_id, array_agg(f.operation_key ORDER BY f.id) AS keys
       FROM wallet_outbox o JOIN financial_operations f ON f.id = o.operation_id
      WHERE $1::text[] IS NULL OR f.account_id = ANY($1::text[])
      GROUP BY f.account_id`,
    [accounts ?? null],
  );
  return Object.fromEntries(rows.map((r) => [r.account_id, r.keys]));
}

/** Each account's transaction ids in the order `wallet` applied them. */
export function walletOrder(wallet: RunningWallet, accounts?: string[]): Record<string, string[]> {
  const order: Record<string, string[]> = {};
  for (const t of wallet.transactions())
    if (!accounts || accounts.includes(t.accountId)) (order[t.accountId] ??= []).push(t.transactionId);
  return order;
}

/** Outbox rows not delivered, parked or skipped yet (of `accounts` when given). */
export async function pendingRows(pool: pg.Pool, accounts?: string[]): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM wallet_outbox
      WHERE status = 'pending' AND ($1::text[] IS NULL OR account_id = ANY($1::text[]))`,
    [accounts ?? null],
  );
  return rows[0].n;
}

/** Delivery attempts recorded, of them retries, and the most attempts of one row. */
export async function attemptFigures(
  pool: pg.Pool,
): Promise<{ rows: number; attempts: number; retries: number; maxAttempts: number }> {
  const { rows } = await pool.query<{ rows: number; attempts: number; retries: number; maxAttempts: number }>(
    `SELECT (SELECT count(*)::int FROM wallet_outbox) AS rows,
            (SELECT count(*)::int FROM wallet_delivery_attempts) AS attempts,
            (SELECT count(*)::int FROM wallet_delivery_attempts WHERE outcome = 'retry') AS retries,
            (SELECT coalesce(max(attempts), 0)::int FROM wallet_outbox) AS "maxAttempts"`,
  );
  return rows[0];
}
