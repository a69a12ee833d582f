import { Decimal } from 'decimal.js';
import { randomBytes, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import { OperationType } from '../../../core/ledger/ledger.types.js';
import { couponOperationKey } from '../../../core/ledger/postings.js';
import type { OutboxDelivery } from '../../outbox/outbox.types.js';
import {
  batchCallBody,
  outcomeOfStatus,
  outcomesOfBatchAnswer,
  walletRequestHeaders,
} from '../connectors/http-wallet.connector.js';
import type { WalletTransaction } from '../wallet-connector.js';
import { walletExport, WalletExportTransaction } from '../wallet-reconciler.js';
import { walletTransactionOf } from '../wallet-transaction.js';

/**
 * The certification kit's plumbing (docs/wallet.md, "Certifying a wallet"): it builds and sends
 * transactions exactly as the receiver does (the outbox's body, {@link walletRequestHeaders},
 * {@link batchCallBody}), reads each answer as the receiver would ({@link outcomeOfStatus},
 * {@link outcomesOfBatchAnswer}), and observes effects through what the wallet tells: the
 * `balance` of its answers (read with a 0.01 probe credit) and its reconciliation export.
 */

/** What a check observed the wallet through. */
export type Observation = 'status' | 'answer' | 'balance' | 'export' | 'timing';

/** What the report says of each {@link Observation}. */
export const OBSERVATIONS: Record<Observation, string> = {
  status: 'the HTTP status and how the receiver reads it',
  answer: 'the body of the answer (batch results, the answer to a repeat)',
  balance: "the `balance` of the wallet's answers, read with a 0.01 probe credit after the scenario",
  export: 'the reconciliation export GET /transactions (each transactionId listed once when applied)',
  timing: 'the time each single call took',
};

/** One request the kit sent and what came back. */
export interface Exchange {
  label: string;
  request: { method: string; path: string; headers: Record<string, string>; body: string };
  /** HTTP status; absent on a transport error or timeout. */
  status?: number;
  /** The answer's body (first 600 characters). */
  answer?: string;
  error?: string;
  ms: number;
  /** How the receiver would read the answer (docs/wallet-http-contract.md, "Answers"). */
  reading: string;
}

export interface Check {
  ok: boolean;
  /** What is expected. */
  what: string;
  /** What was seen. */
  seen: string;
  via: Observation;
  /** A passing check that deserves a look (not a failure). */
  warning?: boolean;
}

export type ScenarioStatus = 'passed' | 'failed' | 'skipped';

export interface ScenarioResult {
  id: string;
  title: string;
  group: 'single call' | 'security' | 'batch call' | 'reconciliation' | 'latency';
  /** The contract's section it checks (docs/wallet-http-contract.md). */
  contract: string;
  status: ScenarioStatus;
  /** One line: why it passed, failed or was skipped. */
  why: string;
  /** What the scenario's checks observed the wallet through. */
  observations: Observation[];
  warnings: string[];
  checks: Check[];
  exchanges: Exchange[];
}

export interface CertifyOptions {
  /** The wallet's base URL (`WALLET_URL`: the kit posts to `{url}/transactions`). */
  url: string;
  secret: string;
  /** Run the batch call's scenarios (the wallet offers the batch call). */
  batch: boolean;
  /** Test accounts given by the bookmaker (at least 2); default: the kit names its own. */
  accounts?: string[];
  currency: string;
  /** The receiver's `WALLET_TIMEOUT_MS` (each request's limit; the latency bands are shares of it). */
  timeoutMs: number;
  /** Elements of the batch-size scenario (the `WALLET_BATCH_SIZE` to be configured). */
  batchSize: number;
}

/** Thrown by a scenario when the wallet offers no way to observe what it must check. */
export class Unobservable extends Error {}
/** Thrown by a scenario that does not apply to this wallet (the reason is the message). */
export class NotApplicable extends Error {}

/** A transaction as the receiver would build it, and its exact bytes. */
export interface Sent {
  transaction: WalletTransaction;
  body: Buffer;
}

/** A single call's outcome: the exchange, the receiver's reading, the answer's JSON. */
export interface Answered {
  exchange: Exchange;
  outcome: OutboxDelivery['outcome'];
  json: Record<string, unknown> | undefined;
}

const EXCERPT = 600;
const PROBE = new Decimal('0.01');

function shorten(text: string): string {
  return text.length > EXCERPT ? `${text.slice(0, EXCERPT)}… (${text.length} characters)` : text;
}

function parse(text: string | undefined): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(text ?? '') as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The `balance` of an answer, when it is a decimal string. */
export function balanceOf(json: Record<string, unknown> | undefined): Decimal | undefined {
  const b = json?.balance;
  return typeof b === 'string' && /^-?\d+(?:\.\d+)?$/.test(b) ? new Decimal(b) : undefined;
}

/** The scenario being run: its checks and exchanges. */
export class ScenarioRun {
  readonly checks: Check[] = [];
  readonly exchanges: Exchange[] = [];
  readonly warnings: string[] = [];

  check(ok: boolean, what: string, seen: string, via: Observation): boolean {
    this.checks.push({ ok, what, seen, via });
    return ok;
  }

  warn(what: string, seen: string, via: Observation): void {
    this.checks.push({ ok: true, what, seen, via, warning: true });
    this.warnings.push(`${what}: ${seen}`);
  }
}

/**
 * The kit's connection to one wallet: it sends, reads answers, keeps each account's last balance
 * seen and the transactions answered as applied (for the reconciliation scenario).
 */
export class Kit {
  readonly runId = `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
  readonly accounts: string[];
  readonly ownAccounts: boolean;
  /** Single-call durations in milliseconds (the latency scenario). */
  readonly latencies: number[] = [];
  /** Transaction ids first answered as applied (2xx, or `applied`/`duplicate`), with what was sent. */
  readonly answeredApplied = new Map<string, WalletTransaction>();
  /** Whether the wallet's answers carry a `balance` (known after the first applied credit). */
  balanceInAnswers: boolean | undefined;
  /** Why the export cannot be read, or undefined when it can (set by {@link start}). */
  exportProblem: string | undefined;
  /** The business rule seen for a debit above the balance. */
  debitRule: 'negative' | 'refuses' | undefined;
  private readonly agent: Agent;
  private readonly known = new Map<string, Decimal>();
  private seq = 0;
  private run: ScenarioRun | undefined;

  constructor(readonly options: CertifyOptions) {
    this.ownAccounts = !options.accounts?.length;
    const count = Math.max(6, options.batchSize + 1);
    this.accounts = this.ownAccounts
      ? Array.from({ length: count }, (_, i) => `certify-${this.runId}-${i + 1}`)
      : [...(options.accounts ?? [])];
    this.agent = new Agent({
      connectTimeout: options.timeoutMs,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      pipelining: 1,
      connections: 32,
    });
  }

  /**
   * Checks that the wallet answers at all (`GET {url}/transactions`, whatever its status: nothing
   * is sent to `POST`), then reads the export once: whether it can serve as an observation.
   * @throws Error naming the URL when no HTTP answer comes (refused, unknown host, timeout)
   */
  async start(): Promise<void> {
    try {
      const res = await request(`${this.options.url}/transactions`, { dispatcher: this.agent });
      await res.body.dump();
    } catch (err) {
      const e = err as Error & { code?: string };
      throw new Error(
        `the wallet at ${this.options.url} does not answer: ${e.code ?? e.name}: ${e.message}`,
        {
          cause: err,
        },
      );
    }
    try {
      await walletExport(this.options.url, this.options.timeoutMs);
      this.exportProblem = undefined;
    } catch (err) {
      this.exportProblem = (err as Error).message;
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  /** Scenario whose exchanges and checks are being recorded. */
  begin(run: ScenarioRun | undefined): void {
    this.run = run;
  }

  /** A unique coupon code of this run (`CERT<run>-<n>`), with `suffix` appended. */
  coupon(suffix = ''): string {
    this.seq += 1;
    return `CERT${this.runId}-${this.seq}${suffix}`;
  }

  /**
   * A transaction built as the outbox builds it (`walletTransactionOf`, then its JSON bytes): a
   * `final_credit` of generation 0, or the `recalculation_debit` of generation 1 that reverses it.
   */
  tx(
    accountId: string,
    amount: string,
    direction: 'credit' | 'debit' = 'credit',
    couponCode = this.coupon(),
  ): Sent {
    const type = direction === 'credit' ? OperationType.FINAL_CREDIT : OperationType.RECALCULATION_DEBIT;
    const generation = direction === 'credit' ? 0 : 1;
    const transaction = walletTransactionOf(
      {
        operationKey: couponOperationKey(couponCode, generation, type),
        type,
        accountId,
        amount,
        currency: this.options.currency,
        couponCode,
        generation,
        batchId: `certify-${this.runId}`,
        createdAt: new Date(),
      },
      (a) => a,
    );
    return { transaction, body: Buffer.from(JSON.stringify(transaction), 'utf8') };
  }

  /** `sent` with other fields: other bytes under the same (or another) transaction id. */
  altered(sent: Sent, fields: Partial<WalletTransaction>): Sent {
    const transaction = { ...sent.transaction, ...fields };
    return { transaction, body: Buffer.from(JSON.stringify(transaction), 'utf8') };
  }

  /**
   * `POST {url}/transactions` of `body` with `headers` (default: the receiver's, signed with the
   * secret); recorded in the scenario. Never throws: a transport error or timeout is an exchange
   * without status, read as `retry`.
   */
  async post(
    label: string,
    body: Buffer,
    headers: Record<string, string>,
    single: boolean,
  ): Promise<Exchange> {
    const started = performance.now();
    const exchange: Exchange = {
      label,
      request: { method: 'POST', path: '/transactions', headers, body: shorten(body.toString('utf8')) },
      ms: 0,
      reading: '',
    };
    try {
      const res = await request(`${this.options.url}/transactions`, {
        method: 'POST',
        dispatcher: this.agent,
        headers,
        body,
      });
      const text = await res.body.text();
      exchange.status = res.statusCode;
      exchange.answer = text;
    } catch (err) {
      const e = err as Error & { code?: string };
      exchange.error = `${e.code ?? e.name}: ${e.message}`;
    }
    exchange.ms = Math.round((performance.now() - started) * 10) / 10;
    if (single) this.latencies.push(exchange.ms);
    this.run?.exchanges.push(exchange);
    return exchange;
  }

  /** The receiver's headers for `body` (signed with the secret), or with another secret. */
  headers(body: Buffer, transactionId?: string, secret = this.options.secret): Record<string, string> {
    return walletRequestHeaders(body, secret, randomUUID(), transactionId);
  }

  /** A single call of `sent` as the receiver sends it, or with `headers` instead. */
  async send(
    label: string,
    sent: Sent,
    headers?: Record<string, string>,
    body = sent.body,
  ): Promise<Answered> {
    const exchange = await this.post(
      label,
      body,
      headers ?? this.headers(body, sent.transaction.transactionId),
      true,
    );
    const outcome = exchange.status === undefined ? 'retry' : outcomeOfStatus(exchange.status);
    exchange.reading = `${outcome}${exchange.error ? ` (${exchange.error})` : ''}`;
    exchange.answer = exchange.answer === undefined ? undefined : shorten(exchange.answer);
    const json = parse(exchange.answer);
    if (
      outcome === 'delivered' &&
      body === sent.body &&
      !this.answeredApplied.has(sent.transaction.transactionId)
    )
      this.answeredApplied.set(sent.transaction.transactionId, sent.transaction);
    if (
      outcome === 'delivered' &&
      sent.transaction.direction === 'credit' &&
      this.balanceInAnswers === undefined
    )
      this.balanceInAnswers = balanceOf(json) !== undefined;
    return { exchange, outcome, json };
  }

  /** A batch call of `items` as the receiver sends it (or with `headers`); one outcome per element. */
  async sendBatch(
    label: string,
    items: Sent[],
    headers?: Record<string, string>,
  ): Promise<{ exchange: Exchange; outcomes: OutboxDelivery[]; results: unknown[] | undefined }> {
    const body = batchCallBody(items.map((i) => i.body));
    const exchange = await this.post(label, body, headers ?? this.headers(body), false);
    const ids = items.map((i) => i.transaction.transactionId);
    const outcomes =
      exchange.status === undefined
        ? ids.map((): OutboxDelivery => ({ outcome: 'retry', reason: exchange.error ?? 'no answer' }))
        : outcomesOfBatchAnswer(exchange.status, exchange.answer ?? '', ids);
    exchange.reading = outcomes.map((o, i) => `${i}: ${described(o)}`).join('; ');
    const results = parse(exchange.answer)?.results;
    exchange.answer = exchange.answer === undefined ? undefined : shorten(exchange.answer);
    outcomes.forEach((o, i) => {
      if (o.outcome === 'delivered' && !this.answeredApplied.has(ids[i]))
        this.answeredApplied.set(ids[i], items[i].transaction);
    });
    return { exchange, outcomes, results: Array.isArray(results) ? results : undefined };
  }

  /** The last balance of `account` the wallet told (undefined before any). */
  balance(account: string): Decimal | undefined {
    return this.known.get(account);
  }

  /**
   * A 0.01 credit to `account`: the balance before it, as its answer tells (undefined when the
   * wallet answers no balance). Remembers the balance after it.
   */
  async probe(account: string): Promise<Decimal | undefined> {
    const sent = this.tx(account, PROBE.toFixed(2));
    const { outcome, json } = await this.send(`probe: credit 0.01 to ${account}`, sent);
    const after = outcome === 'delivered' ? balanceOf(json) : undefined;
    if (after === undefined) return undefined;
    this.known.set(account, after);
    return after.minus(PROBE);
  }

  /** Balances of `accounts` before the scenario (a probe of each whose balance is not known). */
  async baseline(...accounts: string[]): Promise<void> {
    for (const a of accounts) if (!this.known.has(a)) await this.probe(a);
  }

  /** How many times the export lists each of `ids` (undefined when there is no export). */
  async exportCounts(ids: string[]): Promise<Map<string, WalletExportTransaction[]> | undefined> {
    if (this.exportProblem !== undefined) return undefined;
    const all = await walletExport(this.options.url, this.options.timeoutMs);
    const wanted = new Set(ids);
    const found = new Map<string, WalletExportTransaction[]>(ids.map((id) => [id, []]));
    for (const t of all) if (wanted.has(t.transactionId)) found.get(t.transactionId)?.push(t);
    return found;
  }

  /**
   * Checks the effects of a scenario on `account`: its balance moved by `delta` from the one known
   * before (via a probe, when the wallet answers balances) and each of `times` is listed that many
   * times in the export (when it has one). @throws Unobservable when neither can be observed
   */
  async effect(
    run: ScenarioRun,
    account: string,
    delta: Decimal.Value,
    times: [Sent, 0 | 1][],
  ): Promise<void> {
    const before = this.known.get(account);
    let observed = false;
    if (this.balanceInAnswers !== false && before !== undefined) {
      const now = await this.probe(account);
      if (now !== undefined) {
        observed = true;
        const expected = before.plus(delta);
        run.check(
          now.eq(expected),
          `balance of ${account} ${money(expected)} (${money(before)} ${signed(delta)})`,
          money(now),
          'balance',
        );
      }
    }
    const counts = await this.exportCounts(times.map(([s]) => s.transaction.transactionId));
    if (counts) {
      observed = true;
      for (const [s, n] of times) {
        const id = s.transaction.transactionId;
        const listed = counts.get(id) ?? [];
        run.check(
          listed.length === n,
          `${JSON.stringify(id)} listed ${n === 1 ? 'once' : 'never'} (${n === 1 ? 'applied once' : 'no effect'})`,
          `listed ${listed.length} time(s)`,
          'export',
        );
        if (n === 1 && listed.length === 1)
          run.check(
            new Decimal(listed[0].amount).eq(s.transaction.amount),
            `listed with amount ${s.transaction.amount}`,
            listed[0].amount,
            'export',
          );
      }
    }
    if (!observed)
      throw new Unobservable(
        'the wallet answers no balance and offers no reconciliation export: no effect can be observed',
      );
  }

  /**
   * The first `n` of the kit's accounts (as many as it has, at most), each's balance known before
   * the scenario ({@link baseline}): the distinct accounts a scenario works on.
   */
  async baselined(n: number): Promise<string[]> {
    const accounts = this.accounts.slice(0, Math.min(n, this.accounts.length));
    await this.baseline(...accounts);
    return accounts;
  }
}

/** An outcome with its reason, e.g. `retry (result 0 does not name …)`. */
export function described(o: OutboxDelivery): string {
  return 'reason' in o && o.reason ? `${o.outcome} (${o.reason})` : o.outcome;
}

/** A decimal as money: at least two fraction digits (`3` → `3.00`, `0.123` stays). */
export function money(value: Decimal.Value): string {
  const d = new Decimal(value);
  return d.toFixed(Math.max(2, d.decimalPlaces()));
}

/** `+ x` / `- x` of a delta. */
export function signed(delta: Decimal.Value): string {
  const d = new Decimal(delta);
  return d.isNegative() ? `- ${money(d.abs())}` : `+ ${money(d)}`;
}

/** The p-th percentile (0..100) of `values` by nearest rank. */
export function percentile(values: number[], p: number): number {
  if (!values.length) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
