import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { listen } from './http-server.js';
import { formatUnits, parseUnits } from './money.js';
import { Rng } from './random.js';

/**
 * `wallet`: a stand-in for the bookmaker's wallet, the far side of the wallet connector. It
 * implements docs/wallet-http-contract.md: `POST /transactions` signed with HMAC-SHA256, each
 * `transactionId` applied once (a byte-identical repeat gets the first answer, another body 409),
 * also in the batch call (a JSON array, one result per element, each element by the same rules),
 * a debit above the balance refused with 402 (not remembered), plus seeded faults (503/429 before
 * applying, the answer lost after applying, a slow or down wallet) and unsigned read/admin
 * endpoints for tests and reconciliation. State is in memory. docs/simulator.md#wallet has more.
 */

export interface WalletFaults {
  /** 0..1: answer 503, or for a seeded half of those 429 with `Retry-After: 1`, before applying. */
  failRate?: number;
  /** 0..1: after a 200 (applied or repeat), destroy the socket without answering (lost response). */
  dropAfterApply?: number;
  /** Delay before handling a `POST /transactions`, in milliseconds. */
  slowMs?: number;
  /** 0..1: in a batch call, answer an element `transient` (not applied), drawn per element. */
  elementFailRate?: number;
  /** Answer 503 to every request until set back to false (the wallet down for a while). */
  down?: boolean;
}

export interface WalletOptions extends Omit<WalletFaults, 'down'> {
  port?: number;
  host?: string;
  /** Shared secret of the `X-Signature` HMAC (required). */
  secret: string;
  /** Seed of the fault draws (default 1). */
  seed?: number;
  /** Let debits take a balance below zero (default false: 402 insufficient_funds). */
  allowNegative?: boolean;
  /**
   * The only accounts it knows (a transaction of another is refused 404 `unknown_account`, not
   * applied); default: any account, opened at its first transaction.
   */
  accounts?: readonly string[];
  /** Largest accepted body (default 1 MiB; 413 above). */
  bodyLimitBytes?: number;
  /** Clock of `appliedAt` (tests). */
  now?: () => Date;
  log?: (line: string) => void;
}

export interface WalletStats {
  /** Transactions applied (each transactionId once). */
  applied: number;
  /** Byte-identical repeats answered with the first answer. */
  repeats: number;
  /** A known transactionId with another body (409). */
  conflicts: number;
  /** Debits above the balance (402), not applied. */
  refused: number;
  /** Bodies that are not the contract's JSON, or an Idempotency-Key that differs (400), or too large (413). */
  invalid: number;
  /** Signature missing or wrong (401). */
  unauthorized: number;
  /** Batch calls (arrays) answered 200, whatever their elements' results. */
  batchCalls: number;
  faults: { unavailable: number; throttled: number; dropped: number; transient: number };
}

/** Body of a transaction (docs/wallet-http-contract.md), in the contract's field order. */
export interface WalletTransactionBody {
  transactionId: string;
  direction: 'credit' | 'debit';
  type: string;
  accountId: string;
  amount: string;
  currency: string;
  couponCode: string | null;
  generation: number | null;
  batchId: string | null;
  reversesTransactionId: string | null;
  createdAt: string;
}

/** An applied transaction as `GET /transactions` lists it. */
export interface WalletTransaction extends WalletTransactionBody {
  /** When the stand-in applied it (ISO-8601 UTC). */
  appliedAt: string;
}

export interface WalletBalance {
  accountId: string;
  currency: string;
  /** Decimal string at the most fraction digits of the amounts applied to it. */
  balance: string;
}

export interface RunningWallet {
  url: string;
  port: number;
  stats: () => WalletStats;
  /** Every balance, sorted by accountId then currency (as `GET /balances`). */
  balances: () => WalletBalance[];
  /** Every applied transaction in application order (as `GET /transactions`). */
  transactions: () => WalletTransaction[];
  /** The W3C `traceparent` header of every `POST /transactions` in arrival order (null: none). */
  traceparents: () => (string | null)[];
  setFaults: (faults: WalletFaults) => void;
  close: () => Promise<void>;
}

/** Fraction digits of the internal balances: no amount may be finer. */
const SCALE = 18;
/** A positive decimal string: no sign, exponent or leading zero; ≤ 20 integer and ≤ 18 fraction digits. */
const AMOUNT = /^(?:0|[1-9]\d{0,19})(?:\.\d{1,18})?$/;
const CURRENCY = /^[A-Z0-9]{3,8}$/;
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?Z$/;
const SIGNATURE = /^sha256=[0-9a-f]{64}$/;
/** Known operation types whose direction is fixed; other types are accepted with either direction. */
const DIRECTION_OF: Readonly<Record<string, 'credit' | 'debit'>> = {
  final_credit: 'credit',
  deposit: 'credit',
  recalculation_debit: 'debit',
  stake_debit: 'debit',
  withdrawal: 'debit',
};
const FIELDS = [
  'transactionId',
  'direction',
  'type',
  'accountId',
  'amount',
  'currency',
  'couponCode',
  'generation',
  'batchId',
  'reversesTransactionId',
  'createdAt',
] as const;

interface Answer {
  status: number;
  body: object;
  headers?: Record<string, string>;
}

/** The largest batch call accepted (413 above). */
const MAX_BATCH = 1000;

/** One element's result in a batch call's answer (docs/wallet-http-contract.md#the-batch-call). */
interface ElementResult {
  transactionId: string | null;
  status: 'applied' | 'duplicate' | 'refused' | 'conflict' | 'transient';
  code?: string;
  detail?: string;
  retryAfterSeconds?: number;
  balance?: string;
  currency?: string;
}

interface Account {
  accountId: string;
  currency: string;
  /** Balance in units of 10^-SCALE. */
  units: bigint;
  /** Most fraction digits of an amount applied to it: the balance is shown at this precision. */
  digits: number;
}

/** Thrown by the validators; becomes 400 `{"error":"bad_request","detail"}`. */
class BadRequest extends Error {}

function isText(value: unknown, max = 200): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= max;
}

/** `amount` as units at SCALE and its number of fraction digits. @throws BadRequest */
function readAmount(value: unknown, field = 'amount'): { units: bigint; digits: number } {
  if (typeof value !== 'string' || !AMOUNT.test(value) || !/[1-9]/.test(value))
    throw new BadRequest(`${field} must be a positive decimal string (e.g. "12.50")`);
  return { units: parseUnits(value, SCALE), digits: value.split('.')[1]?.length ?? 0 };
}

/** The request body checked field by field against the contract. @throws BadRequest */
function readTransaction(raw: Buffer): WalletTransactionBody {
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new BadRequest('body is not JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new BadRequest('body must be a JSON object');
  const body = value as Record<string, unknown>;
  const unknown = Object.keys(body).filter((k) => !(FIELDS as readonly string[]).includes(k));
  if (unknown.length) throw new BadRequest(`unknown field ${unknown[0]}`);
  const missing = FIELDS.find((k) => !(k in body));
  if (missing) throw new BadRequest(`${missing} is missing`);
  const nullableText = (k: 'couponCode' | 'batchId' | 'reversesTransactionId') => {
    if (body[k] !== null && !isText(body[k])) throw new BadRequest(`${k} must be a string of 1..200 or null`);
  };
  if (!isText(body.transactionId)) throw new BadRequest('transactionId must be a string of 1..200');
  if (body.direction !== 'credit' && body.direction !== 'debit')
    throw new BadRequest('direction must be "credit" or "debit"');
  if (typeof body.type !== 'string' || !/^[a-z][a-z_]{0,62}$/.test(body.type))
    throw new BadRequest('type must be an operation type (a-z and _)');
  const fixed = DIRECTION_OF[body.type];
  if (fixed && fixed !== body.direction) throw new BadRequest(`type ${body.type} is a ${fixed}`);
  if (!isText(body.accountId)) throw new BadRequest('accountId must be a string of 1..200');
  readAmount(body.amount);
  if (typeof body.currency !== 'string' || !CURRENCY.test(body.currency))
    throw new BadRequest('currency must be a code of 3..8 of A-Z 0-9');
  nullableText('couponCode');
  if (
    body.generation !== null &&
    !(Number.isSafeInteger(body.generation) && (body.generation as number) >= 0)
  )
    throw new BadRequest('generation must be an integer >= 0 or null');
  nullableText('batchId');
  nullableText('reversesTransactionId');
  if (body.type === 'recalculation_debit' && body.reversesTransactionId === null)
    throw new BadRequest('a recalculation_debit needs reversesTransactionId');
  if (
    typeof body.createdAt !== 'string' ||
    !ISO_UTC.test(body.createdAt) ||
    Number.isNaN(Date.parse(body.createdAt))
  )
    throw new BadRequest('createdAt must be an ISO-8601 UTC timestamp (…Z)');
  return Object.fromEntries(FIELDS.map((k) => [k, body[k]])) as unknown as WalletTransactionBody;
}

/** Whether `header` is `sha256=<lowercase hex HMAC-SHA256 of body>`, compared in constant time. */
function signatureMatches(header: string | undefined, body: Buffer, secret: string): boolean {
  const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(body).digest('hex')}`);
  const given = Buffer.from(header ?? '');
  // Both are 71 bytes when the header has the right form; its length leaks nothing secret.
  return SIGNATURE.test(header ?? '') && given.length === expected.length && timingSafeEqual(given, expected);
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/**
 * The transaction id an `Idempotency-Key` header stands for (docs/wallet-http-contract.md): the
 * header percent-decoded (`%` never stands for itself in it; an id of visible ASCII without `%`
 * comes as it is); undefined when absent or not valid percent-encoded UTF-8.
 */
function idempotencyKeyOf(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  try {
    return decodeURIComponent(value);
  } catch {
    return undefined;
  }
}

function checkRate(name: string, value: number | undefined): void {
  if (value !== undefined && !(value >= 0 && value <= 1)) throw new Error(`${name} must be between 0 and 1`);
}

export async function startWallet(options: WalletOptions): Promise<RunningWallet> {
  if (!options.secret) throw new Error('secret is required');
  const faults: Required<WalletFaults> = {
    failRate: 0,
    dropAfterApply: 0,
    slowMs: 0,
    down: false,
    elementFailRate: 0,
  };
  const setFaults = (next: WalletFaults): void => {
    checkRate('failRate', next.failRate);
    checkRate('dropAfterApply', next.dropAfterApply);
    checkRate('elementFailRate', next.elementFailRate);
    if (next.slowMs !== undefined && !(Number.isInteger(next.slowMs) && next.slowMs >= 0))
      throw new Error('slowMs must be an integer >= 0');
    for (const [k, v] of Object.entries(next)) if (v !== undefined) Object.assign(faults, { [k]: v });
  };
  setFaults({
    failRate: options.failRate,
    dropAfterApply: options.dropAfterApply,
    slowMs: options.slowMs,
    elementFailRate: options.elementFailRate,
  });
  const rng = new Rng(options.seed ?? 1);
  const limit = options.bodyLimitBytes ?? 1_048_576;
  const now = options.now ?? (() => new Date());
  const log = options.log ?? (() => undefined);
  const traceparents: (string | null)[] = [];
  const stats: WalletStats = {
    applied: 0,
    repeats: 0,
    conflicts: 0,
    refused: 0,
    invalid: 0,
    unauthorized: 0,
    batchCalls: 0,
    faults: { unavailable: 0, throttled: 0, dropped: 0, transient: 0 },
  };
  const accounts = new Map<string, Account>();
  /** transactionId → SHA-256 of the body applied and the answer given. */
  const applied = new Map<string, { hash: string; answer: Answer }>();
  const history: WalletTransaction[] = [];
  const stopping = new AbortController();

  const accountOf = (accountId: string, currency: string): Account | undefined =>
    accounts.get(JSON.stringify([accountId, currency]));
  const shown = (a: Account): WalletBalance => ({
    accountId: a.accountId,
    currency: a.currency,
    balance: formatUnits(a.units, SCALE, a.digits),
  });

  /**
   * Moves `delta` units (digits: the amount's fraction digits) on (accountId, currency), or
   * returns the 402 answer when a debit would take the balance below zero (404 for an account
   * outside `options.accounts`).
   */
  function move(accountId: string, currency: string, delta: bigint, digits: number): Account | Answer {
    if (options.accounts && !options.accounts.includes(accountId))
      return { status: 404, body: { error: 'unknown_account', detail: 'no such account' } };
    const current = accountOf(accountId, currency);
    const before = current?.units ?? 0n;
    if (delta < 0n && before + delta < 0n && !options.allowNegative) {
      const shownDigits = Math.max(digits, current?.digits ?? 0);
      return {
        status: 402,
        body: {
          error: 'insufficient_funds',
          detail: `debit ${formatUnits(-delta, SCALE, shownDigits)} ${currency} above the balance ${formatUnits(before, SCALE, shownDigits)}`,
        },
      };
    }
    const account = current ?? { accountId, currency, units: 0n, digits: 0 };
    account.units = before + delta;
    account.digits = Math.max(account.digits, digits);
    accounts.set(JSON.stringify([accountId, currency]), account);
    return account;
  }

  /** `POST /transactions` once the faults are drawn: signature, body, idempotency, balance. */
  function transact(req: IncomingMessage, raw: Buffer): { answer: Answer; note: string; id?: string } {
    if (!signatureMatches(header(req, 'x-signature'), raw, options.secret)) {
      stats.unauthorized++;
      return { answer: { status: 401, body: { error: 'invalid_signature' } }, note: 'invalid_signature' };
    }
    let tx: WalletTransactionBody;
    try {
      tx = readTransaction(raw);
      if (idempotencyKeyOf(header(req, 'idempotency-key')) !== tx.transactionId)
        throw new BadRequest('Idempotency-Key header must equal transactionId (percent-decoded)');
    } catch (error) {
      if (!(error instanceof BadRequest)) throw error;
      stats.invalid++;
      return {
        answer: { status: 400, body: { error: 'bad_request', detail: error.message } },
        note: `bad_request: ${error.message}`,
      };
    }
    return applyOnce(tx, raw);
  }

  /** Applies a valid transaction whose exact bytes are `raw` once (docs/wallet-http-contract.md). */
  function applyOnce(
    tx: WalletTransactionBody,
    raw: Buffer,
  ): { answer: Answer; note: string; id: string; kind: 'applied' | 'repeat' | 'conflict' | 'refused' } {
    const id = tx.transactionId;
    const hash = createHash('sha256').update(raw).digest('hex');
    const known = applied.get(id);
    if (known && known.hash === hash) {
      stats.repeats++;
      return { answer: known.answer, note: 'repeat (first answer again)', id, kind: 'repeat' };
    }
    if (known) {
      stats.conflicts++;
      const detail = 'this transactionId was applied with another body';
      return {
        answer: { status: 409, body: { error: 'transaction_conflict', detail } },
        note: 'conflict',
        id,
        kind: 'conflict',
      };
    }
    const amount = readAmount(tx.amount);
    const moved = move(
      tx.accountId,
      tx.currency,
      tx.direction === 'credit' ? amount.units : -amount.units,
      amount.digits,
    );
    if ('status' in moved) {
      stats.refused++;
      const note = `${(moved.body as { error: string }).error} (not applied)`;
      return { answer: moved, note, id, kind: 'refused' };
    }
    const balance = shown(moved).balance;
    const answer: Answer = {
      status: 200,
      body: { transactionId: id, status: 'applied', balance, currency: tx.currency },
    };
    applied.set(id, { hash, answer });
    history.push({ ...tx, appliedAt: now().toISOString() });
    stats.applied++;
    return { answer, note: `applied, balance ${balance} ${tx.currency}`, id, kind: 'applied' };
  }

  /**
   * The batch call (`POST /transactions` with an array): the signature over the whole body, then
   * each element in order as its own transaction. An element's bytes for its idempotency are its
   * fields re-serialised in the contract's order: the receiver's single-call body, byte for byte.
   */
  function transactBatch(req: IncomingMessage, raw: Buffer): { answer: Answer; note: string } {
    if (!signatureMatches(header(req, 'x-signature'), raw, options.secret)) {
      stats.unauthorized++;
      return { answer: { status: 401, body: { error: 'invalid_signature' } }, note: 'invalid_signature' };
    }
    let elements: unknown[];
    try {
      elements = JSON.parse(raw.toString('utf8')) as unknown[];
    } catch {
      stats.invalid++;
      return {
        answer: { status: 400, body: { error: 'bad_request', detail: 'body is not JSON' } },
        note: 'bad_request',
      };
    }
    if (!elements.length || elements.length > MAX_BATCH) {
      stats.invalid++;
      const detail = `a batch holds 1..${MAX_BATCH} transactions`;
      return {
        answer: { status: elements.length ? 413 : 400, body: { error: 'bad_request', detail } },
        note: detail,
      };
    }
    const results = elements.map((element): ElementResult => {
      const claimed = (element as { transactionId?: unknown } | null)?.transactionId;
      const transactionId = typeof claimed === 'string' ? claimed : null;
      if (rng.chance(faults.elementFailRate)) {
        stats.faults.transient++;
        return { transactionId, status: 'transient', code: 'unavailable', retryAfterSeconds: 1 };
      }
      const bytes = Buffer.from(
        typeof element === 'object' && element !== null && !Array.isArray(element)
          ? JSON.stringify(
              Object.fromEntries(
                FIELDS.filter((k) => k in element).map((k) => [k, (element as Record<string, unknown>)[k]]),
              ),
            )
          : JSON.stringify(element),
      );
      let tx: WalletTransactionBody;
      try {
        tx = readTransaction(bytes);
        // Unknown fields are refused as in a single call.
        const extra = Object.keys(element as object).filter(
          (k) => !(FIELDS as readonly string[]).includes(k),
        );
        if (extra.length) throw new BadRequest(`unknown field ${extra[0]}`);
      } catch (error) {
        if (!(error instanceof BadRequest)) throw error;
        stats.invalid++;
        return { transactionId, status: 'refused', code: 'bad_request', detail: error.message };
      }
      const { answer, kind } = applyOnce(tx, bytes);
      const body = answer.body as { error?: string; detail?: string; balance?: string; currency?: string };
      if (kind === 'applied')
        return { transactionId, status: 'applied', balance: body.balance, currency: body.currency };
      if (kind === 'repeat') return { transactionId, status: 'duplicate' };
      if (kind === 'conflict') return { transactionId, status: 'conflict', detail: body.detail };
      return { transactionId, status: 'refused', code: body.error, detail: body.detail };
    });
    stats.batchCalls++;
    const counts = results.reduce<Record<string, number>>(
      (c, r) => ({ ...c, [r.status]: (c[r.status] ?? 0) + 1 }),
      {},
    );
    return {
      answer: { status: 200, body: { results } },
      note: `batch of ${results.length}: ${Object.entries(counts)
        .map(([k, n]) => `${n} ${k}`)
        .join(', ')}`,
    };
  }

  /** `POST /accounts/{accountId}/deposits|withdrawals` `{amount, currency}` (unsigned, admin). */
  function adminMove(accountId: string, kind: string, raw: Buffer): Answer {
    let amount: { units: bigint; digits: number };
    let currency: string;
    try {
      let body: unknown;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        throw new BadRequest('body is not JSON');
      }
      const fields = (body ?? {}) as Record<string, unknown>;
      amount = readAmount(fields.amount);
      if (typeof fields.currency !== 'string' || !CURRENCY.test(fields.currency))
        throw new BadRequest('currency must be a code of 3..8 of A-Z 0-9');
      currency = fields.currency;
      if (!isText(accountId)) throw new BadRequest('accountId must be 1..200 characters');
    } catch (error) {
      if (!(error instanceof BadRequest)) throw error;
      return { status: 400, body: { error: 'bad_request', detail: error.message } };
    }
    const moved = move(
      accountId,
      currency,
      kind === 'deposits' ? amount.units : -amount.units,
      amount.digits,
    );
    return 'status' in moved ? moved : { status: 200, body: { ...shown(moved) } };
  }

  function reply(res: ServerResponse, answer: Answer, requestId: string | undefined): void {
    const text = JSON.stringify(answer.body);
    res.writeHead(answer.status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      ...(requestId ? { 'x-request-id': requestId } : {}),
      ...answer.headers,
    });
    res.end(text);
  }

  /** The body, or null when over the limit (read to its end all the same, so the 413 arrives). */
  async function readBody(req: IncomingMessage): Promise<Buffer | null> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size <= limit) chunks.push(chunk as Buffer);
    }
    return size > limit ? null : Buffer.concat(chunks);
  }

  async function postTransaction(req: IncomingMessage, res: ServerResponse, raw: Buffer, requestId?: string) {
    traceparents.push(header(req, 'traceparent') ?? null);
    // One draw per request (and one more for the kind of a fault), before any delay: the sequence
    // of answers of a seed depends only on the order requests arrive in.
    const fault = rng.chance(faults.failRate) ? (rng.chance(0.5) ? 429 : 503) : null;
    if (faults.slowMs > 0) {
      log(`POST /transactions slow: handling in ${faults.slowMs} ms`);
      await delay(faults.slowMs, undefined, { signal: stopping.signal });
    }
    if (fault === 429) {
      stats.faults.throttled++;
      log('POST /transactions → 429 throttled (fault, not applied)');
      reply(res, { status: 429, body: { error: 'throttled' }, headers: { 'retry-after': '1' } }, requestId);
      return;
    }
    if (fault === 503) {
      stats.faults.unavailable++;
      log('POST /transactions → 503 unavailable (fault, not applied)');
      reply(res, { status: 503, body: { error: 'unavailable' } }, requestId);
      return;
    }
    const batch = raw.subarray(0, 64).toString('utf8').trimStart().startsWith('[');
    const { answer, note, id } = batch ? { ...transactBatch(req, raw), id: 'batch' } : transact(req, raw);
    const line = `POST /transactions ${id ?? '-'} → ${answer.status} ${note}`;
    if (answer.status === 200 && rng.chance(faults.dropAfterApply)) {
      stats.faults.dropped++;
      log(`${line}; connection dropped (lost response)`);
      req.socket.destroy();
      return;
    }
    log(line);
    reply(res, answer, requestId);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://wallet').pathname;
    const requestId = header(req, 'x-request-id');
    const raw = await readBody(req);
    if (faults.down) {
      stats.faults.unavailable++;
      log(`${req.method} ${path} → 503 unavailable (wallet down)`);
      reply(res, { status: 503, body: { error: 'unavailable' } }, requestId);
      return;
    }
    if (raw === null) {
      stats.invalid++;
      reply(
        res,
        { status: 413, body: { error: 'payload_too_large', detail: `over ${limit} bytes` } },
        requestId,
      );
      return;
    }
    const admin = /^\/accounts\/([^/]+)\/(deposits|withdrawals)$/.exec(path);
    const routes: Record<string, Record<string, () => Answer | Promise<void>>> = {
      '/transactions': {
        POST: () => postTransaction(req, res, raw, requestId),
        GET: () => ({ status: 200, body: { transactions: history } }),
      },
      '/balances': { GET: () => ({ status: 200, body: { balances: balances() } }) },
      '/stats': { GET: () => ({ status: 200, body: snapshot() }) },
    };
    let route = routes[path];
    if (admin) {
      let accountId: string;
      try {
        accountId = decodeURIComponent(admin[1]);
      } catch {
        accountId = '';
      }
      route = { POST: () => adminMove(accountId, admin[2], raw) };
    }
    if (!route) {
      reply(res, { status: 404, body: { error: 'not_found' } }, requestId);
      return;
    }
    const run = route[req.method ?? ''];
    if (!run) {
      const allow = Object.keys(route).join(', ');
      reply(res, { status: 405, body: { error: 'method_not_allowed' }, headers: { allow } }, requestId);
      return;
    }
    const answer = await run();
    if (answer) {
      if (admin) log(`POST ${path} → ${answer.status} ${JSON.stringify(answer.body)}`);
      reply(res, answer, requestId);
    }
  }

  const balances = (): WalletBalance[] =>
    [...accounts.values()]
      .sort((a, b) =>
        a.accountId === b.accountId ? (a.currency < b.currency ? -1 : 1) : a.accountId < b.accountId ? -1 : 1,
      )
      .map(shown);
  const snapshot = (): WalletStats => ({ ...stats, faults: { ...stats.faults } });

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (stopping.signal.aborted) {
        res.destroy();
        return;
      }
      log(`${req.method} ${req.url} failed: ${(error as Error).message}`);
      if (!res.headersSent) reply(res, { status: 500, body: { error: 'internal_error' } }, undefined);
      else res.destroy();
    });
  });
  const listening = await listen(server, options.port, options.host);
  return {
    url: listening.url,
    port: listening.port,
    stats: snapshot,
    balances,
    transactions: () => history.map((t) => ({ ...t })),
    traceparents: () => [...traceparents],
    setFaults,
    close: () => {
      stopping.abort();
      return listening.close();
    },
  };
}
