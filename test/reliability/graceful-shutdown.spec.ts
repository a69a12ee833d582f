import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import pg from 'pg';
import { lockWaiters } from '../support/database-faults.js';
import { eventually, sleep } from '../support/wait.js';
import { fetchRead } from '../support/http.js';
import {
  DeliveryAnswer,
  fundCoupons,
  portRange,
  post,
  Receiver,
  startReceiver,
  statusAndCode,
  stopReceiver,
  useReceivers,
  verifyLedger,
} from './support/receiver.js';

// CONTRACT §5 ("shutting down" is a 503; never 200 before COMMIT) and §1 (no acknowledged batch
// lost): SIGTERM while deliveries stream in and one batch transaction is held open by a row
// lock. In-flight batches finish (commit and 200, or roll back), new requests get 503, the
// process exits within 10 s, every 200-answered batch is in the database, and the redelivered
// rest is applied once after a restart.

const [PORT, EMBEDDED_PORT, EMBEDDED_PG_PORT] = portRange(40, 3);
const COUPONS = 10;

function batch(i: number) {
  const c = i % COUPONS;
  return {
    batchId: `gs-${i}`,
    couponCount: 1,
    coupons: [
      {
        coupon_code: `G${c}`,
        status: i < COUPONS ? 2 : 1,
        realWin: i < COUPONS ? '3.00' : null,
        events: [{ uuid: `G${c}-e1`, status: 1 }],
      },
    ],
  };
}

describe('SIGTERM under load (CONTRACT §5)', () => {
  const suite = useReceivers([PORT], { poolSize: 3 });

  beforeAll(async () => {
    await fundCoupons(
      suite.receiver.url,
      { id: 'p-gs', amount: '100.00', key: 'gs-dep', reason: 'gs' },
      Array.from({ length: COUPONS }, (_, c) => `G${c}`),
      '1.00',
    );
  }, 60_000);

  it('in-flight batches finish, new requests 503, exit within 10 s, no acknowledged batch missing', async () => {
    const r = suite.receiver;
    const answers: { i: number; sentAt: number; answer: DeliveryAnswer }[] = [];
    const send = async (i: number) => {
      const sentAt = Date.now();
      const answer = await post(r.url, batch(i), { timeoutMs: 15_000 });
      answers.push({ i, sentAt, answer });
      return answer;
    };

    // Hold one batch (G0's WIN) open: its coupon row is locked by another connection.
    const holder = await suite.db.pool.connect();
    await holder.query('BEGIN');
    await holder.query(`SELECT 1 FROM coupons WHERE coupon_code = 'G0' FOR UPDATE`);
    const held = send(0);
    await eventually(
      async () => (await lockWaiters(suite.db.pool, { writing: true })).length > 0,
      'the batch of G0 to wait for its coupon lock',
      { timeoutMs: 15_000, intervalMs: 50 },
    );

    // Load: three senders streaming batches 1..199 until the process is gone.
    let next = 1;
    let stop = false;
    const sender = async () => {
      while (!stop && next < 200) {
        const a = await send(next++);
        if (a.status === 0) break;
        await sleep(50);
      }
    };
    const senders = Promise.all([sender(), sender(), sender()]);
    await sleep(500);

    const termAt = Date.now();
    r.kill('SIGTERM');
    // New requests during the drain: readiness and callbacks 503.
    await sleep(200);
    const ready = await fetchRead(`${r.url}/health/ready`).catch((e: Error) => ({
      status: `${e.message} ${(e.cause as Error)?.message} ${r.output().slice(-1500)}`,
    }));
    expect(ready.status).toBe(503);
    const fresh = await send(1000);
    expect(statusAndCode(fresh)).toEqual({ status: 503, code: 'transient_failure' });
    // Release the held batch: it commits and is answered 200 although the shutdown has begun.
    await sleep(500);
    await holder.query('ROLLBACK');
    holder.release();
    expect((await held).status).toBe(200);

    const exit = await r.exited;
    const exitMs = Date.now() - termAt;
    stop = true;
    await senders;
    expect(exit).toEqual({ code: 0, signal: null });
    expect(exitMs).toBeLessThan(10_000);
    expect(r.output()).not.toMatch(/still in flight|took over 10 s/);

    // Answers: 200 (committed), 503 (refused while closing), 0 (no connection once closed); never 500.
    expect(answers.filter((a) => ![0, 200, 503].includes(a.answer.status))).toEqual([]);
    // After the signal (plus what was already on the wire), nothing new is accepted.
    expect(answers.filter((a) => a.sentAt > termAt + 100 && a.answer.status === 200).map((a) => a.i)).toEqual(
      [],
    );
    const acknowledged = [...new Set(answers.filter((a) => a.answer.status === 200).map((a) => a.i))];
    expect(acknowledged).toContain(0);
    const { rows } = await suite.db.pool.query(`SELECT batch_id FROM callback_batches`);
    const stored = new Set(rows.map((row) => row.batch_id as string));
    expect(acknowledged.filter((i) => !stored.has(`gs-${i}`))).toEqual([]);
    // Nothing half-written: every stored batch has its snapshot and delivery record.
    expect((await verifyLedger(suite.db.url)).violations).toEqual([]);

    // Restart; SportAPI redelivers everything not acknowledged (and duplicates of the rest).
    suite.receiver = await startReceiver(PORT, suite.db.url);
    const sent = [...new Set(answers.map((a) => a.i))].filter((i) => i < 1000);
    for (const i of sent)
      expect({ i, status: (await post(suite.receiver.url, batch(i))).status }).toEqual({ i, status: 200 });
    const ops = await suite.db.pool.query(
      `SELECT count(*)::int AS n, sum(amount)::text AS total FROM financial_operations WHERE type = 'final_credit'`,
    );
    const wins = sent.filter((i) => i < COUPONS).length;
    expect(ops.rows[0]).toEqual({ n: wins, total: (wins * 3).toFixed(8) });
    expect((await verifyLedger(suite.db.url)).violations).toEqual([]);
  }, 90_000);

  it('on the embedded PostgreSQL (no DATABASE_URL): the held batch still commits, then the receiver stops its server and exits 0', async () => {
    const dataDir = resolve(tmpdir(), `rel-gs-embedded-${process.pid}`);
    const embedded = await startReceiver(
      EMBEDDED_PORT,
      '',
      { EMBEDDED_PG_DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(EMBEDDED_PG_PORT) },
      90_000,
    );
    const embeddedUrl = `postgres://postgres:postgres@127.0.0.1:${EMBEDDED_PG_PORT}/settlement`;
    // The receiver stops its embedded server once it has drained, which terminates every client
    // (57P01): the lock holder must not turn that into an unhandled 'error' event.
    const client = new pg.Client({ connectionString: embeddedUrl });
    client.on('error', () => undefined);
    let restarted: Receiver | undefined;
    try {
      await fundCoupons(
        embedded.url,
        { id: 'p-emb', amount: '10.00', key: 'emb-dep', reason: 'gs' },
        ['E1'],
        '1.00',
      );
      await client.connect();
      await client.query('BEGIN');
      await client.query(`SELECT 1 FROM coupons WHERE coupon_code = 'E1' FOR UPDATE`);
      const body = {
        batchId: 'emb-1',
        couponCount: 1,
        coupons: [{ coupon_code: 'E1', status: 2, realWin: '4.00', events: [{ uuid: 'E1-e1', status: 2 }] }],
      };
      const held = post(embedded.url, body, { timeoutMs: 15_000 });
      await sleep(500);
      const termAt = Date.now();
      embedded.kill('SIGTERM');
      // A second one, as npm forwards the signal its process group already got: still one drain.
      await sleep(50);
      embedded.kill('SIGTERM');
      await sleep(250);
      expect((await post(embedded.url, { ...body, batchId: 'emb-2' })).status).toBe(503);
      await client.query('ROLLBACK');
      expect((await held).status).toBe(200);
      await client.end().catch(() => undefined);
      expect(await embedded.exited).toEqual({ code: 0, signal: null });
      expect(Date.now() - termAt).toBeLessThan(10_000);
      // The embedded server was stopped by the receiver (nothing listens on its port any more).
      const listening = await new Promise<boolean>((done) => {
        const socket = createConnection({ host: '127.0.0.1', port: EMBEDDED_PG_PORT });
        socket.once('connect', () => (socket.destroy(), done(true)));
        socket.once('error', () => done(false));
      });
      expect(listening).toBe(false);

      // Started again on the same data directory: the acknowledged batch is there, credited once,
      // and the refused one is not.
      restarted = await startReceiver(
        EMBEDDED_PORT,
        '',
        { EMBEDDED_PG_DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(EMBEDDED_PG_PORT) },
        90_000,
      );
      const after = new pg.Client({ connectionString: embeddedUrl });
      after.on('error', () => undefined);
      await after.connect();
      try {
        const ops = await after.query(
          `SELECT operation_key, amount::text AS amount FROM financial_operations WHERE type = 'final_credit'`,
        );
        expect(ops.rows).toEqual([{ operation_key: 'E1:0:final_credit', amount: '4.00000000' }]);
        const batches = await after.query(`SELECT batch_id FROM callback_batches ORDER BY batch_id`);
        expect(batches.rows).toEqual([{ batch_id: 'emb-1' }]);
      } finally {
        await after.end().catch(() => undefined);
      }
      // ledger:verify given only the data folder (not the port) finds the running server and is clean.
      const verify = spawnSync(process.execPath, [resolve('dist/src/core/ledger/verify-cli.js')], {
        env: { PATH: process.env.PATH, EMBEDDED_PG_DATA_DIR: dataDir },
        encoding: 'utf8',
      });
      expect({ status: verify.status, stderr: verify.stderr.trim() }).toEqual({
        status: 0,
        stderr: `using the running embedded PostgreSQL at 127.0.0.1:${EMBEDDED_PG_PORT}`,
      });
    } finally {
      await client.end().catch(() => undefined);
      await stopReceiver(restarted);
      await stopReceiver(embedded);
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 180_000);
});
