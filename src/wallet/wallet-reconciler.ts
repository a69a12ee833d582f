import { Decimal } from 'decimal.js';
import type pg from 'pg';
import { request } from 'undici';
import { CREDIT_TYPES, OperationType } from '../ledger/ledger.types.js';
import type { OutboxStatus } from './wallet.types.js';

/** A transaction in the wallet's reconciliation export (`GET {WALLET_URL}/transactions`). */
export interface WalletExportTransaction {
  transactionId: string;
  direction: string;
  type: string;
  accountId: string;
  amount: string;
  currency: string;
}

/** A balance in the wallet's export (`GET {WALLET_URL}/balances`). */
export interface WalletExportBalance {
  accountId: string;
  currency: string;
  balance: string;
}

/** A ledger operation pushed to the wallet, with the state of its outbox row. */
export interface PushedOperation {
  operationKey: string;
  type: OperationType;
  accountId: string;
  amount: string;
  currency: string;
  status: OutboxStatus;
}

/** One disagreement between the ledger and the wallet. */
export interface WalletDifference {
  kind:
    | 'missing_in_wallet'
    | 'applied_but_parked'
    | 'applied_but_skipped'
    | 'unknown_to_ledger'
    | 'applied_twice'
    | 'fields_differ'
    | 'balance_differs';
  subject: string;
  detail: string;
}

/** What {@link reconcileWallet} found. */
export interface WalletReconciliation {
  operations: Record<OutboxStatus, number>;
  /** Pending rows the wallet has applied already (a lost answer): delivered again, not a difference. */
  inFlight: number;
  walletTransactions: number;
  differences: WalletDifference[];
}

/**
 * Compares the ledger's pushed operations with the wallet's export (docs/wallet.md,
 * "Reconciliation"): every delivered operation applied once with the same direction, account,
 * amount and currency; no parked or skipped operation applied; nothing the ledger does not know;
 * and every balance in either equal to the sum of the delivered and skipped (settled by hand)
 * operations of its account and currency (`format` gives amounts at the currency's precision).
 * A pure function.
 */
export function reconcileWallet(
  ledger: PushedOperation[],
  transactions: WalletExportTransaction[],
  balances: WalletExportBalance[],
  format: (amount: Decimal, currency: string) => string,
): WalletReconciliation {
  const differences: WalletDifference[] = [];
  const operations: Record<OutboxStatus, number> = { pending: 0, delivered: 0, parked: 0, skipped: 0 };
  const applied = new Map<string, WalletExportTransaction>();
  for (const t of transactions) {
    if (applied.has(t.transactionId))
      differences.push({
        kind: 'applied_twice',
        subject: t.transactionId,
        detail: 'listed twice by the wallet',
      });
    applied.set(t.transactionId, t);
  }
  const expected = new Map<string, Decimal>();
  const keyOf = (account: string, currency: string) => `${account} ${currency}`;
  let inFlight = 0;
  const known = new Set<string>();
  for (const op of ledger) {
    operations[op.status]++;
    known.add(op.operationKey);
    const t = applied.get(op.operationKey);
    const direction = CREDIT_TYPES.includes(op.type) ? 'credit' : 'debit';
    const ours = `${direction} ${format(new Decimal(op.amount), op.currency)} ${op.currency} ${op.accountId}`;
    // A skipped operation was settled by hand in the wallet: its money is in the wallet's balance.
    if (op.status === 'delivered' || op.status === 'skipped') {
      const key = keyOf(op.accountId, op.currency);
      const delta = new Decimal(op.amount).times(direction === 'credit' ? 1 : -1);
      expected.set(key, (expected.get(key) ?? new Decimal(0)).plus(delta));
    }
    if (!t) {
      if (op.status === 'delivered')
        differences.push({
          kind: 'missing_in_wallet',
          subject: op.operationKey,
          detail: `delivered ${ours}`,
        });
      continue;
    }
    if (op.status === 'pending') inFlight++;
    if (op.status === 'parked' || op.status === 'skipped')
      differences.push({
        kind: `applied_but_${op.status}`,
        subject: op.operationKey,
        detail: `${op.status} ${ours}`,
      });
    const theirs = `${t.direction} ${format(new Decimal(t.amount), t.currency)} ${t.currency} ${t.accountId}`;
    if (theirs !== ours || t.type !== op.type)
      differences.push({
        kind: 'fields_differ',
        subject: op.operationKey,
        detail: `ledger ${op.type} ${ours}, wallet ${t.type} ${theirs}`,
      });
  }
  for (const t of applied.values()) {
    if (!known.has(t.transactionId))
      differences.push({
        kind: 'unknown_to_ledger',
        subject: t.transactionId,
        detail: `${t.direction} ${t.amount} ${t.currency} ${t.accountId}`,
      });
  }
  const walletBalances = new Map(
    balances.map((b) => [keyOf(b.accountId, b.currency), new Decimal(b.balance)]),
  );
  for (const key of [...new Set([...expected.keys(), ...walletBalances.keys()])].sort()) {
    const currency = key.split(' ')[1];
    const ours = expected.get(key) ?? new Decimal(0);
    const theirs = walletBalances.get(key) ?? new Decimal(0);
    if (!ours.eq(theirs))
      differences.push({
        kind: 'balance_differs',
        subject: key,
        detail: `wallet ${format(theirs, currency)}, ledger ${format(ours, currency)} (delivered and skipped operations)`,
      });
  }
  return { operations, inFlight, walletTransactions: transactions.length, differences };
}

/** The ledger's operations that have an outbox row, oldest first (pages of 10 000). */
export async function pushedOperations(client: pg.ClientBase): Promise<PushedOperation[]> {
  const all: PushedOperation[] = [];
  for (let after = '0'; ;) {
    const { rows } = await client.query<PushedOperation & { id: string }>(
      `SELECT o.id::text AS id, f.operation_key AS "operationKey", f.type, f.account_id AS "accountId",
              f.amount::text AS amount, f.currency::text AS currency, o.status
         FROM wallet_outbox o JOIN financial_operations f ON f.id = o.operation_id
        WHERE o.id > $1::bigint ORDER BY o.id LIMIT 10000`,
      [after],
    );
    if (!rows.length) return all;
    for (const { id: _, ...op } of rows) all.push(op);
    after = rows[rows.length - 1].id;
  }
}

/** The wallet's export: `GET {url}/transactions` and `GET {url}/balances` (JSON, as the stand-in). */
export async function walletExport(
  url: string,
  timeoutMs: number,
): Promise<{ transactions: WalletExportTransaction[]; balances: WalletExportBalance[] }> {
  const get = async <T>(path: string): Promise<T> => {
    const res = await request(`${url}${path}`, { headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
    if (res.statusCode !== 200) throw new Error(`GET ${path}: HTTP ${res.statusCode}`);
    return (await res.body.json()) as T;
  };
  const { transactions } = await get<{ transactions: WalletExportTransaction[] }>('/transactions');
  const { balances } = await get<{ balances: WalletExportBalance[] }>('/balances');
  return { transactions, balances };
}

/** The report: a summary line, one line per difference, the verdict. */
export function formatWalletReconciliation(r: WalletReconciliation): string {
  const o = r.operations;
  return [
    `wallet reconciliation: ${o.pending + o.delivered + o.parked + o.skipped} pushed operations (${o.delivered} delivered, ${o.pending} pending of which ${r.inFlight} applied by the wallet already, ${o.parked} parked, ${o.skipped} skipped); the wallet lists ${r.walletTransactions} transactions`,
    ...r.differences.map((d) => `  ${d.kind} ${d.subject}: ${d.detail}`),
    r.differences.length ? `${r.differences.length} difference(s)` : 'no difference',
  ].join('\n');
}
