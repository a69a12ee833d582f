import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { runCheck } from '../../sim/check.js';
import { buildSequence, generate, Manifest } from '../../sim/generate.js';
import { CliIo, runCli } from '../../sim/main.js';
import { canonicalAmount } from '../../sim/money.js';
import { PartnerApi, registerManifest } from '../../sim/partner-api.js';
import { deliverBatch, sendBatches } from '../../sim/send.js';
import { RunningServe, startServe } from '../../sim/serve.js';
import { createTestApp, OPS_KEY, SECRET, sign, TestContext, useTestApp } from '../support/test-app.js';

// The SportAPI simulator (sim/, `npm run sportapi`) end to end against the real receiver:
// generate (seeded, byte-identical), send (CONTRACT §2 delivery semantics: retries, the
// schedule, contract violations), serve (the §9 coupon read method and the lost-200 proxy) and
// check (the built-in conformance run). The CLI's functions are called in-process.

/** The sequence most tests use: 30 coupons over 8 rounds, seed 5 (it holds every feature). */
const SEQUENCE = { seed: 5, coupons: 30, batches: 8 } as const;
const SEQUENCE_STATS = {
  coupons: 30,
  singles: 17,
  accumulators: 13,
  accounts: 8,
  files: 12,
  stateBatches: 8,
  redeliveries: 3,
  sameStateBatches: 1,
  snapshots: 83,
  finalStatus: { '1': 4, '2': 8, '3': 2, '4': 11, '15': 5 },
  recalculationsWithRealWin: 7,
  recalculationsWithoutRealWin: 5,
};
const FILES = Array.from({ length: 12 }, (_, i) => `${String(i + 1).padStart(4, '0')}.json`);

/** A throw-away folder, removed after all tests. */
const folders: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'sportapi-sim-'));
  folders.push(dir);
  return dir;
}

/** CLI output captured. */
function captureIo(extra: Partial<CliIo> = {}): CliIo & { lines: string[]; errors: string[] } {
  const lines: string[] = [];
  const errors: string[] = [];
  return { lines, errors, out: (l) => lines.push(l), err: (l) => errors.push(l), ...extra };
}

interface Stub {
  url: string;
  requests: { url: string; headers: IncomingHttpHeaders; body: Buffer }[];
  close: () => Promise<void>;
}

/** A tiny node:http server; `handle` gets each request with its body and 1-based number. */
async function stub(
  handle: (req: IncomingMessage, res: ServerResponse, body: Buffer, n: number) => void | Promise<void>,
): Promise<Stub> {
  const requests: Stub['requests'] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    requests.push({ url: req.url ?? '', headers: req.headers, body });
    await handle(req, res, body, requests.length);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function answer(res: ServerResponse, status: number, body: unknown = undefined): void {
  const text = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(text);
}

/** Forwards a request to the receiver and relays its answer. */
async function forward(t: TestContext, req: IncomingMessage, res: ServerResponse, body: Buffer) {
  const upstream = await fetch(`${t.url}${req.url}`, {
    method: req.method,
    headers: {
      'content-type': String(req.headers['content-type']),
      'x-signature': String(req.headers['x-signature']),
    },
    body,
  });
  res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'text/plain' });
  res.end(Buffer.from(await upstream.arrayBuffer()));
}

/** Every coupon and account of a manifest as the receiver's partner API shows it. */
async function receiverState(api: PartnerApi, manifest: Manifest) {
  const coupons = [];
  for (const c of manifest.coupons) {
    const view = await api.coupon(c.coupon_code);
    if (!view) throw new Error(`coupon ${c.coupon_code} unknown to the receiver`);
    coupons.push({
      coupon_code: view.coupon_code,
      accountId: view.accountId,
      status: view.status,
      realWin: view.realWin,
      settlementGeneration: view.settlementGeneration,
      needsReview: view.needsReview,
      events: view.events
        .map((e) => ({ uuid: e.uuid, status: e.status }))
        .sort((a, b) => (a.uuid < b.uuid ? -1 : 1)),
      operations: view.operations.map((o) => `${o.key}=${o.amount}`).sort(),
    });
  }
  const balances: Record<string, string> = {};
  for (const a of manifest.accounts) balances[a.id] = await api.balance(a.id);
  return { coupons, balances };
}

/** What the manifest says the receiver must show. */
function expectedState(manifest: Manifest) {
  return {
    coupons: manifest.coupons.map((c) => ({
      coupon_code: c.coupon_code,
      accountId: c.accountId,
      ...c.expected,
    })),
    balances: Object.fromEntries(manifest.accounts.map((a) => [a.id, a.expectedBalance])),
  };
}

/** Delivery attempts recorded by the receiver for batch ids starting with `prefix`, by outcome. */
async function attemptOutcomes(t: TestContext, prefix: string): Promise<Record<string, number>> {
  const { rows } = await t.db.query(
    `SELECT outcome, count(*)::int AS n FROM delivery_attempts WHERE batch_id LIKE $1 GROUP BY outcome ORDER BY outcome`,
    [`${prefix}-%`],
  );
  return Object.fromEntries(rows.map((r: { outcome: string; n: number }) => [r.outcome, r.n]));
}

/** A one-coupon batch file (pretty-printed with a trailing newline, to show exact-byte signing). */
async function oneCouponFile(
  batchId: string,
  code: string,
  realWin: string,
): Promise<{ file: string; bytes: Buffer }> {
  const body = {
    batchId,
    couponCount: 1,
    coupons: [{ coupon_code: code, status: 2, realWin, events: [{ uuid: `${code}-e1`, status: 2 }] }],
  };
  const file = join(await tempDir(), `${batchId}.json`);
  const bytes = Buffer.from(`${JSON.stringify(body, null, 2)}\n`);
  await writeFile(file, bytes);
  return { file, bytes };
}

describe('SportAPI simulator (sim/, CONTRACT §2, §9)', () => {
  const t = useTestApp();
  let api: PartnerApi;
  beforeAll(() => {
    api = new PartnerApi(t.url, OPS_KEY);
  });
  afterAll(async () => {
    await Promise.all(folders.map((dir) => rm(dir, { recursive: true, force: true })));
  });

  describe('generate', () => {
    it('writes byte-identical files for the same seed (CLI and function alike), other bytes for another seed', async () => {
      const viaCli = await tempDir();
      const io = captureIo();
      const code = await runCli(
        ['generate', '--out', viaCli, '--seed', '5', '--coupons', '30', '--batches', '8'],
        io,
      );
      expect(code).toBe(0);
      expect(io.lines).toEqual([
        `wrote ${viaCli}: 12 files (8 state batches, 3 redeliveries, 1 same-state batches), 30 coupons ` +
          '(17 singles, 13 accumulators) on 8 accounts, 83 snapshots, 12 recalculations (7 with realWin), ' +
          'final statuses 1:4 2:8 3:2 4:11 15:5',
      ]);
      const viaFunction = await tempDir();
      const { manifest } = await generate({ out: viaFunction, ...SEQUENCE });
      expect(manifest.stats).toEqual(SEQUENCE_STATS);
      const names = (await readdir(viaCli)).sort();
      expect(names).toEqual([...FILES, 'coupons.json']);
      expect((await readdir(viaFunction)).sort()).toEqual(names);
      for (const name of names) {
        expect((await readFile(join(viaFunction, name))).equals(await readFile(join(viaCli, name)))).toBe(
          true,
        );
      }

      const other = buildSequence({ ...SEQUENCE, seed: 6 });
      expect(other.files[0].bytes).not.toBe(await readFile(join(viaCli, '0001.json'), 'utf8'));
      expect(other.manifest.coupons[0].coupon_code).not.toBe(manifest.coupons[0].coupon_code);

      // A folder holding a sequence is not mixed with another one.
      await expect(generate({ out: viaCli, ...SEQUENCE })).rejects.toThrow('already holds .json files');
      expect((await generate({ out: viaCli, ...SEQUENCE, force: true })).manifest.stats).toEqual(
        SEQUENCE_STATS,
      );
    });

    it('writes valid batches: redeliveries repeat the bytes, same-state batches repeat the state under a new batchId', async () => {
      const dir = await tempDir();
      const { manifest } = await generate({ out: dir, ...SEQUENCE });
      const bodies = new Map<
        string,
        { batchId: string; couponCount: number; coupons: { coupon_code: string }[] }
      >();
      for (const name of FILES) bodies.set(name, JSON.parse(await readFile(join(dir, name), 'utf8')));
      for (const entry of manifest.batches) {
        const body = bodies.get(entry.file)!;
        expect(body.batchId).toBe(entry.batchId);
        expect(body.couponCount).toBe(body.coupons.length);
        expect(body.couponCount).toBe(entry.couponCount);
        expect(new Set(body.coupons.map((c) => c.coupon_code)).size).toBe(body.coupons.length);
      }
      expect(manifest.batches.map((b) => `${b.file}:${b.kind}${b.of ? `:${b.of}` : ''}`)).toEqual([
        '0001.json:state',
        '0002.json:state',
        '0003.json:state',
        '0004.json:state',
        '0005.json:same-state:0004.json',
        '0006.json:redelivery:0001.json',
        '0007.json:state',
        '0008.json:state',
        '0009.json:state',
        '0010.json:state',
        '0011.json:redelivery:0009.json',
        '0012.json:redelivery:0010.json',
      ]);
      for (const entry of manifest.batches.filter((b) => b.kind === 'redelivery')) {
        expect((await readFile(join(dir, entry.file))).equals(await readFile(join(dir, entry.of!)))).toBe(
          true,
        );
      }
      const same = bodies.get('0005.json')!;
      const original = bodies.get('0004.json')!;
      expect(same.batchId).not.toBe(original.batchId);
      expect(same.coupons).toEqual(original.coupons);
      // Every status the contract names occurs (1, 2, 3, 4, 15 with and without realWin).
      const snapshots = [...bodies.values()].flatMap(
        (b) => b.coupons as unknown as { status: number; realWin: string | null }[],
      );
      expect([...new Set(snapshots.map((s) => s.status))].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 15]);
      expect(snapshots.some((s) => s.status === 15 && s.realWin === null)).toBe(true);
      expect(snapshots.some((s) => s.status === 15 && s.realWin !== null)).toBe(true);
      expect(snapshots.filter((s) => s.status === 4).every((s) => s.realWin === '0')).toBe(true);
    });
  });

  describe('send', () => {
    it('delivers a generated sequence; the receiver converges to the manifest exactly', async () => {
      const dir = await tempDir();
      const { manifest } = await generate({ out: dir, ...SEQUENCE });
      await registerManifest(manifest, api);
      const lines: string[] = [];
      const report = await sendBatches(dir, { url: t.url, secret: SECRET, log: (l) => lines.push(l) });
      expect({
        ok: report.ok,
        delivered: report.delivered,
        attempts: report.attempts,
        violations: report.contractViolations,
        rejected: report.rejected,
        gaveUp: report.gaveUp,
      }).toEqual({ ok: true, delivered: 12, attempts: 12, violations: 0, rejected: 0, gaveUp: 0 });
      expect(report.batches.map((b) => `${b.outcome}:${b.finalStatus}:${b.duplicate}`)).toEqual(
        manifest.batches.map((b) => `delivered:200:${b.kind === 'redelivery'}`),
      );
      expect(report.batches.flatMap((b) => b.notes)).toEqual([]);
      expect(lines).toHaveLength(13);
      expect(lines[0]).toMatch(
        /^0001\.json {2}batchId=s5-b000001 {2}attempts=1 {2}status=200 {2}delivered {2}latency=\d+ms$/,
      );
      expect(lines[5]).toMatch(
        /^0006\.json {2}batchId=s5-b000001 {2}attempts=1 {2}status=200 {2}delivered\(duplicate\) /,
      );
      expect(lines[12]).toMatch(
        /^summary: 12 batches, 12 delivered, 0 not delivered \(0 contract violations, 0 rejected, 0 given up\), 12 attempts, \d+\.\d s$/,
      );

      expect(await receiverState(api, manifest)).toEqual(expectedState(manifest));
      expect(await attemptOutcomes(t, 's5')).toEqual({ duplicate: 3, processed: 9 });
      // A few exact figures of this seed, so a silent change of the generator is seen here.
      expect(expectedState(manifest).balances).toEqual({
        's5-p001': '90.00',
        's5-p002': '150.69',
        's5-p003': '64.00',
        's5-p004': '536.28',
        's5-p005': '434.02',
        's5-p006': '124.62',
        's5-p007': '717.69',
        's5-p008': '10.00',
      });
    }, 60_000);

    it('through the CLI: a larger sequence (200 coupons, batches of at most 50) registered with --register converges', async () => {
      const dir = await tempDir();
      const io = captureIo();
      const args = [
        '--seed',
        '11',
        '--coupons',
        '200',
        '--batches',
        '10',
        '--max-batch-size',
        '50',
        '--prefix',
        'big11',
      ];
      expect(await runCli(['generate', '--out', dir, ...args], io)).toBe(0);
      const manifest = JSON.parse(await readFile(join(dir, 'coupons.json'), 'utf8')) as Manifest;
      expect(manifest.stats).toEqual({
        coupons: 200,
        singles: 74,
        accumulators: 126,
        accounts: 50,
        files: 31,
        stateBatches: 20,
        redeliveries: 8,
        sameStateBatches: 3,
        snapshots: 604,
        finalStatus: { '1': 20, '2': 58, '3': 10, '4': 96, '15': 16 },
        recalculationsWithRealWin: 36,
        recalculationsWithoutRealWin: 21,
      });
      expect(Math.max(...manifest.batches.map((b) => b.couponCount))).toBe(50);
      expect(manifest.coupons.filter((c) => c.expected.settlementGeneration === 2)).toHaveLength(12);

      const sent = captureIo();
      const code = await runCli(
        [
          'send',
          dir,
          '--url',
          t.url,
          '--secret',
          SECRET,
          '--register',
          join(dir, 'coupons.json'),
          '--ops-key',
          OPS_KEY,
        ],
        sent,
      );
      expect(code).toBe(0);
      expect(sent.lines).toHaveLength(1 + 31 + 1);
      expect(sent.lines[0]).toBe('registered 200 coupons on 50 accounts');
      expect(sent.lines[32]).toMatch(
        /^summary: 31 batches, 31 delivered, 0 not delivered \(0 contract violations, 0 rejected, 0 given up\), 31 attempts, /,
      );
      expect(await receiverState(api, manifest)).toEqual(expectedState(manifest));
      expect(await attemptOutcomes(t, 'big11')).toEqual({ duplicate: 8, processed: 23 });
    }, 120_000);

    it('retries 503 on the compressed schedule (1 min → 60 ms, 5 min → 300 ms) and counts the attempts', async () => {
      await api.deposit('sim-r1', '20.00', 'EUR', 'sim-r1-deposit');
      await api.registerCoupon({
        coupon_code: 'SIMR1',
        accountId: 'sim-r1',
        stake: '10.00',
        currency: 'EUR',
      });
      const { file, bytes } = await oneCouponFile('sim-retry-1', 'SIMR1', '31.00');
      const server = await stub(async (req, res, body, n) => {
        if (n <= 2) answer(res, 503, { success: false, error: { code: 'transient_failure' } });
        else await forward(t, req, res, body);
      });
      const waits: number[] = [];
      const notes: string[] = [];
      try {
        const report = await sendBatches(file, {
          url: server.url,
          secret: SECRET,
          timeScale: 0.001,
          warn: (l) => notes.push(l),
          sleep: async (ms) => {
            waits.push(ms);
            await delay(ms);
          },
        });
        expect(waits).toEqual([60, 300]);
        expect(report.ok).toBe(true);
        expect(report.attempts).toBe(3);
        const [batch] = report.batches;
        expect(batch.attempts.map((a) => a.status)).toEqual([503, 503, 200]);
        expect(batch.attempts.map((a) => a.attempt)).toEqual([1, 2, 3]);
        expect({ outcome: batch.outcome, batchId: batch.batchId, duplicate: batch.duplicate }).toEqual({
          outcome: 'delivered',
          batchId: 'sim-retry-1',
          duplicate: false,
        });
        expect(notes).toEqual([
          'sim-retry-1.json sim-retry-1: attempt 1 got 503; attempt 2/5 in 60 ms',
          'sim-retry-1.json sim-retry-1: attempt 2 got 503; attempt 3/5 in 300 ms',
        ]);
        // Every attempt carried the exact file bytes (a trailing newline too) and their signature.
        expect(server.requests).toHaveLength(3);
        for (const r of server.requests) {
          expect(r.url).toBe('/sportapi/callback');
          expect(r.body.equals(bytes)).toBe(true);
          expect(r.headers['x-signature']).toBe(sign(bytes));
          expect(r.headers['content-type']).toBe('application/json');
        }
        expect(await api.balance('sim-r1')).toBe('41.00');
      } finally {
        await server.close();
      }
    });

    it('gives up after 5 attempts (waits 1, 5, 15, 60 min scaled) and exits non-zero; timeouts and dropped connections are retried', async () => {
      const { file } = await oneCouponFile('sim-giveup-1', 'SIMG1', '5.00');
      const always503 = await stub((_req, res) => answer(res, 503));
      const waits: number[] = [];
      try {
        const result = await deliverBatch(await readFile(file), {
          url: always503.url,
          secret: SECRET,
          timeScale: 0.0001,
          sleep: async (ms) => {
            waits.push(ms);
          },
        });
        expect(waits).toEqual([6, 30, 90, 360]);
        expect({
          outcome: result.outcome,
          attempts: result.attempts.length,
          status: result.finalStatus,
        }).toEqual({
          outcome: 'gave_up',
          attempts: 5,
          status: 503,
        });
        const io = captureIo();
        expect(
          await runCli(
            ['send', file, '--url', always503.url, '--secret', SECRET, '--time-scale', '0.0001'],
            io,
          ),
        ).toBe(1);
        expect(io.lines).toHaveLength(2);
        expect(io.lines[0]).toMatch(
          /^sim-giveup-1\.json {2}batchId=sim-giveup-1 {2}attempts=5 {2}status=503 {2}gave_up {2}latency=\d+ms {2}history=503,503,503,503,503$/,
        );
        expect(io.lines[1]).toMatch(
          /^summary: 1 batches, 0 delivered, 1 not delivered \(0 contract violations, 0 rejected, 1 given up\), 5 attempts/,
        );
        expect(io.errors).toHaveLength(4);
        expect(always503.requests).toHaveLength(10);
      } finally {
        await always503.close();
      }

      // Attempt 1 gets no answer within --timeout-ms, attempt 2 a dropped connection, attempt 3 a 200.
      const flaky = await stub((req, res, _body, n) => {
        if (n === 1) return; // never answered
        if (n === 2) req.socket.destroy();
        else answer(res, 200, { success: true, processed: 1 });
      });
      try {
        const result = await deliverBatch(await readFile(file), {
          url: flaky.url,
          secret: SECRET,
          timeoutMs: 300,
          timeScale: 0,
        });
        expect(result.attempts.map((a) => a.status ?? a.error)).toEqual(['timeout', 'UND_ERR_SOCKET', 200]);
        expect(result.attempts[0].latencyMs).toBeGreaterThanOrEqual(290);
        expect(result.outcome).toBe('delivered');
      } finally {
        await flaky.close();
      }
    });

    it.each([
      [
        201,
        { success: true, processed: 1 },
        '201 is not 200 (CONTRACT §2, §5: success is HTTP 200 only; not retried)',
      ],
      [
        202,
        { success: true, processed: 1 },
        '202 is not 200 (CONTRACT §2, §5: success is HTTP 200 only; not retried)',
      ],
      [204, undefined, '204 is not 200 (CONTRACT §2, §5: success is HTTP 200 only; not retried)'],
      [
        200,
        { success: false },
        '200 with "success": false (CONTRACT §5: never; the sender treats it as final)',
      ],
    ])('reports %i %j as a contract violation and does not retry it', async (status, body, note) => {
      const { file } = await oneCouponFile(`sim-violation-${status}`, 'SIMV1', '5.00');
      const server = await stub((_req, res) => answer(res, status, body));
      try {
        const io = captureIo();
        const code = await runCli(
          ['send', file, '--url', server.url, '--secret', SECRET, '--time-scale', '0'],
          io,
        );
        expect(code).toBe(1);
        expect(server.requests).toHaveLength(1);
        expect(io.errors).toEqual([]);
        expect(io.lines[0]).toMatch(
          new RegExp(`attempts=1 {2}status=${status} {2}contract_violation {2}latency=\\d+ms {2}note: `),
        );
        expect(io.lines[0].endsWith(`note: ${note}`)).toBe(true);
        expect(io.lines[1]).toMatch(
          /^summary: 1 batches, 0 delivered, 1 not delivered \(1 contract violations, 0 rejected, 0 given up\), 1 attempts/,
        );
      } finally {
        await server.close();
      }
    });

    it('treats other 4xx as final without retry, and a 200 with an empty body as delivered with a note', async () => {
      const { file } = await oneCouponFile('sim-final-1', 'SIMF1', '5.00');
      const server = await stub((_req, res, _body, n) => (n === 1 ? answer(res, 409) : answer(res, 200)));
      try {
        const rejected = await sendBatches(file, { url: server.url, secret: SECRET, timeScale: 0 });
        expect(rejected.batches.map((b) => [b.outcome, b.attempts.length, b.finalStatus])).toEqual([
          ['rejected', 1, 409],
        ]);
        expect(rejected.ok).toBe(false);
        const empty = await sendBatches(file, { url: server.url, secret: SECRET, timeScale: 0 });
        expect(empty.batches.map((b) => [b.outcome, b.attempts.length, b.notes])).toEqual([
          ['delivered', 1, ['200 without "success": true']],
        ]);
        expect(empty.ok).toBe(true);
      } finally {
        await server.close();
      }
    });

    it('refuses a usage error with exit code 2', async () => {
      const io = captureIo();
      expect(await runCli(['send', 'x.json', '--secret', SECRET], io)).toBe(2);
      expect(io.errors[0]).toBe('sportapi send: --url is required');
      expect(await runCli(['nope'], captureIo())).toBe(2);
      expect(await runCli(['generate', '--out', 'x', '--seed', '-1'], captureIo())).toBe(2);
      expect(await runCli(['send', '--bogus'], captureIo())).toBe(2);
    });
  });

  describe('serve', () => {
    it('answers GET /coupons/{code} with the latest state (redeliveries skipped, coupons.json ignored), 404 otherwise', async () => {
      const dir = await tempDir();
      const pendingA = {
        coupon_code: '000000000272',
        status: 1,
        realWin: null,
        events: [{ uuid: 'e1', status: 0 }],
      };
      const pendingB = {
        coupon_code: '000000000273',
        status: 1,
        realWin: null,
        events: [{ uuid: 'e2', status: 0 }],
      };
      const winA = {
        coupon_code: '000000000272',
        status: 2,
        realWin: '185.50',
        events: [{ uuid: 'e1', status: 2 }],
      };
      const b1 = JSON.stringify({ batchId: 'b-1', couponCount: 2, coupons: [pendingA, pendingB] });
      await writeFile(join(dir, '0001.json'), b1);
      await writeFile(
        join(dir, '0002.json'),
        JSON.stringify({ batchId: 'b-2', couponCount: 1, coupons: [winA] }),
      );
      await writeFile(join(dir, '0003.json'), b1);
      await writeFile(join(dir, 'coupons.json'), JSON.stringify({ coupons: [{ coupon_code: 'ghost' }] }));

      let stop!: () => void;
      let server!: RunningServe;
      const io = captureIo({
        stopSignal: () => new Promise<void>((resolve) => (stop = resolve)),
        onServe: (s) => (server = s),
      });
      const running = runCli(['serve', '--port', '0', '--data', dir, '--api-key', 'read-key'], io);
      while (!server) await delay(5);
      try {
        expect(io.lines[0]).toBe(
          `sportapi stand-in listening on ${server.url}: 2 coupons readable at GET /coupons/{coupon_code}`,
        );
        const get = async (path: string, key: string | null = 'read-key') => {
          const res = await fetch(`${server.url}${path}`, {
            headers: key ? { authorization: `Bearer ${key}` } : {},
          });
          return { status: res.status, body: await res.json() };
        };
        expect(await get('/coupons/000000000272')).toEqual({ status: 200, body: winA });
        expect(await get('/coupons/000000000273')).toEqual({ status: 200, body: pendingB });
        expect(await get('/coupons/ghost')).toEqual({ status: 404, body: { error: 'coupon_not_found' } });
        expect(await get('/coupons/000000000272', null)).toEqual({
          status: 401,
          body: { error: 'unauthorized' },
        });
        expect(await get('/other')).toEqual({ status: 404, body: { error: 'not_found' } });
        expect(server.stats).toEqual({ reads: 3, forwarded: 0, dropped: 0, upstreamErrors: 0 });
      } finally {
        stop();
        expect(await running).toBe(0);
      }
      expect(io.lines[io.lines.length - 1]).toBe(
        'stopped: {"reads":3,"forwarded":0,"dropped":0,"upstreamErrors":0}',
      );
    });

    it('serves every generated coupon in its expected final state', async () => {
      const dir = await tempDir();
      const { manifest } = await generate({ out: dir, ...SEQUENCE });
      const server = await startServe({ data: dir });
      try {
        expect(server.coupons).toBe(30);
        const served = [];
        for (const c of manifest.coupons) {
          const body = (await (await fetch(`${server.url}/coupons/${c.coupon_code}`)).json()) as {
            coupon_code: string;
            status: number;
            realWin: string | null;
            events: { uuid: string; status: number }[];
          };
          served.push({
            coupon_code: body.coupon_code,
            status: body.status,
            realWin: canonicalAmount(body.realWin),
            events: body.events
              .map((e) => ({ uuid: e.uuid, status: e.status }))
              .sort((a, b) => (a.uuid < b.uuid ? -1 : 1)),
          });
        }
        expect(served).toEqual(
          manifest.coupons.map((c) => ({
            coupon_code: c.coupon_code,
            status: c.expected.status,
            realWin: c.expected.realWin,
            events: c.expected.events,
          })),
        );
      } finally {
        await server.close();
      }
    });

    it('as a proxy, drops answers after the receiver committed: the redeliveries are duplicates, nothing is paid twice', async () => {
      const dir = await tempDir();
      const { manifest } = await generate({ out: dir, ...SEQUENCE, prefix: 'lost5' });
      await registerManifest(manifest, api);
      const proxy = await startServe({ proxyTo: t.url, dropAfterResponse: 0.3, seed: 3 });
      try {
        const report = await sendBatches(dir, { url: proxy.url, secret: SECRET, timeScale: 0 });
        expect(proxy.stats).toEqual({ reads: 0, forwarded: 19, dropped: 7, upstreamErrors: 0 });
        expect({ ok: report.ok, delivered: report.delivered, attempts: report.attempts }).toEqual({
          ok: true,
          delivered: 12,
          attempts: 19,
        });
        expect(report.batches.map((b) => b.attempts.map((a) => a.status ?? a.error).join(','))).toEqual([
          'UND_ERR_SOCKET,UND_ERR_SOCKET,200',
          'UND_ERR_SOCKET,200',
          '200',
          '200',
          '200',
          '200',
          '200',
          'UND_ERR_SOCKET,UND_ERR_SOCKET,200',
          '200',
          '200',
          'UND_ERR_SOCKET,200',
          'UND_ERR_SOCKET,200',
        ]);
        // Each batch answered after a lost 200 was answered as a duplicate.
        for (const b of report.batches) if (b.attempts.length > 1) expect(b.duplicate).toBe(true);
        expect(await attemptOutcomes(t, 'lost5')).toEqual({ duplicate: 3 + 7, processed: 9 });
        expect(await receiverState(api, manifest)).toEqual(expectedState(manifest));
      } finally {
        await proxy.close();
      }
    }, 60_000);
  });

  describe('check', () => {
    const RULES = [
      'setup',
      '200-only',
      'processed',
      'settled-once',
      'duplicate-200',
      'duplicate-no-credit',
      'same-state',
      'bad-signature',
      'no-signature',
      'tampered',
      'malformed-json',
      'count-mismatch',
      'refused-no-money',
      'within-10s',
    ];

    it('passes every rule against the receiver, and again on the same database', async () => {
      for (let run = 0; run < 2; run++) {
        const lines: string[] = [];
        const report = await runCheck({
          url: t.url,
          secret: SECRET,
          opsKey: OPS_KEY,
          log: (l) => lines.push(l),
        });
        expect(report.rules.map((r) => `${r.id}:${r.pass ? 'PASS' : `FAIL ${r.detail}`}`)).toEqual(
          RULES.map((id) => `${id}:PASS`),
        );
        expect({ ok: report.ok, passed: report.passed, failed: report.failed }).toEqual({
          ok: true,
          passed: 14,
          failed: 0,
        });
        expect(lines).toHaveLength(15);
        expect(lines[14]).toBe('14 passed, 0 failed');
        expect(await api.balance(`chk-${report.runId}`)).toBe('110.50');
      }
    });

    it('--eventual: passes every rule against an inbox-mode receiver, whose money moves after the 200', async () => {
      const inbox = await createTestApp({ CALLBACK_MODE: 'inbox', INBOX_POLL_INTERVAL_MS: '50' });
      try {
        const io = captureIo();
        expect(
          await runCli(
            ['check', '--url', inbox.url, '--secret', SECRET, '--ops-key', OPS_KEY, '--eventual', '10000'],
            io,
          ),
        ).toBe(0);
        expect(io.lines.slice(0, -1).map((l) => l.split('  ').slice(0, 2).join(' '))).toEqual(
          RULES.map((id) => `PASS ${id}`),
        );
        expect(io.lines.at(-1)).toBe('14 passed, 0 failed');
      } finally {
        await inbox.close();
      }
    });

    it('refuses a bad --eventual (usage error, exit code 2)', async () => {
      const io = captureIo();
      expect(
        await runCli(
          ['check', '--url', t.url, '--secret', SECRET, '--ops-key', OPS_KEY, '--eventual', 'soon'],
          io,
        ),
      ).toBe(2);
      expect(io.errors.join('\n')).toContain('--eventual must be an integer from 0 to 600000 (ms)');
    });

    it('fails against a server that answers 201 to everything (exit code 1)', async () => {
      const broken = await stub((_req, res) => answer(res, 201, { success: true }));
      try {
        const io = captureIo();
        expect(
          await runCli(['check', '--url', broken.url, '--secret', SECRET, '--ops-key', OPS_KEY], io),
        ).toBe(1);
        // Setup fails too: GET /accounts/{id} answers 201 without a balance.
        expect(io.lines.slice(0, -1).map((l) => l.split('  ').slice(0, 2).join(' '))).toEqual(
          RULES.map((id) => `${id === 'within-10s' ? 'PASS' : 'FAIL'} ${id}`),
        );
        expect(io.lines[1]).toBe(
          'FAIL  200-only  §2 §5 a new batch is answered HTTP 200 (never 201/202/204)  (HTTP 201 {"success":true})',
        );
        expect(io.lines[14]).toBe('1 passed, 13 failed');
      } finally {
        await broken.close();
      }
    });
  });
});

// Issue 17: a multi-currency sequence (JPY 0, EUR 2, KWD 3, USDT 6, BTC 8), some final results one
// digit finer than their coupon's currency; the receiver knows USDT and BTC from CURRENCY_MINOR_UNITS.
describe('SportAPI simulator: several currencies (issue 17, CONTRACT §3)', () => {
  const CURRENCIES = 'JPY:0,EUR:2,KWD:3,USDT:6,BTC:8';
  let t: TestContext;
  afterAll(async () => {
    await t?.close();
  });

  it('generates every amount at its currency precision; the receiver converges to the manifest exactly', async () => {
    t = await createTestApp({ CURRENCY_MINOR_UNITS: 'USDT:6,BTC:8' });
    const api = new PartnerApi(t.url, OPS_KEY);
    const dir = await tempDir();
    const io = captureIo();
    const args = ['generate', '--out', dir, '--seed', '17', '--coupons', '60', '--batches', '8'];
    expect(await runCli([...args, '--currencies', CURRENCIES], io)).toBe(0);
    expect(io.lines[0]).toMatch(
      /; currencies JPY:0,EUR:2,KWD:3,USDT:6,BTC:8, [1-9]\d* results finer than their currency$/,
    );
    const manifest = JSON.parse(await readFile(join(dir, 'coupons.json'), 'utf8')) as Manifest;
    expect(manifest.currencies).toEqual([
      { code: 'JPY', minorUnits: 0 },
      { code: 'EUR', minorUnits: 2 },
      { code: 'KWD', minorUnits: 3 },
      { code: 'USDT', minorUnits: 6 },
      { code: 'BTC', minorUnits: 8 },
    ]);
    expect(new Set(manifest.accounts.map((a) => a.currency))).toEqual(
      new Set(['JPY', 'EUR', 'KWD', 'USDT', 'BTC']),
    );
    const digits = { JPY: 0, EUR: 2, KWD: 3, USDT: 6, BTC: 8 } as Record<string, number>;
    for (const a of manifest.accounts) {
      const fraction = (v: string) => v.split('.')[1]?.length ?? 0;
      expect([a.currency, fraction(a.deposit), fraction(a.expectedBalance)]).toEqual([
        a.currency,
        digits[a.currency],
        digits[a.currency],
      ]);
    }
    const flagged = manifest.coupons.filter((c) => c.expected.needsReview);
    expect(flagged.length).toBeGreaterThanOrEqual(manifest.stats.finerThanCurrency as number);

    await registerManifest(manifest, api);
    const report = await sendBatches(dir, { url: t.url, secret: SECRET, log: () => undefined });
    expect([report.ok, report.rejected, report.contractViolations]).toEqual([true, 0, 0]);
    expect(await receiverState(api, manifest)).toEqual(expectedState(manifest));
    const precision = await t.db.query(
      `SELECT count(*)::int AS n FROM coupons WHERE review_reason = 'amount_precision' AND coupon_code LIKE 's17-%'`,
    );
    expect(precision.rows[0].n).toBe(manifest.stats.finerThanCurrency);

    // The same options without --currencies write the one-currency sequence of before.
    const single = buildSequence({ seed: 17, coupons: 60, batches: 8 });
    expect(single.manifest.currencies).toBeUndefined();
    expect(single.manifest.accounts.every((a) => a.currency === 'EUR')).toBe(true);
    expect(await runCli([...args, '--currencies', 'EUR:2,EUR:3', '--force'], captureIo())).toBe(2);
  });
});
