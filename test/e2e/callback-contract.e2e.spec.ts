import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import request from 'supertest';
import { injectTrigger, whileLocked } from '../support/database-faults.js';
import { rowsOfBatch } from '../support/rows.js';
import {
  attemptsWritten,
  balance,
  batchOf,
  deliver,
  deposit,
  expectError,
  fieldPaths,
  operations,
  ops,
  OTHER_SECRET,
  register,
  SECRET,
  sha256Hex,
  sign,
  TestContext,
  useTestApp,
} from '../support/test-app.js';
import { sleep } from '../support/wait.js';

// The callback's HTTP contract and failure handling (CONTRACT §3, §4, §5, §8): signatures,
// validation, conflicts, body limits and encodings, the exact response shape, and what a failure
// in the middle of a batch (injected with triggers in the test database) leaves behind.

const CALLBACK = '/sportapi/callback';

/** What a refused or rolled-back batch leaves in {@link rowsOfBatch} of its id and coupons: nothing. */
const NOTHING_KEPT = { batches: 0, snapshots: 0, bets: 0, operations: 0, touched_coupons: 0 };

const TABLES = [
  'callback_batches',
  'coupons',
  'coupon_snapshots',
  'bets',
  'financial_operations',
  'ledger_entries',
  'accounts',
  'quarantined_bodies',
  'delivery_attempts',
] as const;
type Counts = Record<(typeof TABLES)[number], number>;

/** Row counts of every table the callback writes. */
async function counts(t: TestContext): Promise<Counts> {
  await attemptsWritten(t);
  const { rows } = await t.db.query(
    `SELECT ${TABLES.map((x) => `(SELECT count(*)::int FROM ${x}) AS ${x}`).join(', ')}`,
  );
  return rows[0] as Counts;
}

/** The tables whose row count changed, with the change. */
function changed(before: Counts, after: Counts): Partial<Counts> {
  const out: Partial<Counts> = {};
  for (const table of TABLES) if (after[table] !== before[table]) out[table] = after[table] - before[table];
  return out;
}

let requestSeq = 0;
/** A fresh correlation id, so each request's delivery attempt can be found. */
function rid(): string {
  requestSeq += 1;
  return `cc-${process.pid}-${requestSeq}`;
}

interface SendOptions {
  /** HMAC secret; default SECRET. */
  secret?: string;
  /** The signature header's value as sent; `null` sends no signature. Default `sha256=<hex>` over the decoded bytes. */
  signature?: string | null;
  /** Name of the signature header; default X-Signature. */
  signatureHeader?: string;
  /** Content-Type; `null` sends none. */
  contentType?: string | null;
  /** Content-Encoding header and the encoder applied to the bytes on the wire. */
  encoding?: { name: string; encode: (b: Buffer) => Buffer };
  headers?: Record<string, string>;
}

interface Sent {
  res: request.Response;
  /** The decoded body bytes (what is signed and what the quarantine must hold). */
  bytes: Buffer;
  requestId: string;
}

/** POSTs `body` (object → JSON once; string/Buffer as is) to the callback with full control of headers. */
async function send(t: TestContext, body: unknown, opts: SendOptions = {}): Promise<Sent> {
  const bytes = Buffer.isBuffer(body)
    ? body
    : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body), 'utf8');
  const requestId = opts.headers?.['x-request-id'] ?? rid();
  let req = request(t.app.getHttpServer()).post(CALLBACK).set('x-request-id', requestId);
  if (opts.contentType !== null) req = req.set('content-type', opts.contentType ?? 'application/json');
  const signature = opts.signature === undefined ? sign(bytes, opts.secret ?? SECRET) : opts.signature;
  if (signature !== null) req = req.set(opts.signatureHeader ?? 'x-signature', signature);
  if (opts.encoding) req = req.set('content-encoding', opts.encoding.name);
  for (const [k, v] of Object.entries(opts.headers ?? {})) req = req.set(k, v);
  // The bytes go out as they are: superagent would otherwise JSON-serialise a Buffer.
  const raw = (b: unknown) => b as string;
  const res = await req.serialize(raw).send(opts.encoding ? opts.encoding.encode(bytes) : bytes);
  return { res, bytes, requestId };
}

/** The delivery attempt recorded for a request id (exactly one row expected). */
async function attemptOf(t: TestContext, requestId: string) {
  await attemptsWritten(t);
  const { rows } = await t.db.query(
    `SELECT batch_id, request_id, outcome, http_status, error_code, payload_hash FROM delivery_attempts WHERE request_id = $1`,
    [requestId],
  );
  expect(rows).toHaveLength(1);
  return rows[0] as {
    batch_id: string | null;
    request_id: string;
    outcome: string;
    http_status: number;
    error_code: string | null;
    payload_hash: string | null;
  };
}

/** {@link send}, with the milliseconds until its answer. */
async function sendTimed(t: TestContext, body: unknown): Promise<{ sent: Sent; elapsed: number }> {
  const started = Date.now();
  const sent = await send(t, body);
  return { sent, elapsed: Date.now() - started };
}

/** Quarantined bodies with the SHA-256 of `bytes`. */
async function quarantineOf(t: TestContext, bytes: Buffer) {
  const { rows } = await t.db.query(
    `SELECT batch_id, reason, http_status, body, content_type FROM quarantined_bodies WHERE payload_hash = $1 ORDER BY id`,
    [sha256Hex(bytes)],
  );
  return rows as {
    batch_id: string | null;
    reason: string;
    http_status: number;
    body: Buffer;
    content_type: string | null;
  }[];
}

/** Asserts a signed body rejected with `status`/`code`: stored verbatim once, one attempt, nothing else written. */
async function expectQuarantined(
  t: TestContext,
  sent: Sent,
  before: Counts,
  expected: { status: number; code: string; outcome: string; batchId?: string | null },
): Promise<void> {
  expect(changed(before, await counts(t))).toEqual({ delivery_attempts: 1, quarantined_bodies: 1 });
  const q = await quarantineOf(t, sent.bytes);
  expect(q).toHaveLength(1);
  expect(q[0].reason).toBe(expected.code);
  expect(q[0].http_status).toBe(expected.status);
  expect(q[0].content_type).toBe('application/json');
  expect(Buffer.compare(q[0].body, sent.bytes)).toBe(0);
  const attempt = await attemptOf(t, sent.requestId);
  expect(attempt).toMatchObject({
    outcome: expected.outcome,
    http_status: expected.status,
    error_code: expected.code,
    payload_hash: sha256Hex(sent.bytes),
  });
  if (expected.batchId !== undefined) {
    expect(attempt.batch_id).toBe(expected.batchId);
    expect(q[0].batch_id).toBe(expected.batchId);
  }
}

/** Asserts an unsigned/refused body: one attempt with `outcome`, nothing stored, no body kept. */
async function expectRefusedUnstored(
  t: TestContext,
  sent: Sent,
  before: Counts,
  status: number,
  code: string,
  outcome: string,
) {
  expect(changed(before, await counts(t))).toEqual({ delivery_attempts: 1 });
  expect(await quarantineOf(t, sent.bytes)).toHaveLength(0);
  expect(await attemptOf(t, sent.requestId)).toMatchObject({
    outcome,
    http_status: status,
    error_code: code,
  });
}

const ev = (uuid: string, status = 2) => ({ uuid, status });
/** A valid coupon snapshot (WIN 10.00 by default). */
function coupon(code: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return { coupon_code: code, status: 2, realWin: '10.00', events: [ev(`${code}-e1`)], ...over };
}
/** A valid batch of `coupons` (couponCount = length unless overridden). */
function batch(
  batchId: string,
  coupons: unknown[],
  over: Record<string, unknown> = {},
): Record<string, unknown> {
  return { batchId, couponCount: coupons.length, coupons, ...over };
}
/** `obj` serialised with an extra `pad` field so that the JSON is exactly `size` bytes (ASCII). */
function jsonOfSize(obj: Record<string, unknown>, size: number): string {
  const base = JSON.stringify({ ...obj, pad: '' }).length;
  const json = JSON.stringify({ ...obj, pad: 'x'.repeat(size - base) });
  if (Buffer.byteLength(json) !== size) throw new Error('bad padding');
  return json;
}

async function attemptsOfBatch(t: TestContext, batchId: string) {
  await attemptsWritten(t);
  const { rows } = await t.db.query(
    `SELECT outcome, http_status, error_code FROM delivery_attempts WHERE batch_id = $1 ORDER BY id`,
    [batchId],
  );
  return rows;
}

describe('callback HTTP contract (CONTRACT §3–§5, §8)', () => {
  // EUR and USD only: no allowed currency has 3 fraction digits, so a realWin with 3 is a 400
  // (issue 17; with the ISO default CLF's 4 digits are allowed, see currency-precision.e2e).
  const t = useTestApp({ CURRENCIES: 'EUR,USD' });
  beforeAll(async () => {
    await deposit(t.app, 'house-warmup', '1.00'); // creates the EUR house account once
  });

  describe('signature (§3, §4 step 1)', () => {
    it('no signature header → 401 invalid_signature; nothing stored but the attempt (outcome unauthorized)', async () => {
      const before = await counts(t);
      const sent = await send(t, batchOf('sig-none', { code: 'SIG-NONE', status: 2, realWin: '5.00' }), {
        signature: null,
      });
      expectError(sent.res, 401, 'invalid_signature');
      expect(sent.res.body.error.fields).toBeUndefined();
      await expectRefusedUnstored(t, sent, before, 401, 'invalid_signature', 'unauthorized');
      // Unsigned bodies are never parsed: neither the batch id nor the body hash is recorded.
      expect(await attemptOf(t, sent.requestId)).toMatchObject({ batch_id: null, payload_hash: null });
      expect((await ops(t.app).get('/coupons/SIG-NONE')).status).toBe(404);
    });

    it('a signature made with an unknown secret → 401, nothing stored', async () => {
      const before = await counts(t);
      const sent = await send(t, batchOf('sig-wrong', { code: 'SIG-WRONG', status: 2, realWin: '5.00' }), {
        secret: 'not-the-secret',
      });
      expectError(sent.res, 401, 'invalid_signature');
      await expectRefusedUnstored(t, sent, before, 401, 'invalid_signature', 'unauthorized');
    });

    it('a body changed after signing → 401, nothing stored', async () => {
      const signed = JSON.stringify(
        batchOf('sig-tamper', { code: 'SIG-TAMPER', status: 2, realWin: '5.00' }),
      );
      const tampered = signed.replace('"5.00"', '"500.00"');
      expect(tampered).not.toBe(signed);
      const before = await counts(t);
      const sent = await send(t, tampered, { signature: sign(signed) });
      expectError(sent.res, 401, 'invalid_signature');
      await expectRefusedUnstored(t, sent, before, 401, 'invalid_signature', 'unauthorized');
    });

    it('malformed signature values → 401', async () => {
      const body = JSON.stringify(batchOf('sig-garbage', { code: 'SIG-GARBAGE', status: 1 }));
      const hex = sign(body).slice('sha256='.length);
      for (const value of ['sha256=', `sha256=${hex.slice(1)}`, `sha1=${hex}`, `${hex}00`, 'garbage']) {
        const sent = await send(t, body, { signature: value });
        expectError(sent.res, 401, 'invalid_signature');
      }
      expect(
        (await t.db.query(`SELECT 1 FROM callback_batches WHERE batch_id = 'sig-garbage'`)).rowCount,
      ).toBe(0);
    });

    it('a bare lowercase hex digest is accepted', async () => {
      const body = JSON.stringify(batchOf('sig-lower', { code: 'SIG-LOWER', status: 1 }));
      const hex = sign(body).slice('sha256='.length);
      expect(hex).toMatch(/^[0-9a-f]{64}$/);
      const { res } = await send(t, body, { signature: hex });
      expect(res.status).toBe(200);
      expect(res.body).toStrictEqual({ success: true, processed: 1 });
    });

    it('a bare uppercase hex digest is accepted', async () => {
      const body = JSON.stringify(batchOf('sig-upper', { code: 'SIG-UPPER', status: 1 }));
      const hex = sign(body).slice('sha256='.length).toUpperCase();
      const { res } = await send(t, body, { signature: hex });
      expect(res.status).toBe(200);
      expect(res.body).toStrictEqual({ success: true, processed: 1 });
    });

    it('the second configured secret (rotation) is accepted', async () => {
      const { res } = await send(t, batchOf('sig-rotated', { code: 'SIG-ROT', status: 1 }), {
        secret: OTHER_SECRET,
      });
      expect(res.status).toBe(200);
      expect(res.body).toStrictEqual({ success: true, processed: 1 });
      expect(
        (await t.db.query(`SELECT 1 FROM callback_batches WHERE batch_id = 'sig-rotated'`)).rowCount,
      ).toBe(1);
    });
  });

  describe('validation → 400, quarantined verbatim (§3, §4 step 2, §8)', () => {
    const long = (n: number) => 'B'.repeat(n);
    const cases: { name: string; body: unknown; path: string; batchId?: string | null }[] = [
      {
        name: 'couponCount ≠ coupons.length',
        body: batch('v-count', [coupon('V-COUNT')], { couponCount: 2 }),
        path: 'couponCount',
        batchId: 'v-count',
      },
      {
        name: 'couponCount missing',
        body: { batchId: 'v-count-missing', coupons: [coupon('V-COUNTM')] },
        path: 'couponCount',
      },
      {
        name: 'couponCount as a string',
        body: batch('v-count-str', [coupon('V-COUNTS')], { couponCount: '1' }),
        path: 'couponCount',
      },
      { name: 'empty coupons', body: batch('v-empty', []), path: 'coupons', batchId: 'v-empty' },
      {
        name: '101 coupons',
        body: batch(
          'v-101',
          Array.from({ length: 101 }, (_, i) => coupon(`V101-${String(i).padStart(3, '0')}`)),
        ),
        path: 'coupons',
      },
      {
        name: 'coupons not an array',
        body: { batchId: 'v-coupons-obj', couponCount: 1, coupons: 'V-X' },
        path: 'coupons',
      },
      {
        name: 'the same coupon_code twice',
        body: batch('v-dupcode', [coupon('V-DUP'), coupon('V-DUP', { realWin: '5.00' })]),
        path: 'coupons[1].coupon_code',
        batchId: 'v-dupcode',
      },
      {
        name: 'the same uuid twice in one coupon',
        body: batch('v-dupuuid', [coupon('V-DUPUUID', { events: [ev('u-1'), ev('u-2'), ev('u-1')] })]),
        path: 'coupons[0].events[2].uuid',
      },
      {
        name: "realWin 'abc'",
        body: batch('v-rw-abc', [coupon('V-RWABC', { realWin: 'abc' })]),
        path: 'coupons[0].realWin',
      },
      {
        name: "realWin '1.005' (3 decimals)",
        body: batch('v-rw-3dp', [coupon('V-RW3DP', { realWin: '1.005' })]),
        path: 'coupons[0].realWin',
      },
      {
        name: 'realWin 1.005 as a number',
        body: batch('v-rw-3dpn', [coupon('V-RW3DPN', { realWin: 1.005 })]),
        path: 'coupons[0].realWin',
      },
      {
        name: "realWin '-5.00'",
        body: batch('v-rw-neg', [coupon('V-RWNEG', { realWin: '-5.00' })]),
        path: 'coupons[0].realWin',
      },
      {
        name: 'realWin -5 as a number',
        body: batch('v-rw-negn', [coupon('V-RWNEGN', { realWin: -5 })]),
        path: 'coupons[0].realWin',
      },
      {
        name: "realWin '1e3' (exponent)",
        body: batch('v-rw-exp', [coupon('V-RWEXP', { realWin: '1e3' })]),
        path: 'coupons[0].realWin',
      },
      {
        name: 'realWin true',
        body: batch('v-rw-bool', [coupon('V-RWBOOL', { realWin: true })]),
        path: 'coupons[0].realWin',
      },
      {
        name: 'a bad realWin in the second coupon',
        body: batch('v-rw-second', [coupon('V-RW2A'), coupon('V-RW2B', { realWin: '12.345' })]),
        path: 'coupons[1].realWin',
      },
      {
        name: 'batchId missing',
        body: { couponCount: 1, coupons: [coupon('V-NOBATCH')] },
        path: 'batchId',
        batchId: null,
      },
      { name: 'batchId empty', body: batch('', [coupon('V-EMPTYBATCH')]), path: 'batchId' },
      {
        name: 'batchId of 65 chars',
        body: batch(long(65), [coupon('V-LONGBATCH')]),
        path: 'batchId',
        batchId: null,
      },
      {
        name: 'batchId a number',
        body: batch('x', [coupon('V-NUMBATCH')], { batchId: 123 }),
        path: 'batchId',
        batchId: null,
      },
      {
        name: 'coupon_code of 33 chars',
        body: batch('v-code33', [coupon('C'.repeat(33))]),
        path: 'coupons[0].coupon_code',
      },
      { name: 'coupon_code empty', body: batch('v-code0', [coupon('')]), path: 'coupons[0].coupon_code' },
      {
        name: 'coupon_code a number',
        body: batch('v-codenum', [coupon('x', { coupon_code: 272 })]),
        path: 'coupons[0].coupon_code',
      },
      {
        name: "status '2' (a string)",
        body: batch('v-status-str', [coupon('V-STSTR', { status: '2' })]),
        path: 'coupons[0].status',
      },
      {
        name: 'status 2.5',
        body: batch('v-status-frac', [coupon('V-STFRAC', { status: 2.5 })]),
        path: 'coupons[0].status',
      },
      {
        name: 'status missing',
        body: batch('v-status-none', [coupon('V-STNONE', { status: undefined })]),
        path: 'coupons[0].status',
      },
      {
        name: 'events missing',
        body: batch('v-events-none', [coupon('V-EVNONE', { events: undefined })]),
        path: 'coupons[0].events',
      },
      {
        name: 'an event without uuid',
        body: batch('v-ev-nouuid', [coupon('V-EVNOUUID', { events: [ev('ok'), { status: 1 }] })]),
        path: 'coupons[0].events[1].uuid',
      },
      {
        name: "an event status '1' (a string)",
        body: batch('v-ev-status', [coupon('V-EVSTATUS', { events: [{ uuid: 'e', status: '1' }] })]),
        path: 'coupons[0].events[0].status',
      },
      { name: 'a JSON array body', body: [batch('v-array', [coupon('V-ARRAY')])], path: '' },
      { name: 'a JSON string body', body: JSON.stringify('v-string'), path: '' },
    ];

    it.each(cases)('$name → 400 validation_failed at "$path"', async ({ body, path, batchId }) => {
      const before = await counts(t);
      const sent = await send(t, body);
      expectError(sent.res, 400, 'validation_failed');
      expect(fieldPaths(sent.res)).toEqual([path]);
      for (const f of sent.res.body.error.fields) expect(typeof f.message).toBe('string');
      await expectQuarantined(t, sent, before, {
        status: 400,
        code: 'validation_failed',
        outcome: 'rejected',
        batchId,
      });
    });

    const malformed: { name: string; bytes: Buffer }[] = [
      {
        name: 'truncated JSON',
        bytes: Buffer.from(JSON.stringify(batch('m-trunc', [coupon('M-TRUNC')])).slice(0, -7)),
      },
      {
        name: 'invalid UTF-8 bytes',
        bytes: Buffer.concat([
          Buffer.from('{"batchId":"m-utf8","couponCount":1,"coupons":[{"coupon_code":"M-'),
          Buffer.from([0xc3, 0x28, 0xff, 0xfe]),
          Buffer.from('","status":1,"realWin":null,"events":[]}]}'),
        ]),
      },
      { name: 'an empty body', bytes: Buffer.alloc(0) },
      { name: 'text that is not JSON', bytes: Buffer.from('batchId=m-form&couponCount=1') },
      {
        name: 'JSON followed by garbage',
        bytes: Buffer.from(`${JSON.stringify(batch('m-trail', [coupon('M-TRAIL')]))}}`),
      },
    ];

    it.each(malformed)('$name (signed) → 400 malformed_json, stored verbatim', async ({ bytes }) => {
      const before = await counts(t);
      const sent = await send(t, bytes);
      expectError(sent.res, 400, 'malformed_json');
      await expectQuarantined(t, sent, before, { status: 400, code: 'malformed_json', outcome: 'rejected' });
    });

    it('the same rejected body twice is quarantined twice, each with its own attempt', async () => {
      const body = batch('v-twice', [coupon('V-TWICE', { realWin: 'abc' })]);
      const first = await send(t, body);
      const second = await send(t, body);
      expectError(first.res, 400, 'validation_failed');
      expectError(second.res, 400, 'validation_failed');
      expect(await quarantineOf(t, first.bytes)).toHaveLength(2);
      expect((await attemptOf(t, first.requestId)).outcome).toBe('rejected');
      expect((await attemptOf(t, second.requestId)).outcome).toBe('rejected');
      expect((await t.db.query(`SELECT 1 FROM callback_batches WHERE batch_id = 'v-twice'`)).rowCount).toBe(
        0,
      );
    });

    it('a rejected coupon leaves a registered coupon and its balance untouched', async () => {
      await deposit(t.app, 'pv', '100.00');
      await register(t.app, 'V-REG', 'pv', '10.00');
      const sent = await send(
        t,
        batch('v-reg', [coupon('V-REG', { realWin: '50.00' }), coupon('V-REG-2', { realWin: '1.001' })]),
      );
      expectError(sent.res, 400, 'validation_failed');
      expect(fieldPaths(sent.res)).toEqual(['coupons[1].realWin']);
      expect(await operations(t.app, 'V-REG')).toEqual(['V-REG:0:stake_debit=10.00']);
      expect(await balance(t.app, 'pv')).toBe('90.00');
      expect((await ops(t.app).get('/coupons/V-REG')).body).toMatchObject({ status: null, realWin: null });
      expect((await ops(t.app).get('/coupons/V-REG-2')).status).toBe(404);
    });

    it('realWin as a JSON number 12.5 is accepted and stored as 12.50', async () => {
      await deposit(t.app, 'pnum', '100.00');
      await register(t.app, 'V-NUM', 'pnum', '10.00');
      const sent = await send(
        t,
        '{"batchId":"v-num","couponCount":1,"coupons":[{"coupon_code":"V-NUM","status":2,"realWin":12.5,"events":[{"uuid":"e","status":2}]}]}',
      );
      expect(sent.res.status).toBe(200);
      expect(sent.res.body).toStrictEqual({ success: true, processed: 1 });
      const snap = await t.db.query(
        `SELECT real_win::text AS real_win FROM coupon_snapshots WHERE batch_id = 'v-num'`,
      );
      expect(snap.rows).toEqual([{ real_win: '12.50000000' }]);
      expect((await ops(t.app).get('/coupons/V-NUM')).body).toMatchObject({ status: 2, realWin: '12.50' });
      expect(await operations(t.app, 'V-NUM')).toEqual([
        'V-NUM:0:final_credit=12.50',
        'V-NUM:0:stake_debit=10.00',
      ]);
      expect(await balance(t.app, 'pnum')).toBe('102.50');
    });

    it('realWin null, absent and "0" are accepted (unsettled / zero)', async () => {
      const { res } = await send(
        t,
        batch('v-rw-ok', [
          coupon('V-RWNULL', { status: 1, realWin: null }),
          { coupon_code: 'V-RWABSENT', status: 1, events: [ev('e', 0)] },
          coupon('V-RWZERO', { status: 4, realWin: '0' }),
          coupon('V-RWINT', { realWin: 7 }),
        ]),
      );
      expect(res.status).toBe(200);
      expect(res.body).toStrictEqual({ success: true, processed: 4 });
      const snaps = await t.db.query(
        `SELECT coupon_code, real_win::text AS real_win FROM coupon_snapshots WHERE batch_id = 'v-rw-ok' ORDER BY coupon_code`,
      );
      expect(snaps.rows).toEqual([
        { coupon_code: 'V-RWABSENT', real_win: null },
        { coupon_code: 'V-RWINT', real_win: '7.00000000' },
        { coupon_code: 'V-RWNULL', real_win: null },
        { coupon_code: 'V-RWZERO', real_win: '0.00000000' },
      ]);
    });

    it('unknown extra fields anywhere are accepted and kept (snapshot payload, events, raw batch)', async () => {
      const theCoupon = {
        coupon_code: '000000000272',
        status: 2,
        realWin: '185.50',
        currency: 'EUR',
        placedAt: '2026-11-30T10:00:00Z',
        meta: { channel: 'web', tags: ['a', 'b'], nested: { deep: true } },
        events: [
          { uuid: '9b2f6a1e-0001', status: 2, odds: '1.85', market: { id: 7, name: '1X2' }, extra: null },
          { uuid: '9b2f6a1e-0002', status: 2, odds: 2.1, startsAt: '2026-11-29T18:00:00Z' },
        ],
      };
      const body = {
        batchId: 'v-extra',
        couponCount: 1,
        sentAt: '2026-11-30T12:00:00Z',
        sender: { v: 3 },
        coupons: [theCoupon],
      };
      const sent = await send(t, body);
      expect(sent.res.status).toBe(200);
      expect(sent.res.body).toStrictEqual({ success: true, processed: 1 });
      const snap = await t.db.query(`SELECT payload FROM coupon_snapshots WHERE batch_id = 'v-extra'`);
      expect(snap.rows).toEqual([{ payload: theCoupon }]);
      const view = (await ops(t.app).get('/coupons/000000000272')).body;
      expect(view).toMatchObject({ coupon_code: '000000000272', status: 2, realWin: '185.50' });
      expect(
        [...view.events].sort((a: { uuid: string }, b: { uuid: string }) => a.uuid.localeCompare(b.uuid)),
      ).toEqual(theCoupon.events);
      const raw = await t.db.query(`SELECT payload FROM callback_batches WHERE batch_id = 'v-extra'`);
      expect(Buffer.compare(raw.rows[0].payload, sent.bytes)).toBe(0);
      expect(await quarantineOf(t, sent.bytes)).toHaveLength(0);
    });

    it('coupon_code is kept exactly as sent (leading zeros, 32 chars)', async () => {
      const code32 = '0'.repeat(31) + '7';
      const { res } = await send(
        t,
        batch('v-code32', [
          coupon(code32, { status: 1, realWin: null }),
          coupon('7', { status: 1, realWin: null }),
        ]),
      );
      expect(res.status).toBe(200);
      expect((await ops(t.app).get(`/coupons/${code32}`)).body.coupon_code).toBe(code32);
      expect((await ops(t.app).get('/coupons/7')).body.coupon_code).toBe('7');
    });
  });

  describe('text PostgreSQL cannot hold (§3, §5): a deterministic 400, never a retried 503', () => {
    // U+0000 and unpaired UTF-16 surrogates are valid JSON string content but cannot be stored in
    // PostgreSQL text/jsonb; lengths are counted in code points, as the database's CHECKs do.
    const cases: { name: string; body: unknown; path: string; batchId: string | null }[] = [
      {
        name: 'U+0000 in coupon_code',
        body: batch('t-nul-code', [coupon('T\u0000NUL', { events: [ev('e1')] })]),
        path: 'coupons[0].coupon_code',
        batchId: 't-nul-code',
      },
      {
        name: 'U+0000 in batchId',
        body: batch('t-nul-\u0000batch', [coupon('T-NULBATCH')]),
        path: 'batchId',
        batchId: null,
      },
      {
        name: 'U+0000 in an event uuid',
        body: batch('t-nul-uuid', [coupon('T-NULUUID', { events: [ev('e\u0000')] })]),
        path: 'coupons[0].events[0].uuid',
        batchId: 't-nul-uuid',
      },
      {
        name: 'an unpaired surrogate in coupon_code',
        body: batch('t-sur-code', [coupon('T-SUR\ud800', { events: [ev('e1')] })]),
        path: 'coupons[0].coupon_code',
        batchId: 't-sur-code',
      },
      {
        name: 'an unpaired surrogate in batchId',
        body: batch('t-sur-\udc00', [coupon('T-SURBATCH')]),
        path: 'batchId',
        batchId: null,
      },
      {
        name: 'coupon_code of 34 code points (17 × "❤️")',
        body: batch('t-len-code', [coupon('\u2764\ufe0f'.repeat(17), { events: [ev('e1')] })]),
        path: 'coupons[0].coupon_code',
        batchId: 't-len-code',
      },
      {
        name: 'batchId of 201 code points',
        body: batch('b' + '\ufe0f'.repeat(200), [coupon('T-LENBATCH')]),
        path: 'batchId',
        batchId: null,
      },
      {
        name: 'uuid of 65 code points',
        body: batch('t-len-uuid', [coupon('T-LENUUID', { events: [ev('u' + '\ufe0f'.repeat(64))] })]),
        path: 'coupons[0].events[0].uuid',
        batchId: 't-len-uuid',
      },
    ];

    it.each(cases)(
      '$name → 400 validation_failed at "$path", quarantined',
      async ({ body, path, batchId }) => {
        const before = await counts(t);
        const sent = await send(t, body);
        expectError(sent.res, 400, 'validation_failed');
        expect(fieldPaths(sent.res)).toEqual([path]);
        await expectQuarantined(t, sent, before, {
          status: 400,
          code: 'validation_failed',
          outcome: 'rejected',
          batchId,
        });
      },
    );

    it('U+0000 and unpaired surrogates in unknown fields are accepted; the raw body keeps every byte', async () => {
      await deposit(t.app, 'ptext', '100.00');
      await register(t.app, 'T-EXTRA', 'ptext', '10.00');
      const body = batch('t-extra', [
        coupon('T-EXTRA', {
          realWin: '20.00',
          note: 'a\u0000b',
          ['k\u0000']: 'key with NUL',
          events: [{ uuid: 'e1', status: 2, label: 'x\ud800y' }],
        }),
      ]);
      const sent = await send(t, body);
      expect(sent.res.status).toBe(200);
      expect(sent.res.body).toStrictEqual({ success: true, processed: 1 });
      expect(await operations(t.app, 'T-EXTRA')).toEqual([
        'T-EXTRA:0:final_credit=20.00',
        'T-EXTRA:0:stake_debit=10.00',
      ]);
      expect(await balance(t.app, 'ptext')).toBe('110.00');
      const raw = await t.db.query(`SELECT payload FROM callback_batches WHERE batch_id = 't-extra'`);
      expect(Buffer.compare(raw.rows[0].payload, sent.bytes)).toBe(0);
      // The jsonb copies hold U+FFFD where PostgreSQL cannot store the character.
      const snap = await t.db.query(`SELECT payload FROM coupon_snapshots WHERE batch_id = 't-extra'`);
      expect(snap.rows[0].payload).toMatchObject({ note: 'a\ufffdb', ['k\ufffd']: 'key with NUL' });
      expect((await ops(t.app).get('/coupons/T-EXTRA')).body.events).toEqual([
        { uuid: 'e1', status: 2, label: 'x\ufffdy' },
      ]);
    });
  });

  describe('409 batch_conflict (§4 step 4, §8)', () => {
    it('same batchId with a different body → 409, quarantined, no second operation; the original again → 200 duplicate', async () => {
      await deposit(t.app, 'pc', '100.00');
      await register(t.app, 'K-1', 'pc', '10.00');
      const original = batchOf('k-batch-1', { code: 'K-1', status: 2, realWin: '30.00' });
      const first = await send(t, original);
      expect(first.res.status).toBe(200);
      expect(first.res.body).toStrictEqual({ success: true, processed: 1 });
      expect(await balance(t.app, 'pc')).toBe('120.00');

      const before = await counts(t);
      const conflicting = await send(t, batchOf('k-batch-1', { code: 'K-1', status: 2, realWin: '300.00' }));
      expectError(conflicting.res, 409, 'batch_conflict');
      await expectQuarantined(t, conflicting, before, {
        status: 409,
        code: 'batch_conflict',
        outcome: 'conflict',
        batchId: 'k-batch-1',
      });
      expect(await operations(t.app, 'K-1')).toEqual(['K-1:0:final_credit=30.00', 'K-1:0:stake_debit=10.00']);
      expect(await balance(t.app, 'pc')).toBe('120.00');
      // The committed batch keeps the first body.
      const stored = await t.db.query(
        `SELECT payload, payload_hash FROM callback_batches WHERE batch_id = 'k-batch-1'`,
      );
      expect(Buffer.compare(stored.rows[0].payload, first.bytes)).toBe(0);
      expect(stored.rows[0].payload_hash).toBe(sha256Hex(first.bytes));

      const again = await send(t, original);
      expect(again.res.status).toBe(200);
      expect(again.res.body).toStrictEqual({ success: true, processed: 1, duplicate: true });
      expect(await attemptsOfBatch(t, 'k-batch-1')).toEqual([
        { outcome: 'processed', http_status: 200, error_code: null },
        { outcome: 'conflict', http_status: 409, error_code: 'batch_conflict' },
        { outcome: 'duplicate', http_status: 200, error_code: null },
      ]);
      expect(await operations(t.app, 'K-1')).toEqual(['K-1:0:final_credit=30.00', 'K-1:0:stake_debit=10.00']);
      expect(await balance(t.app, 'pc')).toBe('120.00');
    });

    it('a conflicting body with a brand-new coupon writes nothing for that coupon', async () => {
      expect((await send(t, batchOf('k-batch-2', { code: 'K-2', status: 1 }))).res.status).toBe(200);
      const sent = await send(
        t,
        batch('k-batch-2', [coupon('K-2', { status: 1, realWin: null }), coupon('K-2-NEW')]),
      );
      expectError(sent.res, 409, 'batch_conflict');
      expect((await ops(t.app).get('/coupons/K-2-NEW')).status).toBe(404);
      expect(
        (await t.db.query(`SELECT 1 FROM coupon_snapshots WHERE coupon_code = 'K-2-NEW'`)).rowCount,
      ).toBe(0);
    });
  });

  describe('413 / 415 / encodings (§3, §5)', () => {
    it('a body of 2 MiB + 1 byte (default limit) → 413 payload_too_large, not stored', async () => {
      const json = jsonOfSize(batchOf('big-1', { code: 'BIG-1', status: 1 }), 2 * 1024 * 1024 + 1);
      const before = await counts(t);
      const sent = await send(t, json);
      expectError(sent.res, 413, 'payload_too_large');
      await expectRefusedUnstored(t, sent, before, 413, 'payload_too_large', 'rejected');
    });

    it('a body of exactly 2 MiB is accepted', async () => {
      const json = jsonOfSize(batchOf('big-2', { code: 'BIG-2', status: 1 }), 2 * 1024 * 1024);
      const { res } = await send(t, json);
      expect(res.status).toBe(200);
      expect(res.body).toStrictEqual({ success: true, processed: 1 });
    });

    it.each([
      ['text/plain', 'text/plain'],
      ['application/x-www-form-urlencoded', 'application/x-www-form-urlencoded'],
      ['no Content-Type', null],
    ])('Content-Type %s → 415 unsupported_media_type, not stored', async (_name, contentType) => {
      const before = await counts(t);
      const sent = await send(t, batchOf(`ct-${requestSeq}`, { code: `CT-${requestSeq}`, status: 1 }), {
        contentType,
      });
      expectError(sent.res, 415, 'unsupported_media_type');
      await expectRefusedUnstored(t, sent, before, 415, 'unsupported_media_type', 'rejected');
    });

    it('Content-Encoding br → 415, not stored', async () => {
      const before = await counts(t);
      const sent = await send(t, batchOf('enc-br', { code: 'ENC-BR', status: 1 }), {
        encoding: { name: 'br', encode: (b) => brotliCompressSync(b) },
      });
      expectError(sent.res, 415, 'unsupported_media_type');
      await expectRefusedUnstored(t, sent, before, 415, 'unsupported_media_type', 'rejected');
      expect((await ops(t.app).get('/coupons/ENC-BR')).status).toBe(404);
    });

    it('Content-Encoding gzip: signature over the decoded bytes → 200; the decoded bytes are stored', async () => {
      const sent = await send(t, batchOf('enc-gzip', { code: 'ENC-GZIP', status: 1 }), {
        encoding: { name: 'gzip', encode: (b) => gzipSync(b) },
      });
      expect(sent.res.status).toBe(200);
      expect(sent.res.body).toStrictEqual({ success: true, processed: 1 });
      const raw = await t.db.query(
        `SELECT payload, payload_hash FROM callback_batches WHERE batch_id = 'enc-gzip'`,
      );
      expect(Buffer.compare(raw.rows[0].payload, sent.bytes)).toBe(0);
      expect(raw.rows[0].payload_hash).toBe(sha256Hex(sent.bytes));
    });

    it('Content-Encoding deflate → 200', async () => {
      const sent = await send(t, batchOf('enc-deflate', { code: 'ENC-DEFLATE', status: 1 }), {
        encoding: { name: 'deflate', encode: (b) => deflateSync(b) },
      });
      expect(sent.res.status).toBe(200);
      expect(sent.res.body).toStrictEqual({ success: true, processed: 1 });
      expect((await ops(t.app).get('/coupons/ENC-DEFLATE')).body.status).toBe(1);
    });

    it('gzip with the signature over the compressed bytes → 401', async () => {
      const bytes = Buffer.from(
        JSON.stringify(batchOf('enc-gzip-badsig', { code: 'ENC-GZ-BAD', status: 1 })),
      );
      const gz = gzipSync(bytes);
      const sent = await send(t, bytes, {
        signature: sign(gz),
        encoding: { name: 'gzip', encode: () => gz },
      });
      expectError(sent.res, 401, 'invalid_signature');
      expect(
        (await t.db.query(`SELECT 1 FROM callback_batches WHERE batch_id = 'enc-gzip-badsig'`)).rowCount,
      ).toBe(0);
    });

    it('a corrupt gzip stream → 4xx, never 5xx, nothing stored', async () => {
      const before = await counts(t);
      const sent = await send(t, batchOf('enc-corrupt', { code: 'ENC-CORRUPT', status: 1 }), {
        encoding: { name: 'gzip', encode: (b) => Buffer.concat([Buffer.from([0x1f, 0x8b, 0x08, 0x00]), b]) },
      });
      expectError(sent.res, 400, 'malformed_json');
      expect(changed(before, await counts(t))).toEqual({ delivery_attempts: 1 });
    });

    it.each(['application/json; charset=utf-8', 'application/json;charset=UTF-8', 'Application/JSON'])(
      'Content-Type "%s" → 200',
      async (contentType) => {
        const { res } = await send(
          t,
          batchOf(`ct-ok-${contentType}`, { code: `CTOK-${requestSeq}`, status: 1 }),
          { contentType },
        );
        expect(res.status).toBe(200);
        expect(res.body).toStrictEqual({ success: true, processed: 1 });
      },
    );
  });

  describe('response contract (§5)', () => {
    it('a processed batch answers exactly 200 {success:true, processed:N}; a duplicate adds duplicate:true', async () => {
      await deposit(t.app, 'pr', '100.00');
      for (const c of ['R-1', 'R-2', 'R-3']) await register(t.app, c, 'pr', '10.00');
      const body = batch('resp-1', [
        coupon('R-3', { realWin: '3.00' }),
        coupon('R-1', { realWin: '1.00' }),
        coupon('R-2', { status: 4, realWin: '0' }),
      ]);
      const first = await send(t, body);
      expect(first.res.status).toBe(200);
      expect(first.res.headers['content-type']).toMatch(/^application\/json/);
      expect(first.res.body).toStrictEqual({ success: true, processed: 3 });
      const second = await send(t, body);
      expect(second.res.status).toBe(200);
      expect(second.res.body).toStrictEqual({ success: true, processed: 3, duplicate: true });
      expect(await balance(t.app, 'pr')).toBe('74.00');
      expect(await attemptsOfBatch(t, 'resp-1')).toEqual([
        { outcome: 'processed', http_status: 200, error_code: null },
        { outcome: 'duplicate', http_status: 200, error_code: null },
      ]);
    });

    it('a byte-identical redelivery is answered from its payload hash alone (§4 step 4, §8): 200 duplicate while the coupons table is locked, attempt recorded, nothing else written', async () => {
      await deposit(t.app, 'ph', '50.00');
      await register(t.app, 'PH-1', 'ph', '10.00');
      const body = batch('hash-1', [coupon('PH-1', { realWin: '4.00' }), coupon('PH-2', { status: 1 })]);
      expect((await send(t, body)).res.status).toBe(200);
      const before = await rowsOfBatch(t.db, 'hash-1', ['PH-1', 'PH-2']);
      // A first delivery would have to lock coupon rows; a redelivery of committed bytes must not.
      const again = await whileLocked(t.db, 'LOCK TABLE coupons IN ACCESS EXCLUSIVE MODE', () =>
        send(t, body, { headers: { 'x-request-id': 'hash-redelivery' } }),
      );
      expect(again.res.status).toBe(200);
      expect(again.res.body).toStrictEqual({ success: true, processed: 2, duplicate: true });
      expect(await attemptOf(t, 'hash-redelivery')).toEqual({
        batch_id: 'hash-1',
        request_id: 'hash-redelivery',
        outcome: 'duplicate',
        http_status: 200,
        error_code: null,
        payload_hash: sha256Hex(again.bytes),
      });
      expect(await rowsOfBatch(t.db, 'hash-1', ['PH-1', 'PH-2'])).toEqual(before);
      expect(await balance(t.app, 'ph')).toBe('44.00');
      // The same batch id with other bytes still goes the whole way: 409.
      const other = await send(t, batch('hash-1', [coupon('PH-1', { realWin: '5.00' })]));
      expectError(other.res, 409, 'batch_conflict');
    });

    it('coupons this process committed are locked without an insert of missing rows; one gone since (a restored database) is inserted again in the same transaction', async () => {
      expect(
        (await send(t, batch('known-1', [coupon('KN-1', { status: 1 }), coupon('KN-2', { status: 1 })]))).res
          .status,
      ).toBe(200);
      // A statement trigger fires for every INSERT on coupons, even one that inserts no row.
      const dropTrigger = await injectTrigger(
        t.db,
        'known_coupons_no_insert',
        'coupons',
        `RAISE EXCEPTION 'coupons insert sent' USING ERRCODE = '40P01';`,
        { statement: true },
      );
      try {
        const known = await send(
          t,
          batch('known-2', [coupon('KN-1', { status: 1 }), coupon('KN-2', { status: 1 })]),
        );
        expect(known.res.status).toBe(200);
        // A coupon this process has not seen committed still gets the insert (here refused: 503).
        const unknown = await send(
          t,
          batch('known-3', [coupon('KN-1', { status: 1 }), coupon('KN-3', { status: 1 })]),
        );
        expectError(unknown.res, 503, 'transient_failure');
      } finally {
        await dropTrigger();
      }
      await t.db.query(`DELETE FROM bets WHERE coupon_code = 'KN-2'`);
      await t.db.query(`DELETE FROM coupon_snapshots WHERE coupon_code = 'KN-2'`);
      await t.db.query(`DELETE FROM coupons WHERE coupon_code = 'KN-2'`);
      const again = await send(
        t,
        batch('known-4', [coupon('KN-1', { status: 1 }), coupon('KN-2', { status: 1 })]),
      );
      expect(again.res.body).toStrictEqual({ success: true, processed: 2 });
      const { rows } = await t.db.query(
        `SELECT c.coupon_code, c.last_batch_id, count(s.*)::int AS snapshots
           FROM coupons c JOIN coupon_snapshots s ON s.coupon_code = c.coupon_code
          WHERE c.coupon_code IN ('KN-1', 'KN-2') GROUP BY c.coupon_code ORDER BY c.coupon_code`,
      );
      expect(rows).toEqual([
        { coupon_code: 'KN-1', last_batch_id: 'known-1', snapshots: 3 },
        { coupon_code: 'KN-2', last_batch_id: 'known-4', snapshots: 1 },
      ]);
    });

    it('a redelivery of a batch committed by another replica (unknown to this process) is found by the claim: 200 duplicate, attempt recorded, nothing else written', async () => {
      const body = Buffer.from(JSON.stringify(batch('hash-2', [coupon('PH-3', { status: 1 })])));
      // As another replica would have left it: the batch committed, its coupon row written.
      await t.db.query(`INSERT INTO coupons (coupon_code) VALUES ('PH-3')`);
      await t.db.query(
        `INSERT INTO callback_batches (batch_id, payload_hash, coupon_count, payload) VALUES ('hash-2', $1, 1, $2)`,
        [sha256Hex(body), body],
      );
      const res = await send(t, body, { headers: { 'x-request-id': 'hash-other-replica' } });
      expect(res.res.status).toBe(200);
      expect(res.res.body).toStrictEqual({ success: true, processed: 1, duplicate: true });
      expect(await attemptOf(t, 'hash-other-replica')).toMatchObject({
        batch_id: 'hash-2',
        outcome: 'duplicate',
        http_status: 200,
        payload_hash: sha256Hex(body),
      });
      expect(await rowsOfBatch(t.db, 'hash-2', ['PH-3'])).toEqual({
        batches: 1,
        snapshots: 0,
        bets: 0,
        operations: 0,
        touched_coupons: 0,
      });
    });

    it('X-Request-Id is echoed and stored with the attempt (success and failures)', async () => {
      const ok = await send(t, batchOf('rid-ok', { code: 'RID-OK', status: 1 }), {
        headers: { 'x-request-id': 'corr-ok-123' },
      });
      expect(ok.res.status).toBe(200);
      expect(ok.res.headers['x-request-id']).toBe('corr-ok-123');
      expect(await attemptOf(t, 'corr-ok-123')).toMatchObject({
        batch_id: 'rid-ok',
        outcome: 'processed',
        http_status: 200,
      });

      const bad = await send(t, batchOf('rid-bad', { code: 'RID-BAD', status: 1, realWin: 'x' }), {
        headers: { 'x-request-id': 'corr-bad-456' },
      });
      expectError(bad.res, 400, 'validation_failed');
      expect(bad.res.headers['x-request-id']).toBe('corr-bad-456');
      expect(await attemptOf(t, 'corr-bad-456')).toMatchObject({
        batch_id: 'rid-bad',
        outcome: 'rejected',
        http_status: 400,
      });

      const unsigned = await send(t, batchOf('rid-401', { code: 'RID-401', status: 1 }), {
        signature: null,
        headers: { 'x-request-id': 'corr-401-789' },
      });
      expectError(unsigned.res, 401, 'invalid_signature');
      expect(unsigned.res.headers['x-request-id']).toBe('corr-401-789');
      expect(await attemptOf(t, 'corr-401-789')).toMatchObject({ outcome: 'unauthorized', http_status: 401 });
    });

    it('without X-Request-Id a correlation id is generated, answered and stored', async () => {
      const body = JSON.stringify(batchOf('rid-none', { code: 'RID-NONE', status: 1 }));
      const res = await request(t.app.getHttpServer())
        .post(CALLBACK)
        .set('content-type', 'application/json')
        .set('x-signature', sign(body))
        .send(body);
      expect(res.status).toBe(200);
      const id = res.headers['x-request-id'];
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
      expect(await attemptOf(t, id)).toMatchObject({ batch_id: 'rid-none', outcome: 'processed' });
    });

    it('the deliver() helper and a hand-signed request agree (sanity of the signing used here)', async () => {
      const res = await deliver(t.app, batchOf('rid-helper', { code: 'RID-HELPER', status: 1 }));
      expect(res.status).toBe(200);
      expect(res.body).toStrictEqual({ success: true, processed: 1 });
    });
  });

  describe('failure in the middle of a batch → 503, nothing kept (§4 step 6, §5)', () => {
    it('a non-transient error on the 2nd of 3 coupons → 503 transient_failure, zero rows; the redelivery applies money once', async () => {
      await deposit(t.app, 'pf', '100.00');
      for (const c of ['F-A', 'F-B', 'F-C']) await register(t.app, c, 'pf', '10.00');
      expect(await balance(t.app, 'pf')).toBe('70.00');
      const body = batch('fail-1', [
        coupon('F-A', { realWin: '11.00' }),
        coupon('F-B', { realWin: '22.00' }),
        coupon('F-C', { realWin: '33.00' }),
      ]);
      const remove = await injectTrigger(
        t.db,
        'inject_fail_p0001',
        'coupon_snapshots',
        `IF NEW.coupon_code = 'F-B' THEN RAISE EXCEPTION 'injected: SELECT * FROM coupons at file:///x.ts:1:1' USING ERRCODE = 'P0001'; END IF;`,
      );
      let sent!: Sent;
      const before = await counts(t);
      try {
        sent = await send(t, body);
      } finally {
        await remove();
      }
      expectError(sent.res, 503, 'transient_failure');
      expect(changed(before, await counts(t))).toEqual({ delivery_attempts: 1 });
      expect(await rowsOfBatch(t.db, 'fail-1', ['F-A', 'F-B', 'F-C'])).toEqual(NOTHING_KEPT);
      expect(await balance(t.app, 'pf')).toBe('70.00');
      expect(await attemptsOfBatch(t, 'fail-1')).toEqual([
        { outcome: 'failed', http_status: 503, error_code: 'transient_failure' },
      ]);
      expect(await quarantineOf(t, sent.bytes)).toHaveLength(0);

      const retry = await send(t, body);
      expect(retry.res.status).toBe(200);
      expect(retry.res.body).toStrictEqual({ success: true, processed: 3 });
      expect(await operations(t.app, 'F-B')).toEqual(['F-B:0:final_credit=22.00', 'F-B:0:stake_debit=10.00']);
      expect(await balance(t.app, 'pf')).toBe('136.00');
      const again = await send(t, body);
      expect(again.res.body).toStrictEqual({ success: true, processed: 3, duplicate: true });
      expect(await balance(t.app, 'pf')).toBe('136.00');
      expect(await attemptsOfBatch(t, 'fail-1')).toEqual([
        { outcome: 'failed', http_status: 503, error_code: 'transient_failure' },
        { outcome: 'processed', http_status: 200, error_code: null },
        { outcome: 'duplicate', http_status: 200, error_code: null },
      ]);
    });

    it('a deadlock (40P01) on every attempt → bounded in-process re-runs, then 503 and zero rows', async () => {
      await deposit(t.app, 'pd', '100.00');
      for (const c of ['D-A', 'D-B', 'D-C']) await register(t.app, c, 'pd', '10.00');
      await t.db.query('CREATE SEQUENCE inject_deadlock_seq');
      const remove = await injectTrigger(
        t.db,
        'inject_deadlock',
        'bets',
        `IF NEW.coupon_code = 'D-B' THEN PERFORM nextval('inject_deadlock_seq'); RAISE EXCEPTION 'injected deadlock' USING ERRCODE = '40P01'; END IF;`,
      );
      const body = batch('fail-2', [coupon('D-A'), coupon('D-B'), coupon('D-C')]);
      let sent!: Sent;
      try {
        sent = await send(t, body);
      } finally {
        await remove();
      }
      expectError(sent.res, 503, 'transient_failure');
      // 1 attempt + CALLBACK_TRANSIENT_RETRIES (default 3) re-runs, no more.
      const seq = await t.db.query(`SELECT last_value::int AS n FROM inject_deadlock_seq`);
      await t.db.query('DROP SEQUENCE inject_deadlock_seq');
      expect(seq.rows[0].n).toBe(4);
      expect(await rowsOfBatch(t.db, 'fail-2', ['D-A', 'D-B', 'D-C'])).toEqual(NOTHING_KEPT);
      expect(await balance(t.app, 'pd')).toBe('70.00');
      expect(await attemptsOfBatch(t, 'fail-2')).toEqual([
        { outcome: 'failed', http_status: 503, error_code: 'transient_failure' },
      ]);

      const retry = await send(t, body);
      expect(retry.res.body).toStrictEqual({ success: true, processed: 3 });
      expect(await balance(t.app, 'pd')).toBe('100.00');
    });

    it.each(['40001', '40P01'])(
      'a %s on the first attempt only → the transaction is re-run and the delivery answers 200; money once',
      async (sqlstate) => {
        const id = sqlstate.toLowerCase();
        const account = `pretry-${id}`;
        const code = `RT-${id}`;
        await deposit(t.app, account, '100.00');
        await register(t.app, code, account, '10.00');
        // A sequence, not a table: nextval() survives the rollback of the failed attempt.
        await t.db.query(`CREATE SEQUENCE inject_once_${id}_seq`);
        const remove = await injectTrigger(
          t.db,
          `inject_once_${id}`,
          'coupon_snapshots',
          `IF NEW.coupon_code = '${code}' AND nextval('inject_once_${id}_seq') = 1 THEN
             RAISE EXCEPTION 'injected transient failure' USING ERRCODE = '${sqlstate}';
           END IF;`,
        );
        let sent!: Sent;
        try {
          sent = await send(
            t,
            batch(`retry-${id}`, [
              coupon(`${code}-0`, { status: 1, realWin: null }),
              coupon(code, { realWin: '45.00' }),
            ]),
          );
        } finally {
          await remove();
        }
        const seq = await t.db.query(`SELECT last_value::int AS n FROM inject_once_${id}_seq`);
        await t.db.query(`DROP SEQUENCE inject_once_${id}_seq`);
        expect(seq.rows[0].n).toBe(2); // the failing run and the successful re-run
        expect(sent.res.status).toBe(200);
        expect(sent.res.body).toStrictEqual({ success: true, processed: 2 });
        expect(await operations(t.app, code)).toEqual([
          `${code}:0:final_credit=45.00`,
          `${code}:0:stake_debit=10.00`,
        ]);
        expect(await balance(t.app, account)).toBe('135.00');
        const snaps = await t.db.query(
          `SELECT count(*)::int AS n FROM coupon_snapshots WHERE batch_id = $1`,
          [`retry-${id}`],
        );
        expect(snaps.rows[0].n).toBe(2);
        expect(await attemptsOfBatch(t, `retry-${id}`)).toEqual([
          { outcome: 'processed', http_status: 200, error_code: null },
        ]);
      },
    );
  });
});

describe('custom signature header (SIGNATURE_HEADER, §3)', () => {
  const t = useTestApp({ SIGNATURE_HEADER: 'X-Hub-Signature' });

  it('the configured header is used', async () => {
    const { res } = await send(t, batchOf('hub-1', { code: 'HUB-1', status: 1 }), {
      signatureHeader: 'X-Hub-Signature',
    });
    expect(res.status).toBe(200);
    expect(res.body).toStrictEqual({ success: true, processed: 1 });
  });

  it('the default X-Signature header is then refused (401), nothing stored', async () => {
    const before = await counts(t);
    const sent = await send(t, batchOf('hub-2', { code: 'HUB-2', status: 1 }));
    expectError(sent.res, 401, 'invalid_signature');
    await expectRefusedUnstored(t, sent, before, 401, 'invalid_signature', 'unauthorized');
  });
});

describe('small body limit (CALLBACK_BODY_LIMIT_BYTES=2048, §5)', () => {
  const t = useTestApp({ CALLBACK_BODY_LIMIT_BYTES: '2048' });

  it('exactly 2048 bytes → 200', async () => {
    const { res } = await send(t, jsonOfSize(batchOf('lim-ok', { code: 'LIM-OK', status: 1 }), 2048));
    expect(res.status).toBe(200);
    expect(res.body).toStrictEqual({ success: true, processed: 1 });
  });

  it('2049 bytes → 413 payload_too_large; signed but not stored', async () => {
    const before = await counts(t);
    const sent = await send(t, jsonOfSize(batchOf('lim-over', { code: 'LIM-OVER', status: 1 }), 2049));
    expectError(sent.res, 413, 'payload_too_large');
    await expectRefusedUnstored(t, sent, before, 413, 'payload_too_large', 'rejected');
  });

  it('the limit applies to the decoded bytes: a small gzip body inflating past it → 413', async () => {
    const json = jsonOfSize(batchOf('lim-gzip', { code: 'LIM-GZIP', status: 1 }), 64 * 1024);
    const gz = gzipSync(Buffer.from(json));
    expect(gz.length).toBeLessThan(2048);
    const before = await counts(t);
    const sent = await send(t, json, { encoding: { name: 'gzip', encode: () => gz } });
    expectError(sent.res, 413, 'payload_too_large');
    await expectRefusedUnstored(t, sent, before, 413, 'payload_too_large', 'rejected');
  });
});

describe('deadline (CALLBACK_DEADLINE_MS=1500, DB_LOCK_TIMEOUT_MS=1000, §5)', () => {
  const t = useTestApp({ CALLBACK_DEADLINE_MS: '1500', DB_LOCK_TIMEOUT_MS: '1000' });
  beforeAll(async () => {
    await deposit(t.app, 'pl', '100.00');
  });

  it('a coupon row locked by another transaction → 503 within the deadline, nothing kept; after release → 200 once', async () => {
    await register(t.app, 'L-1', 'pl', '10.00');
    const body = batch('lock-1', [
      coupon('L-0', { status: 1, realWin: null }),
      coupon('L-1', { realWin: '40.00' }),
    ]);
    const { sent, elapsed } = await whileLocked(
      t.db,
      `SELECT coupon_code FROM coupons WHERE coupon_code = 'L-1' FOR UPDATE`,
      () => sendTimed(t, body),
    );
    expectError(sent.res, 503, 'transient_failure');
    expect(elapsed).toBeLessThan(3000);
    expect(elapsed).toBeGreaterThanOrEqual(900); // it did wait on the lock
    expect(await rowsOfBatch(t.db, 'lock-1', ['L-0', 'L-1'])).toEqual(NOTHING_KEPT);
    expect((await ops(t.app).get('/coupons/L-0')).status).toBe(404);
    expect(await attemptsOfBatch(t, 'lock-1')).toEqual([
      { outcome: 'failed', http_status: 503, error_code: 'transient_failure' },
    ]);
    expect(await balance(t.app, 'pl')).toBe('90.00');

    const retry = await send(t, body);
    expect(retry.res.status).toBe(200);
    expect(retry.res.body).toStrictEqual({ success: true, processed: 2 });
    expect(await operations(t.app, 'L-1')).toEqual(['L-1:0:final_credit=40.00', 'L-1:0:stake_debit=10.00']);
    expect(await balance(t.app, 'pl')).toBe('130.00');
  }, 15_000);

  it('the player account locked by another transaction → 503 within the deadline, nothing kept', async () => {
    await register(t.app, 'L-2', 'pl', '10.00');
    const { sent, elapsed } = await whileLocked(
      t.db,
      `SELECT id FROM accounts WHERE id = 'pl' FOR UPDATE`,
      () => sendTimed(t, batchOf('lock-2', { code: 'L-2', status: 2, realWin: '5.00' })),
    );
    expectError(sent.res, 503, 'transient_failure');
    expect(elapsed).toBeLessThan(3000);
    expect(await rowsOfBatch(t.db, 'lock-2', ['L-2'])).toEqual(NOTHING_KEPT);
    expect(await balance(t.app, 'pl')).toBe('120.00');
    expect((await send(t, batchOf('lock-2', { code: 'L-2', status: 2, realWin: '5.00' }))).res.status).toBe(
      200,
    );
    expect(await balance(t.app, 'pl')).toBe('125.00');
  }, 15_000);

  it('a statement that would outlive the deadline is cancelled → 503 within the deadline, nothing kept', async () => {
    await register(t.app, 'S-1', 'pl', '10.00');
    const remove = await injectTrigger(
      t.db,
      'inject_slow',
      'coupon_snapshots',
      `IF NEW.coupon_code = 'S-1' THEN PERFORM pg_sleep(5); END IF;`,
    );
    let sent!: Sent;
    let elapsed!: number;
    let stillRunning!: number;
    try {
      ({ sent, elapsed } = await sendTimed(
        t,
        batchOf('slow-1', { code: 'S-1', status: 2, realWin: '7.00' }),
      ));
      // The statement was cancelled, not merely abandoned: no receiver session is still busy.
      await sleep(200);
      const busy = await t.db.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity
         WHERE datname = current_database() AND application_name = 'settlement-receiver' AND state <> 'idle'`,
      );
      stillRunning = busy.rows[0].n;
    } finally {
      await remove();
    }
    expect(stillRunning).toBe(0);
    expectError(sent.res, 503, 'transient_failure');
    expect(elapsed).toBeLessThan(3000);
    expect(await rowsOfBatch(t.db, 'slow-1', ['S-1'])).toEqual(NOTHING_KEPT);
    expect(await attemptsOfBatch(t, 'slow-1')).toEqual([
      { outcome: 'failed', http_status: 503, error_code: 'transient_failure' },
    ]);
    expect(
      (await send(t, batchOf('slow-1', { code: 'S-1', status: 2, realWin: '7.00' }))).res.body,
    ).toStrictEqual({ success: true, processed: 1 });
    expect(await operations(t.app, 'S-1')).toEqual(['S-1:0:final_credit=7.00', 'S-1:0:stake_debit=10.00']);
  }, 15_000);
});
