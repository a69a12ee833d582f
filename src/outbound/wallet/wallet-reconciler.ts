import { Decimal } from 'decimal.js';
import Joi from 'joi';
import { parseArgs } from 'node:util';
import type pg from 'pg';
import { request } from 'undici';
import { loadCurrencyTable } from '../../core/ledger/money.config.js';
import { withCliDatabase } from '../../platform/database/cli-database.js';
import { retentionHorizons } from '../../platform/retention-horizons/retention-horizons.js';
import { directionOf, OperationType } from '../../core/ledger/ledger.types.js';
import type { OutboxStatus } from '../outbox/outbox.types.js';

/**
 * A transaction in the wallet's reconciliation export (`GET {WALLET_URL}/transactions`,
 * docs/wallet-http-contract.md, "Reconciliation"): the fields compared; others are ignored.
 */
export interface WalletExportTransaction {
  transactionId: string;
  direction: string;
  type: string;
  accountId: string;
  amount: string;
  currency: string;
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

/** One disagreement between the ledger and the wallet, about one transaction id. */
export interface WalletDifference {
  kind:
    | 'missing_in_wallet'
    | 'applied_but_parked'
    | 'applied_but_skipped'
    | 'unknown_to_ledger'
    | 'applied_twice'
    | 'fields_differ';
  /** The transaction id (= operation key). */
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

/** Formats an amount at its currency's precision (`CurrencyTable.format`). */
export type AmountFormat = (amount: Decimal, currency: string) => string;

/**
 * Compares the ledger's pushed operations with the wallet's export, transaction id by transaction
 * id (docs/wallet.md, "Reconciliation"): every delivered operation applied once with the same
 * direction, type, account, amount and currency (`format` gives amounts at the currency's
 * precision); no parked or skipped operation applied; no transaction the ledger does not know.
 * Balances are not compared: a wallet balance also holds money the receiver never pushed. Pure.
 */
export function reconcileWallet(
  ledger: PushedOperation[],
  transactions: WalletExportTransaction[],
  format: AmountFormat,
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
  let inFlight = 0;
  const known = new Set<string>();
  for (const op of ledger) {
    operations[op.status]++;
    known.add(op.operationKey);
    const t = applied.get(op.operationKey);
    const direction = directionOf(op.type);
    const ours = `${direction} ${format(new Decimal(op.amount), op.currency)} ${op.currency} ${op.accountId}`;
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
  return { operations, inFlight, walletTransactions: transactions.length, differences };
}

/**
 * The ledger's operations that have an outbox row, oldest first (pages of 10 000); only those
 * whose operation key is in `keys`, when given.
 */
export async function pushedOperations(client: pg.ClientBase, keys?: string[]): Promise<PushedOperation[]> {
  const all: PushedOperation[] = [];
  for (let after = '0'; ;) {
    const { rows } = await client.query<PushedOperation & { id: string }>(
      `SELECT o.id::text AS id, f.operation_key AS "operationKey", f.type, f.account_id AS "accountId",
              f.amount::text AS amount, f.currency::text AS currency, o.status
         FROM wallet_outbox o JOIN financial_operations f ON f.id = o.operation_id
        WHERE o.id > $1::bigint AND ($2::text[] IS NULL OR f.operation_key = ANY($2::text[]))
        ORDER BY o.id LIMIT 10000`,
      [after, keys ?? null],
    );
    if (!rows.length) return all;
    for (const { id: _, ...op } of rows) all.push(op);
    after = rows[rows.length - 1].id;
  }
}

/**
 * Differences that the ledger read before the export can show falsely: an operation written, or
 * retried, after that read and applied before the export was read.
 */
const READ_AGAIN: readonly WalletDifference['kind'][] = ['unknown_to_ledger', 'applied_but_parked'];

/**
 * {@link reconcileWallet} of the database of `client` (a running receiver's included) against the
 * export `readExport` returns. The ledger is read first: a delivered operation was applied before
 * it was marked delivered, so it is in the export read after. The operations of transactions that
 * then look unknown or parked are read again once: written or retried meanwhile and delivered, or
 * in flight, they are no difference.
 */
export async function reconcileWithDatabase(
  client: pg.ClientBase,
  readExport: () => Promise<WalletExportTransaction[]>,
  format: AmountFormat,
): Promise<WalletReconciliation> {
  const ledger = await pushedOperations(client);
  const transactions = await readExport();
  const first = withoutExpired(
    reconcileWallet(ledger, transactions, format),
    await expiredKeys(client, transactions),
  );
  const suspects = first.differences.filter((d) => READ_AGAIN.includes(d.kind)).map((d) => d.subject);
  if (!suspects.length) return first;
  const now = new Map((await pushedOperations(client, suspects)).map((op) => [op.operationKey, op]));
  const merged = ledger.map((op) => now.get(op.operationKey) ?? op);
  const read = new Set(ledger.map((op) => op.operationKey));
  for (const op of now.values()) if (!read.has(op.operationKey)) merged.push(op);
  return withoutExpired(
    reconcileWallet(merged, transactions, format),
    await expiredKeys(client, transactions),
  );
}

/**
 * Operation keys of the wallet's transactions whose outbox row the retention policy may have
 * deleted (docs/retention.md): the ledger has the operation, posted before the outbox class's
 * horizon. Not "unknown to the ledger": delivered and expired.
 */
async function expiredKeys(
  client: pg.ClientBase,
  transactions: WalletExportTransaction[],
): Promise<Set<string>> {
  const { outbox: horizon } = await retentionHorizons(client);
  if (!horizon) return new Set();
  const { rows } = await client.query<{ key: string }>(
    `SELECT operation_key AS key FROM financial_operations
      WHERE operation_key = ANY ($1::text[]) AND created_at < $2`,
    [transactions.map((t) => t.transactionId), horizon],
  );
  return new Set(rows.map((r) => r.key));
}

/** `r` without the `unknown_to_ledger` differences of `expired` keys. */
function withoutExpired(r: WalletReconciliation, expired: Set<string>): WalletReconciliation {
  if (!expired.size) return r;
  return {
    ...r,
    differences: r.differences.filter((d) => !(d.kind === 'unknown_to_ledger' && expired.has(d.subject))),
  };
}

/** The export's shape (docs/wallet-http-contract.md, "Reconciliation"); other fields are allowed. */
const EXPORT_SCHEMA = Joi.object({
  transactions: Joi.array()
    .items(
      Joi.object({
        transactionId: Joi.string().min(1).required(),
        direction: Joi.string().required(),
        type: Joi.string().required(),
        accountId: Joi.string().required(),
        amount: Joi.string()
          .pattern(/^\d+(?:\.\d+)?$/)
          .required()
          .messages({ 'string.pattern.base': '{#label} must be a positive decimal string such as "12.50"' }),
        currency: Joi.string().required(),
      }).unknown(true),
    )
    .required(),
}).unknown(true);

/**
 * The wallet's export: `GET {url}/transactions` → `{"transactions": [...]}`, each read at most
 * `timeoutMs` for the headers and for the body.
 * @throws Error saying why, naming the URL: unreachable, not 200, not JSON, not the contract's shape.
 */
export async function walletExport(url: string, timeoutMs: number): Promise<WalletExportTransaction[]> {
  const where = `${url}/transactions`;
  let body: unknown;
  try {
    const res = await request(where, { headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
    if (res.statusCode !== 200) {
      await res.body.dump();
      throw new Error(`HTTP ${res.statusCode}`);
    }
    body = await res.body.json();
  } catch (err) {
    throw new Error(`cannot read the wallet's export GET ${where}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  const { error, value } = EXPORT_SCHEMA.validate(body);
  if (error)
    throw new Error(
      `the wallet's export GET ${where} is not the contract's (docs/wallet-http-contract.md): ${error.message}`,
    );
  return (value as { transactions: WalletExportTransaction[] }).transactions;
}

/** The report: a summary line, one line per difference, the verdict. */
export function formatWalletReconciliation(r: WalletReconciliation): string {
  const o = r.operations;
  return [
    `wallet reconciliation: ${o.pending + o.delivered + o.parked + o.skipped} pushed operations (${o.delivered} delivered, ${o.pending} pending of which ${r.inFlight} applied by the wallet already, ${o.parked} parked, ${o.skipped} skipped); the wallet lists ${r.walletTransactions} transactions; compared by transaction id (balances are not compared: they hold money the receiver did not push)`,
    ...r.differences.map((d) => `  ${d.kind} ${d.subject}: ${d.detail}`),
    r.differences.length ? `${r.differences.length} difference(s)` : 'no difference',
  ].join('\n');
}

const USAGE =
  'usage: npm run wallet:reconcile -- [--wallet-url URL (default WALLET_URL)] [--timeout-ms 10000]';

/**
 * `npm run wallet:reconcile [-- --wallet-url URL] [--timeout-ms 10000]` with the arguments `argv`
 * and the variables `env`: the report ({@link reconcileWithDatabase}) and exit code 0 (no
 * difference), 1 (some), 2 (cannot compare: no wallet URL, bad arguments or settings). Wallet:
 * `--wallet-url`, else `WALLET_URL`. Database: `withDatabase` (the CLI's: `DATABASE_URL`, else
 * the embedded PostgreSQL).
 * @throws Error when the database or the wallet's export cannot be read (exit code 2).
 */
export async function walletReconcileCommand(
  argv: string[],
  env: NodeJS.ProcessEnv,
  withDatabase: <T>(work: (client: pg.ClientBase) => Promise<T>) => Promise<T> = withCliDatabase,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const refuse = (why: string) => ({ code: 2, stdout: '', stderr: `${why}\n${USAGE}\n` });
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { 'wallet-url': { type: 'string' }, 'timeout-ms': { type: 'string', default: '10000' } },
    }));
  } catch (err) {
    return refuse(`wallet:reconcile: ${(err as Error).message}`);
  }
  const url = (values['wallet-url'] || env.WALLET_URL)?.replace(/\/+$/, '');
  if (!url)
    return refuse(
      'wallet:reconcile: WALLET_URL is unset and no --wallet-url was given: no wallet export to compare with',
    );
  const timeoutMs = Number(values['timeout-ms']);
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1)
    return refuse(`wallet:reconcile: --timeout-ms must be a whole number of milliseconds above 0`);
  let currencies;
  try {
    currencies = loadCurrencyTable(env);
  } catch (err) {
    return { code: 2, stdout: '', stderr: `${(err as Error).message}\n` };
  }
  const report = await withDatabase((client) =>
    reconcileWithDatabase(
      client,
      () => walletExport(url, timeoutMs),
      (amount, currency) => currencies.format(amount.toFixed(), currency),
    ),
  );
  return {
    code: report.differences.length ? 1 : 0,
    stdout: `${formatWalletReconciliation(report)}\n`,
    stderr: '',
  };
}
