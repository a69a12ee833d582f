import { createConnection, Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import request from 'supertest';
import { deliver, deposit, OPS_KEY, register, sign, useTestApp } from '../support/test-app.js';
import { sleep } from '../support/wait.js';
import { verifyLedger } from './support/receiver.js';

// Hostile callback bodies (CONTRACT §3, §5, §8): wrong types, huge numbers, NaN, negative or
// 3-decimal amounts, deep nesting, bodies over 2 MiB, invalid UTF-8, duplicate keys, prototype
// keys, random mutations of a valid batch. Only 400/401/409/413/415 (or 200 when the mutation
// happens to be a valid batch), never a 500, and no business row for a refused body. A slow
// client cannot hold a transaction open.

const SEED = process.env.FC_SEED ? Number(process.env.FC_SEED) : Date.now() ^ (Math.random() * 0x7fffffff);
const NUM_RUNS = Number(process.env.FC_NUM_RUNS || 200);

/** Business rows (quarantine and delivery attempts are expected for refused bodies, §8). */
const COUNTS_SQL = `
  SELECT (SELECT count(*)::int FROM callback_batches) AS batches,
         (SELECT count(*)::int FROM coupon_snapshots) AS snapshots,
         (SELECT count(*)::int FROM coupons) AS coupons,
         (SELECT count(*)::int FROM bets) AS bets,
         (SELECT count(*)::int FROM financial_operations) AS operations,
         (SELECT count(*)::int FROM ledger_entries) AS entries,
         (SELECT coalesce(sum(balance), 0)::text FROM accounts) AS balances`;

const valid = (batchId: string) => ({
  batchId,
  couponCount: 1,
  coupons: [
    {
      coupon_code: 'H1',
      status: 2,
      realWin: '25.00',
      events: [{ uuid: 'H1-e1', status: 2 }],
    },
  ],
});

describe('hostile callback bodies (CONTRACT §3, §5, §8)', () => {
  // EUR and USD only: a realWin with 3 fraction digits is more than any allowed currency has (issue 17).
  const t = useTestApp({ CURRENCIES: 'EUR,USD' });
  const counts = async (): Promise<Record<string, unknown>> => (await t.db.query(COUNTS_SQL)).rows[0];

  beforeAll(async () => {
    await deposit(t.app, 'p-hostile', '100.00');
    await register(t.app, 'H1', 'p-hostile', '10.00');
  });

  const big = 'x'.repeat(2 * 1024 * 1024 + 1);
  const cases: [string, () => Buffer | string, number, Record<string, string>?][] = [
    ['batchId a number', () => JSON.stringify({ ...valid('x'), batchId: 12 }), 400],
    ['batchId of 65 chars', () => JSON.stringify(valid('b'.repeat(65))), 400],
    ['couponCount a string', () => JSON.stringify({ ...valid('hb-1'), couponCount: '1' }), 400],
    [
      'couponCount 1e309',
      () => JSON.stringify(valid('hb-2')).replace('"couponCount":1', '"couponCount":1e309'),
      400,
    ],
    [
      'coupons an object',
      () => JSON.stringify({ ...valid('hb-3'), coupons: { 0: valid('x').coupons[0] } }),
      400,
    ],
    [
      'status "2" (a string)',
      () => JSON.stringify(valid('hb-4')).replace('"status":2,"realWin"', '"status":"2","realWin"'),
      400,
    ],
    [
      'status 1e20',
      () => JSON.stringify(valid('hb-5')).replace('"status":2,"realWin"', '"status":1e20,"realWin"'),
      400,
    ],
    ['realWin true', () => JSON.stringify(valid('hb-6')).replace('"realWin":"25.00"', '"realWin":true'), 400],
    [
      'realWin 1e400',
      () => JSON.stringify(valid('hb-7')).replace('"realWin":"25.00"', '"realWin":1e400'),
      400,
    ],
    [
      'realWin 99999999999999999999999.00',
      () => JSON.stringify(valid('hb-8')).replace('25.00', '99999999999999999999999.00'),
      400,
    ],
    [
      'realWin NaN (not JSON)',
      () => JSON.stringify(valid('hb-9')).replace('"realWin":"25.00"', '"realWin":NaN'),
      400,
    ],
    ['realWin "NaN"', () => JSON.stringify(valid('hb-10')).replace('25.00', 'NaN'), 400],
    [
      'realWin Infinity',
      () => JSON.stringify(valid('hb-11')).replace('"realWin":"25.00"', '"realWin":Infinity'),
      400,
    ],
    ['realWin "-5.00"', () => JSON.stringify(valid('hb-12')).replace('25.00', '-5.00'), 400],
    [
      'realWin -5 (number)',
      () => JSON.stringify(valid('hb-13')).replace('"realWin":"25.00"', '"realWin":-5'),
      400,
    ],
    ['realWin "1.234" (3 decimals)', () => JSON.stringify(valid('hb-14')).replace('25.00', '1.234'), 400],
    [
      'realWin 1.234 (number)',
      () => JSON.stringify(valid('hb-15')).replace('"realWin":"25.00"', '"realWin":1.234'),
      400,
    ],
    ['realWin "1e3"', () => JSON.stringify(valid('hb-16')).replace('25.00', '1e3'), 400],
    [
      'events a string',
      () => JSON.stringify(valid('hb-17')).replace('[{"uuid":"H1-e1","status":2}]', '"e"'),
      400,
    ],
    ['nesting 100000 deep', () => `{"batchId":"hb-18","x":${'['.repeat(100000)}${']'.repeat(100000)}}`, 400],
    ['2 MiB + 1 byte', () => JSON.stringify({ ...valid('hb-19'), pad: big }), 413],
    [
      '2 MiB + 1 byte decoded from a small gzip body',
      () => gzipSync(JSON.stringify({ ...valid('hb-20'), pad: big })),
      413,
      { 'content-encoding': 'gzip' },
    ],
    [
      'invalid UTF-8 in a string',
      () =>
        Buffer.concat([
          Buffer.from('{"batchId":"hb-21'),
          Buffer.from([0xff, 0xfe]),
          Buffer.from('","couponCount":1,"coupons":[]}'),
        ]),
      400,
    ],
    [
      'invalid UTF-8 (C3 28) in coupon_code of an otherwise valid batch',
      () =>
        Buffer.concat([
          Buffer.from('{"batchId":"hb-22","couponCount":1,"coupons":[{"coupon_code":"H'),
          Buffer.from([0xc3, 0x28]),
          Buffer.from('","status":2,"realWin":"25.00","events":[{"uuid":"H1-e1","status":2}]}]}'),
        ]),
      400,
    ],
    [
      'duplicate batchId keys',
      () =>
        JSON.stringify(valid('hb-23')).replace('{"batchId":"hb-23"', '{"batchId":"hb-23","batchId":"hb-23b"'),
      400,
    ],
    [
      '__proto__ instead of batchId',
      () => JSON.stringify(valid('hb-24')).replace('"batchId":"hb-24"', '"__proto__":{"batchId":"hb-24"}'),
      400,
    ],
    [
      'constructor.prototype instead of coupons',
      () => `{"batchId":"hb-25","couponCount":1,"constructor":{"prototype":{"coupons":[]}}}`,
      400,
    ],
    ['truncated JSON', () => JSON.stringify(valid('hb-26')).slice(0, 40), 400],
    ['an empty body', () => '', 400],
    ['a top-level array', () => JSON.stringify([valid('hb-27')]), 400],
    ['text/plain', () => JSON.stringify(valid('hb-28')), 415, { 'content-type': 'text/plain' }],
    ['Content-Encoding br', () => JSON.stringify(valid('hb-29')), 415, { 'content-encoding': 'br' }],
    ['gzip header on plain bytes', () => JSON.stringify(valid('hb-30')), 400, { 'content-encoding': 'gzip' }],
  ];

  it.each(cases.map(([name, body, status, headers]) => ({ name, body, status, headers: headers ?? {} })))(
    '$name → $status, no business row written',
    async ({ body, status, headers }) => {
      const before = await counts();
      const res = await deliver(t.app, body(), { headers });
      expect(res.status).toBe(status);
      expect(res.body.success).toBe(false);
      expect(await counts()).toEqual(before);
      expect(({} as Record<string, unknown>).batchId).toBeUndefined();
    },
  );

  // Found by the fuzzer below (seed 1353419585): class-transformer took a `constructor` key for
  // the class of the value (TypeError) → 503 on the callback, 500 on the partner API.
  it.each([
    [
      'batchId {"constructor":{"prototype":{}}}',
      '{"batchId":{"constructor":{"prototype":{}}},"couponCount":1,"coupons":[]}',
    ],
    ['batchId {"constructor":1}', '{"batchId":{"constructor":1},"couponCount":1,"coupons":[]}'],
    ['coupons [{"constructor":1}]', '{"batchId":"hb-c3","couponCount":1,"coupons":[{"constructor":1}]}'],
    [
      'realWin {"constructor":"x"}',
      JSON.stringify(valid('hb-c5')).replace('"realWin":"25.00"', '"realWin":{"constructor":"x"}'),
    ],
  ])('%s → 400 validation_failed, not 503', async (_name, body) => {
    const before = await counts();
    const res = await deliver(t.app, body);
    expect({ status: res.status, code: res.body.error?.code }).toEqual({
      status: 400,
      code: 'validation_failed',
    });
    expect(await counts()).toEqual(before);
  });

  it('an unknown `constructor` field in a valid batch is accepted and kept in the stored payload', async () => {
    const body = JSON.stringify(valid('hb-c4')).replace(
      '"coupon_code":"H1"',
      '"constructor":{"prototype":{"x":1}},"coupon_code":"H1"',
    );
    expect((await deliver(t.app, body)).status).toBe(200);
    const { rows } = await t.db.query(
      `SELECT payload->'constructor' AS c FROM coupon_snapshots WHERE batch_id = 'hb-c4'`,
    );
    expect(rows).toEqual([{ c: { prototype: { x: 1 } } }]);
  });

  it('partner API: a `constructor` object as a field value → 400, not 500', async () => {
    const res = await request(t.app.getHttpServer())
      .post('/coupons')
      .set('authorization', `Bearer ${OPS_KEY}`)
      .set('content-type', 'application/json')
      .send('{"coupon_code":{"constructor":1},"accountId":"p-hostile","stake":"1.00","currency":"EUR"}');
    expect(res.status).toBe(400);
  });

  it('a body signed before it was mutated → 401, not stored', async () => {
    const body = JSON.stringify(valid('hb-sig'));
    const res = await deliver(t.app, body.replace('25.00', '2500.00'), { signature: sign(body) });
    expect(res.status).toBe(401);
    const { rows } = await t.db.query(
      `SELECT count(*)::int AS n FROM quarantined_bodies WHERE batch_id = 'hb-sig'`,
    );
    expect(rows[0].n).toBe(0);
  });

  it(`${NUM_RUNS} random mutations of a valid batch: 200/400/401/409/413/415 only; refused ones write nothing (seed ${SEED})`, async () => {
    const hostileValue = fc.oneof(
      fc.constantFrom(
        'null',
        'true',
        '[]',
        '{}',
        '""',
        '"x"',
        '-1',
        '0',
        '1e400',
        '-1e400',
        '1.5e-400',
        'NaN',
        'Infinity',
        '"-0.01"',
        '"0.001"',
        '"1,00"',
        '" 1.00"',
        '"1.00 "',
        '"0x10"',
        '"\\u0000"',
        '"\\ud800"',
        '12345678901234567890123456789',
        '{"__proto__":{"x":1}}',
        '{"constructor":{"prototype":{}}}',
        '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]',
        `"${'9'.repeat(70)}"`,
      ),
      fc.integer().map(String),
      fc.double().map((d) => (Number.isFinite(d) ? JSON.stringify(d) : String(d))),
      fc.string({ maxLength: 40 }).map((s) => JSON.stringify(s)),
    );
    const fieldRe = /"(batchId|couponCount|coupons|coupon_code|status|realWin|events|uuid)":/g;
    let refused = 0;
    let accepted = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.nat(10_000),
        fc.nat(20),
        hostileValue,
        fc.constantFrom('replace', 'duplicate', 'flip', 'truncate', 'proto', 'resign-original'),
        fc.nat(255),
        async (n, which, value, mode, byte) => {
          const original = JSON.stringify(valid(`fz-${n}`));
          let body: Buffer;
          const fields = [...original.matchAll(fieldRe)];
          const f = fields[which % fields.length];
          const at = (f.index ?? 0) + f[0].length;
          // End of the field's value: the next ',"' or '}' or ']' at the same level is good enough
          // for a mutation (a broken result is a valid test too).
          const end = (() => {
            let depth = 0;
            for (let i = at; i < original.length; i++) {
              const c = original[i];
              if (c === '[' || c === '{') depth++;
              else if (c === ']' || c === '}') {
                if (depth === 0) return i;
                depth--;
              } else if (c === ',' && depth === 0) return i;
            }
            return original.length;
          })();
          switch (mode) {
            case 'replace':
              body = Buffer.from(original.slice(0, at) + value + original.slice(end));
              break;
            case 'duplicate':
              body = Buffer.from(original.slice(0, end) + `,${f[0]}${value}` + original.slice(end));
              break;
            case 'proto':
              body = Buffer.from(
                original.slice(0, f.index) + `"__proto__":{${f[0]}${value}},` + original.slice(f.index),
              );
              break;
            case 'truncate':
              body = Buffer.from(original.slice(0, n % original.length));
              break;
            default: {
              body = Buffer.from(original);
              body[n % body.length] = byte;
            }
          }
          const before = await counts();
          const res =
            mode === 'resign-original'
              ? await deliver(t.app, body.toString('latin1').replace('25.00', '26.00'), {
                  signature: sign(original),
                })
              : await deliver(t.app, body);
          expect({
            body: body.toString('latin1'),
            status: [200, 400, 401, 409, 413, 415].includes(res.status),
          }).toEqual({
            body: body.toString('latin1'),
            status: true,
          });
          if (res.status === 200) {
            accepted++;
          } else {
            refused++;
            expect(await counts()).toEqual(before);
          }
        },
      ),
      { seed: SEED, numRuns: NUM_RUNS },
    );
    process.stdout.write(`hostile mutations: ${JSON.stringify({ seed: SEED, refused, accepted })}\n`);
    expect(refused).toBeGreaterThan(NUM_RUNS / 2);
    // What was accepted was a valid batch: the ledger is still consistent.
    expect((await verifyLedger(t.config.database.databaseUrl as string)).violations).toEqual([]);
  }, 600_000);

  /** Receiver transactions open right now (the pool's idle connections have none). */
  async function openTransactions(): Promise<number> {
    const { rows } = await t.db.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity
       WHERE datname = current_database() AND application_name = 'settlement-receiver' AND xact_start IS NOT NULL`,
    );
    return rows[0].n as number;
  }

  /** Opens a raw TCP connection to the app, writes `chunks`, then stalls; resolves when the server closes it. */
  function stallingClient(chunks: string[]): {
    socket: Socket;
    closed: Promise<{ afterMs: number; response: string }>;
  } {
    const { port } = new URL(t.url);
    const socket = createConnection({ host: '127.0.0.1', port: Number(port) });
    const started = Date.now();
    let response = '';
    socket.on('data', (d) => (response += d.toString()));
    socket.on('error', () => undefined);
    socket.on('connect', () => chunks.forEach((c) => socket.write(c)));
    const closed = new Promise<{ afterMs: number; response: string }>((done) =>
      socket.once('close', () => done({ afterMs: Date.now() - started, response })),
    );
    return { socket, closed };
  }

  it('a slow client (headers and half the body, then silence) holds no transaction and is cut off by requestTimeout', async () => {
    const body = JSON.stringify(valid('slow-1'));
    const head =
      `POST /sportapi/callback HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
      `X-Signature: ${sign(body)}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`;
    const before = await counts();
    const client = stallingClient([head, body.slice(0, 40)]);
    for (let i = 0; i < 10; i++) {
      await sleep(500);
      expect(await openTransactions()).toBe(0);
    }
    // Meanwhile the receiver serves others.
    const other = await deliver(t.app, valid('slow-2'));
    expect(other.status).toBe(200);
    const { afterMs, response } = await client.closed;
    const server = t.app.getHttpServer() as { requestTimeout: number };
    expect(server.requestTimeout).toBe(10_000);
    expect(afterMs).toBeLessThan(server.requestTimeout + 5_000);
    expect(response === '' || response.startsWith('HTTP/1.1 408')).toBe(true);
    const after = await counts();
    expect(after.batches).toBe((before.batches as number) + 1); // slow-2 only
    const { rows } = await t.db.query(
      `SELECT count(*)::int AS n FROM callback_batches WHERE batch_id = 'slow-1'`,
    );
    expect(rows[0].n).toBe(0);
  }, 60_000);

  it('a client that stalls inside the headers is cut off by headersTimeout', async () => {
    const client = stallingClient(['POST /sportapi/callback HTTP/1.1\r\nHost: x\r\nContent-Ty']);
    await sleep(1000);
    expect(await openTransactions()).toBe(0);
    const { afterMs } = await client.closed;
    expect(afterMs).toBeLessThan(5_000 + 5_000);
  }, 60_000);
});
