/**
 * The raw baseline of the throughput benchmark: the receiver's work per callback batch with no
 * framework, the floor the receiver is compared with (docs/benchmark.md), not a product. Per batch
 * in ONE transaction: HMAC check, `JSON.parse` and a hand-written §3 check; round trip 1 claims the
 * batch id and locks its coupons; the §6 transitions in JavaScript; round trip 2 writes snapshots,
 * states, bets, operations, entries, balances and the attempt in one statement, then COMMIT.
 * The house side is entries only: its balance is derived from them (sum of `ledger_entries` of
 * `house:<currency>`), its `accounts` row is neither locked nor updated; players' balances are
 * updated under row locks.
 * With BASELINE_WALLET_OUTBOX_TYPES (comma-separated operation types, the receiver's
 * WALLET_OPERATION_TYPES), the same statement also inserts a `wallet_outbox` row for each new
 * operation of those types, as the receiver's posting statement does with a wallet connector; the
 * table is the receiver's migration's (the database is cloned from the migrated template). The
 * baseline never delivers them: it is the floor of the intake path (docs/benchmark.md).
 * Environment: DATABASE_URL, SPORTAPI_WEBHOOK_SECRETS, PORT (4102), HOST, BASELINE_POOL_SIZE (16),
 * BASELINE_PG_OPTIONS (extra `-c name=value` settings), BASELINE_WALLET_OUTBOX_TYPES (unset: none).
 */
import { createHash, createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import { Decimal } from 'decimal.js';
import pg from 'pg';

const PORT = Number(process.env.PORT ?? 4102);
const HOST = process.env.HOST ?? '127.0.0.1';
const CALLBACK_PATH = '/sportapi/callback';
const BODY_LIMIT = 2 * 1024 * 1024;
const RETRIES = 3;
const SECRETS = (process.env.SPORTAPI_WEBHOOK_SECRETS ?? '')
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean);
/** Operation types given an outbox row (BASELINE_WALLET_OUTBOX_TYPES), none when empty. */
const OUTBOX_TYPES = (process.env.BASELINE_WALLET_OUTBOX_TYPES ?? '')
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean);
if (!process.env.DATABASE_URL || !SECRETS.length) {
  console.error('baseline: DATABASE_URL and SPORTAPI_WEBHOOK_SECRETS are required');
  process.exit(1);
}

const pool = new pg.Pool({
  connectionString: process.env.DATABASE_URL,
  max: Number(process.env.BASELINE_POOL_SIZE ?? 16),
  application_name: 'bench-baseline',
  options:
    '-c statement_timeout=5000 -c lock_timeout=3000 -c idle_in_transaction_session_timeout=5000 ' +
    (process.env.BASELINE_PG_OPTIONS ?? ''),
  // node-postgres pipeline mode: queries queued on one client are written without waiting for
  // the previous answer, so BEGIN + claim + lock and apply + COMMIT each cost one round trip.
  pipeline: true,
} as pg.PoolConfig);
pool.on('error', (err) => console.error(`baseline: idle client error: ${err.message}`));

// ---------------------------------------------------------------------------------------------
// Validation (CONTRACT §3)

interface Coupon {
  code: string;
  status: number;
  realWin: string | null;
}
interface Batch {
  batchId: string;
  couponCount: number;
  coupons: Coupon[];
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
  ) {
    super(code);
  }
}

const AMOUNT = /^(\d{1,13})(?:\.(\d{1,2}))?$/;
const isInt = (v: unknown): v is number => Number.isInteger(v) && Math.abs(v as number) <= 2147483647;
const isText = (v: unknown, max: number): v is string =>
  typeof v === 'string' && v.length >= 1 && v.length <= max && !v.includes('\u0000');

/** Canonical amount ("185.5" → "185.50"), or null when not a decimal with ≤ 2 fraction digits. */
function canonicalAmount(v: unknown): string | null {
  const m = AMOUNT.exec(typeof v === 'number' ? String(v) : (v as string));
  if (!m) return null;
  return `${m[1].replace(/^0+(?=\d)/, '')}.${(m[2] ?? '').padEnd(2, '0')}`;
}

function validate(v: unknown): Batch {
  const bad = () => new HttpError(400, 'validation_failed');
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw bad();
  const b = v as Record<string, unknown>;
  if (!isText(b.batchId, 64) || !isInt(b.couponCount) || !Array.isArray(b.coupons)) throw bad();
  const list = b.coupons as unknown[];
  if (list.length < 1 || list.length > 100 || b.couponCount !== list.length) throw bad();
  const codes = new Set<string>();
  const coupons = list.map((item): Coupon => {
    if (typeof item !== 'object' || item === null) throw bad();
    const c = item as Record<string, unknown>;
    if (!isText(c.coupon_code, 32) || codes.has(c.coupon_code) || !isInt(c.status)) throw bad();
    codes.add(c.coupon_code);
    let realWin: string | null = null;
    if (c.realWin !== null && c.realWin !== undefined) {
      if (typeof c.realWin !== 'string' && typeof c.realWin !== 'number') throw bad();
      realWin = canonicalAmount(c.realWin);
      if (realWin === null) throw bad();
    }
    if (!Array.isArray(c.events) || c.events.length > 1000) throw bad();
    const uuids = new Set<string>();
    for (const e of c.events as unknown[]) {
      if (typeof e !== 'object' || e === null) throw bad();
      const ev = e as Record<string, unknown>;
      if (!isText(ev.uuid, 64) || uuids.has(ev.uuid) || !isInt(ev.status)) throw bad();
      uuids.add(ev.uuid);
    }
    return { code: c.coupon_code, status: c.status, realWin };
  });
  return { batchId: b.batchId, couponCount: b.couponCount, coupons };
}

function signatureOk(raw: Buffer, header: string | string[] | undefined): boolean {
  if (typeof header !== 'string') return false;
  const m = /^\s*(?:sha256=)?([0-9a-fA-F]{64})\s*$/.exec(header);
  if (!m) return false;
  const sent = Buffer.from(m[1], 'hex');
  let ok = false;
  for (const s of SECRETS) ok = timingSafeEqual(sent, createHmac('sha256', s).update(raw).digest()) || ok;
  return ok;
}

// ---------------------------------------------------------------------------------------------
// Settlement transitions (CONTRACT §6), the same rules as src/core/settlement/decide-settlement.ts

interface State {
  accountId: string | null;
  currency: string | null;
  status: number | null;
  realWin: string | null;
  generation: number;
  settled: boolean;
  settledAmount: string | null;
  recalcOpen: boolean;
  needsReview: boolean;
  reviewReason: string | null;
}
interface Op {
  type: 'final_credit' | 'recalculation_debit';
  generation: number;
  amount: string;
}
interface Decision {
  transition: string;
  applied: boolean;
  state: State;
  ops: Op[];
}

const positive = (a: string) => /[1-9]/.test(a);
/** Equal amounts whatever their scale (`numeric(26,8)` reads `190.00000000`, a body says `190.00`). */
const sameAmount = (a: string | null, b: string | null) =>
  a === null || b === null ? a === b : new Decimal(a).eq(b);
const credit = (generation: number, amount: string): Op[] =>
  positive(amount) ? [{ type: 'final_credit', generation, amount }] : [];

function decide(s: State, status: number, realWin: string | null): Decision {
  const applied = (transition: string, next: Partial<State>, ops: Op[] = []): Decision => ({
    transition,
    applied: true,
    state: { ...s, status, realWin, ...next },
    ops,
  });
  const history = (transition: string, flag = false): Decision => ({
    transition,
    applied: false,
    state: flag ? { ...s, needsReview: true, reviewReason: transition } : s,
    ops: [],
  });
  switch (status) {
    case 1:
      return !s.settled && !s.recalcOpen ? applied('pending_applied', {}) : history('pending_stale');
    case 2:
    case 3:
    case 4: {
      const amount = realWin ?? (status === 4 ? '0.00' : null);
      if (amount === null) return history('final_without_amount', true);
      if ((status === 2 && !positive(amount)) || (status === 4 && positive(amount)))
        return history('inconsistent_result', true);
      if (!s.settled)
        return applied(
          'settled',
          { realWin: amount, settled: true, settledAmount: amount, recalcOpen: false },
          credit(s.generation, amount),
        );
      if (sameAmount(s.settledAmount, amount))
        return applied('same_result', { realWin: amount, recalcOpen: false });
      return history('conflicting_result', true);
    }
    case 15: {
      if (!s.recalcOpen) {
        const next = s.generation + 1;
        const credited = s.settled && s.settledAmount !== null ? s.settledAmount : '0.00';
        const ops: Op[] = positive(credited)
          ? [{ type: 'recalculation_debit', generation: next, amount: credited }]
          : [];
        if (realWin !== null) ops.push(...credit(next, realWin));
        return applied(
          realWin !== null ? 'recalculation_settled' : 'recalculation_opened',
          { generation: next, settled: realWin !== null, settledAmount: realWin, recalcOpen: true },
          ops,
        );
      }
      if (realWin === null) return history('recalculation_repeated');
      if (!s.settled)
        return applied(
          'recalculation_settled',
          { settled: true, settledAmount: realWin },
          credit(s.generation, realWin),
        );
      if (sameAmount(s.settledAmount, realWin)) return history('recalculation_repeated');
      return history('recalculation_conflict', true);
    }
    default:
      return {
        transition: 'unknown_status',
        applied: true,
        state: { ...s, status, needsReview: true, reviewReason: 'unknown_status' },
        ops: [],
      };
  }
}

/** Whether a transition left the coupon's settlement state as it was (then it is not rewritten). */
function sameState(a: State, b: State): boolean {
  return (
    a.status === b.status &&
    sameAmount(a.realWin, b.realWin) &&
    a.generation === b.generation &&
    a.settled === b.settled &&
    sameAmount(a.settledAmount, b.settledAmount) &&
    a.recalcOpen === b.recalcOpen &&
    a.needsReview === b.needsReview &&
    a.reviewReason === b.reviewReason
  );
}

// ---------------------------------------------------------------------------------------------
// SQL

/** Claims the batch id; records in the transaction whether the claim succeeded. */
const CLAIM_SQL = `
WITH claim AS (
  INSERT INTO callback_batches (batch_id, payload_hash, coupon_count, payload)
  VALUES ($1, $2, $3, convert_to($4, 'UTF8'))
  ON CONFLICT (batch_id) DO NOTHING
  RETURNING 1
)
SELECT set_config('bench.claimed', (EXISTS (SELECT 1 FROM claim))::text, true) AS claimed`;

/**
 * Locks the batch's coupons in ascending order and reads their state (the latest committed
 * versions: a row lock waits, then re-reads). Nothing when the batch was not claimed.
 */
const LOCK_SQL = `
SELECT coupon_code, account_id, currency, status, real_win::text AS real_win, settlement_generation,
       generation_settled, settled_amount::text AS settled_amount, recalculation_open, needs_review, review_reason
FROM coupons
WHERE coupon_code = ANY($1::text[]) AND current_setting('bench.claimed') = 'true'
ORDER BY coupon_code COLLATE "C"
FOR NO KEY UPDATE`;

/**
 * Coupons never seen before (a callback ahead of the registration; rare, since coupons are
 * registered at placement): inserted in ascending order, then locked like the others.
 */
const INSERT_MISSING_SQL = `
INSERT INTO coupons (coupon_code)
SELECT code FROM unnest($1::text[]) AS code ORDER BY code COLLATE "C"
ON CONFLICT (coupon_code) DO NOTHING`;

/**
 * Everything a claimed batch writes, in one statement: snapshots, coupon states, bets, operations,
 * their two entries each (player and `house:<currency>`), the players' balances, the attempt.
 */
const APPLY_SQL = `
WITH body AS MATERIALIZED (
  SELECT c.v AS payload, c.v->>'coupon_code' AS code FROM jsonb_array_elements($2::jsonb->'coupons') AS c(v)
), d AS MATERIALIZED (
  SELECT * FROM unnest($3::text[], $4::int[], $5::numeric[], $6::bool[], $7::text[], $8::int[], $9::jsonb[],
                       $10::int[], $11::numeric[], $12::bool[], $13::numeric[], $14::bool[], $15::bool[], $16::text[], $30::bool[])
    AS d(code, status, real_win, applied, transition, generation, operations,
         s_status, s_real_win, s_settled, s_settled_amount, s_recalc_open, s_needs_review, s_review_reason, s_changed)
), snap AS (
  INSERT INTO coupon_snapshots (coupon_code, batch_id, status, real_win, applied, transition, generation, operations, payload)
  SELECT d.code, $1, d.status, d.real_win, d.applied, d.transition, d.generation, d.operations, b.payload
  FROM d JOIN body b ON b.code = d.code
), cup AS (
  UPDATE coupons c SET status = d.s_status, real_win = d.s_real_win, settlement_generation = d.generation,
    generation_settled = d.s_settled, settled_amount = d.s_settled_amount, recalculation_open = d.s_recalc_open,
    needs_review = d.s_needs_review, review_reason = d.s_review_reason, last_batch_id = $1, updated_at = now()
  FROM d WHERE c.coupon_code = d.code AND d.s_changed
), bet AS (
  INSERT INTO bets (coupon_code, uuid, status, payload, last_batch_id)
  SELECT b.code, e.v->>'uuid', (e.v->>'status')::int, e.v, $1
  FROM body b JOIN d ON d.code = b.code AND d.applied
  CROSS JOIN LATERAL jsonb_array_elements(b.payload->'events') AS e(v)
  ORDER BY b.code COLLATE "C", (e.v->>'uuid') COLLATE "C"
  ON CONFLICT (coupon_code, uuid) DO UPDATE
    SET status = EXCLUDED.status, payload = EXCLUDED.payload, last_batch_id = EXCLUDED.last_batch_id, updated_at = now()
    WHERE (bets.status, bets.payload) IS DISTINCT FROM (EXCLUDED.status, EXCLUDED.payload)
), lk AS (
  SELECT id FROM accounts WHERE id = ANY($17::text[]) ORDER BY id COLLATE "C" FOR NO KEY UPDATE
), oin AS (
  SELECT * FROM unnest($18::text[], $19::text[], $20::text[], $21::int[], $22::text[], $23::numeric[], $24::text[])
    AS o(key, type, code, generation, account, amount, currency)
), ops AS (
  INSERT INTO financial_operations (operation_key, type, coupon_code, generation, account_id, amount, currency, batch_id)
  SELECT key, type, code, generation, account, amount, currency, $1 FROM oin WHERE (SELECT count(*) FROM lk) >= 0
  ON CONFLICT (operation_key) DO NOTHING
  RETURNING id, operation_key, type, account_id, currency,
    CASE WHEN type IN ('final_credit', 'deposit') THEN amount ELSE -amount END AS delta
)${
  // The receiver's `outbox` CTE (src/core/ledger/ledger.repository.ts): new operations of the types.
  OUTBOX_TYPES.length
    ? `, outbox AS (
  INSERT INTO wallet_outbox (operation_id, operation_key, account_id)
  SELECT id, operation_key, account_id FROM ops WHERE type = ANY($31::text[]) ORDER BY id
)`
    : ''
}, mv AS (
  SELECT id, account_id AS account, delta FROM ops
  UNION ALL SELECT id, 'house:' || currency, -delta FROM ops
), ent AS (
  INSERT INTO ledger_entries (operation_id, account_id, amount) SELECT id, account, delta FROM mv
), bal AS (
  -- Players only: the house balance is the sum of its entries (no hot row).
  UPDATE accounts a SET balance = a.balance + x.delta, updated_at = now()
  FROM (SELECT account_id AS account, sum(delta) AS delta FROM ops GROUP BY account_id) x
  WHERE a.id = x.account AND x.delta <> 0
), chk AS (
  SELECT count(*) AS bad FROM oin LEFT JOIN financial_operations f ON f.operation_key = oin.key
  WHERE oin.key NOT IN (SELECT operation_key FROM ops)
    AND (f.id IS NULL OR f.type <> oin.type OR f.account_id <> oin.account OR f.coupon_code IS DISTINCT FROM oin.code
         OR f.generation IS DISTINCT FROM oin.generation OR f.amount <> oin.amount OR f.currency <> oin.currency)
), att AS (
  -- A skipped operation key naming another operation makes this row break the outcome CHECK:
  -- the statement fails and the pipelined COMMIT rolls everything back (answered 503).
  INSERT INTO delivery_attempts (batch_id, request_id, received_at, outcome, http_status, coupon_count, duration_ms, payload_hash)
  SELECT $1, $25, $26, CASE WHEN chk.bad = 0 THEN 'processed' ELSE 'operation_key_collision' END, 200, $27, $28, $29
  FROM chk
)
SELECT (SELECT count(*) FROM ops)::int AS inserted`;

/** A redelivery: the stored hash, and a `duplicate` attempt when it matches. */
const DUPLICATE_SQL = `
WITH h AS (SELECT payload_hash FROM callback_batches WHERE batch_id = $1),
a AS (
  INSERT INTO delivery_attempts (batch_id, request_id, received_at, outcome, http_status, coupon_count, duration_ms, payload_hash)
  SELECT $1, $2, $3, 'duplicate', 200, $4, $5, $6 FROM h WHERE h.payload_hash = $6
)
SELECT payload_hash::text AS payload_hash FROM h`;

interface LockedRow {
  coupon_code: string;
  account_id: string | null;
  currency: string | null;
  status: number | null;
  real_win: string | null;
  settlement_generation: number;
  generation_settled: boolean;
  settled_amount: string | null;
  recalculation_open: boolean;
  needs_review: boolean;
  review_reason: string | null;
}

const knownHouses = new Set<string>();

async function ensureHouses(currencies: Set<string>): Promise<void> {
  const missing = [...currencies].filter((c) => !knownHouses.has(c));
  if (!missing.length) return;
  await pool.query(
    `INSERT INTO accounts (id, kind, currency) SELECT 'house:' || c, 'house', c FROM unnest($1::text[]) c
     ON CONFLICT (id) DO NOTHING`,
    [missing],
  );
  missing.forEach((c) => knownHouses.add(c));
}

interface Delivery {
  raw: Buffer;
  text: string;
  hash: string;
  batch: Batch;
  requestId: string;
  receivedAt: number;
}

/** One attempt of the whole transaction. @returns whether the batch was a duplicate. */
async function applyOnce(d: Delivery): Promise<boolean> {
  const { batch } = d;
  const codes = batch.coupons.map((c) => c.code).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const client = await pool.connect();
  let broken: Error | undefined;
  let open = false;
  try {
    open = true;
    const [, claim, locked] = await Promise.all([
      client.query('BEGIN'),
      client.query({
        name: 'bl_claim',
        text: CLAIM_SQL,
        values: [batch.batchId, d.hash, batch.couponCount, d.text],
      }),
      client.query<LockedRow>({ name: 'bl_lock', text: LOCK_SQL, values: [codes] }),
    ]);
    if (claim.rows[0].claimed !== 'true') {
      const [dup, commit] = await Promise.all([
        client.query<{ payload_hash: string }>({
          name: 'bl_dup',
          text: DUPLICATE_SQL,
          values: [
            batch.batchId,
            d.requestId,
            new Date(d.receivedAt),
            batch.couponCount,
            Date.now() - d.receivedAt,
            d.hash,
          ],
        }),
        client.query('COMMIT'),
      ]);
      open = false;
      if (commit.command !== 'COMMIT') throw new Error('duplicate: commit failed');
      if (dup.rows[0]?.payload_hash !== d.hash) throw new HttpError(409, 'batch_conflict');
      return true;
    }
    if (locked.rows.length < codes.length) {
      const seen = new Set(locked.rows.map((r) => r.coupon_code));
      const missing = codes.filter((c) => !seen.has(c));
      const [, more] = await Promise.all([
        client.query({ name: 'bl_insert_missing', text: INSERT_MISSING_SQL, values: [missing] }),
        client.query<LockedRow>({ name: 'bl_lock', text: LOCK_SQL, values: [missing] }),
      ]);
      locked.rows.push(...more.rows);
    }

    const byCode = new Map(locked.rows.map((r) => [r.coupon_code, r]));
    const byInput = new Map(batch.coupons.map((c) => [c.code, c]));
    const n = codes.length;
    const a = {
      status: new Array<number>(n),
      realWin: new Array<string | null>(n),
      applied: new Array<boolean>(n),
      transition: new Array<string>(n),
      generation: new Array<number>(n),
      operations: new Array<string>(n),
      sStatus: new Array<number | null>(n),
      sRealWin: new Array<string | null>(n),
      sSettled: new Array<boolean>(n),
      sSettledAmount: new Array<string | null>(n),
      sRecalcOpen: new Array<boolean>(n),
      sNeedsReview: new Array<boolean>(n),
      sReviewReason: new Array<string | null>(n),
      sChanged: new Array<boolean>(n),
    };
    const op = {
      key: [] as string[],
      type: [] as string[],
      code: [] as string[],
      generation: [] as number[],
      account: [] as string[],
      amount: [] as string[],
      currency: [] as string[],
    };
    const accounts = new Set<string>();
    const currencies = new Set<string>();
    for (let i = 0; i < n; i++) {
      const code = codes[i];
      const row = byCode.get(code);
      if (!row) throw new Error(`coupon ${code} was not locked`);
      const input = byInput.get(code) as Coupon;
      const current: State = {
        accountId: row.account_id,
        currency: row.currency,
        status: row.status,
        realWin: row.real_win,
        generation: row.settlement_generation,
        settled: row.generation_settled,
        settledAmount: row.settled_amount,
        recalcOpen: row.recalculation_open,
        needsReview: row.needs_review,
        reviewReason: row.review_reason,
      };
      const decision = decide(current, input.status, input.realWin);
      const s = decision.state;
      a.status[i] = input.status;
      a.realWin[i] = input.realWin;
      a.applied[i] = decision.applied;
      a.transition[i] = decision.transition;
      a.generation[i] = s.generation;
      a.operations[i] = decision.ops.length ? JSON.stringify(decision.ops) : '[]';
      a.sStatus[i] = s.status;
      a.sRealWin[i] = s.realWin;
      a.sSettled[i] = s.settled;
      a.sSettledAmount[i] = s.settledAmount;
      a.sRecalcOpen[i] = s.recalcOpen;
      a.sNeedsReview[i] = s.needsReview;
      a.sReviewReason[i] = s.reviewReason;
      a.sChanged[i] = !sameState(current, s);
      if (decision.ops.length && row.account_id !== null && row.currency !== null) {
        // The house account is not locked: its balance is derived from its entries.
        accounts.add(row.account_id);
        currencies.add(row.currency);
        for (const o of decision.ops) {
          op.key.push(`${code}:${o.generation}:${o.type}`);
          op.type.push(o.type);
          op.code.push(code);
          op.generation.push(o.generation);
          op.account.push(row.account_id);
          op.amount.push(o.amount);
          op.currency.push(row.currency);
        }
      }
    }
    if (currencies.size) await ensureHouses(currencies);
    const [, commit] = await Promise.all([
      client.query({
        name: 'bl_apply',
        text: APPLY_SQL,
        values: [
          batch.batchId,
          d.text,
          codes,
          a.status,
          a.realWin,
          a.applied,
          a.transition,
          a.generation,
          a.operations,
          a.sStatus,
          a.sRealWin,
          a.sSettled,
          a.sSettledAmount,
          a.sRecalcOpen,
          a.sNeedsReview,
          a.sReviewReason,
          [...accounts],
          op.key,
          op.type,
          op.code,
          op.generation,
          op.account,
          op.amount,
          op.currency,
          d.requestId,
          new Date(d.receivedAt),
          batch.couponCount,
          Date.now() - d.receivedAt,
          d.hash,
          a.sChanged,
          ...(OUTBOX_TYPES.length ? [OUTBOX_TYPES] : []),
        ],
      }),
      client.query('COMMIT'),
    ]);
    open = false;
    if (commit.command !== 'COMMIT') throw new Error('commit failed');
    return false;
  } catch (err) {
    if (open) {
      // Whatever is still queued on the client ran or failed already; end the transaction.
      await client.query('ROLLBACK').catch((e: Error) => (broken = e));
    }
    throw err;
  } finally {
    client.release(broken);
  }
}

const RETRYABLE = new Set(['40001', '40P01']);

async function apply(d: Delivery): Promise<boolean> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await applyOnce(d);
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (!code || !RETRYABLE.has(code) || attempt >= RETRIES) throw err;
      await new Promise((r) => setTimeout(r, 10 + Math.random() * 40 * (attempt + 1)));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// HTTP

const utf8 = new TextDecoder('utf-8', { fatal: true });

function send(res: http.ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function fail(res: http.ServerResponse, status: number, code: string): void {
  send(res, status, `{"success":false,"error":{"code":"${code}"}}`);
}

async function handle(req: http.IncomingMessage, res: http.ServerResponse, raw: Buffer, receivedAt: number) {
  try {
    if (!signatureOk(raw, req.headers['x-signature'])) throw new HttpError(401, 'invalid_signature');
    let text: string;
    let parsed: unknown;
    try {
      text = utf8.decode(raw);
      parsed = JSON.parse(text);
    } catch {
      throw new HttpError(400, 'malformed_json');
    }
    const batch = validate(parsed);
    const requestId = (req.headers['x-request-id'] as string | undefined) ?? randomUUID();
    const hash = createHash('sha256').update(raw).digest('hex');
    const duplicate = await apply({ raw, text, hash, batch, requestId, receivedAt });
    send(
      res,
      200,
      `{"success":true,"processed":${batch.couponCount}${duplicate ? ',"duplicate":true' : ''}}`,
    );
  } catch (err) {
    if (err instanceof HttpError) return fail(res, err.status, err.code);
    console.error(`baseline: ${(err as Error).message}`);
    fail(res, 503, 'transient_failure');
  }
}

const server = http.createServer((req, res) => {
  const receivedAt = Date.now();
  if (req.method === 'GET' && req.url === '/health') return send(res, 200, '{"ok":true}');
  if (req.method !== 'POST' || req.url?.toLowerCase() !== CALLBACK_PATH) {
    req.resume();
    return fail(res, 404, 'not_found');
  }
  if (!/^application\/json\s*(;|$)/i.test(req.headers['content-type'] ?? '')) {
    req.resume();
    return fail(res, 415, 'unsupported_media_type');
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let tooLarge = false;
  req.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > BODY_LIMIT) tooLarge = true;
    else chunks.push(chunk);
  });
  req.on('end', () => {
    if (tooLarge) return fail(res, 413, 'payload_too_large');
    void handle(req, res, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size), receivedAt);
  });
});
server.keepAliveTimeout = 65_000;

server.listen(PORT, HOST, () => console.log(`baseline listening on http://${HOST}:${PORT}`));

const shutdown = () => {
  server.close();
  server.closeAllConnections();
  void pool.end().finally(() => process.exit(0));
  setTimeout(() => process.exit(0), 5000).unref();
};
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);
