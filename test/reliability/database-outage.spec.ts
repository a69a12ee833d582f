import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import pg from 'pg';
import { EmbeddedPostgresServer } from '../../src/platform/database/embedded-postgres.js';
import { createTestApp, deliver, deposit, register, TestContext } from '../support/test-app.js';
import { eventually, sleep } from '../support/wait.js';
import { fetchRead } from '../support/http.js';
import {
  DeliveryAnswer,
  fundCoupons,
  portRange,
  post,
  Receiver,
  requireBuild,
  startReceiver,
  statusAndCode,
  stopReceiver,
  verifyLedger,
} from './support/receiver.js';

// CONTRACT §5 (database unavailable → 503 within the server's deadline, never 200 before COMMIT)
// and §1 (no acknowledged batch lost): a receiver on its own embedded PostgreSQL, which is
// stopped (fast shutdown: connections terminated) in the middle of a stream of deliveries and
// started again. The redelivered batches must converge to the ledger of an undisturbed run.

const [PG_PORT, PORT] = portRange(30, 2);
const DEADLINE_MS = 8000;
const COUPONS = 12;
const BATCHES = 36;
const CODES = Array.from({ length: COUPONS }, (_, c) => `O${String(c).padStart(2, '0')}`);

/** Batch `i` of the stream: settlement snapshots over 12 coupons (wins, recalculations, repeats). */
function streamBatch(i: number) {
  const coupons = [0, 1, 2]
    .map((k) => (i * 5 + k * 4) % COUPONS)
    .map((c) => {
      const step = Math.floor(i / 4) % 3;
      const status = step === 0 ? 2 : step === 1 ? 15 : 4;
      const realWin = status === 2 ? `${c + 1}.50` : status === 15 ? (c % 2 ? '1.00' : null) : '0';
      return {
        coupon_code: CODES[c],
        status,
        realWin,
        events: [{ uuid: `O${c}-e1`, status }],
      };
    });
  const unique = [...new Map(coupons.map((c) => [c.coupon_code, c])).values()];
  return { batchId: `out-${i}`, couponCount: unique.length, coupons: unique };
}

const LEDGER_SQL = `
  SELECT (SELECT json_agg(json_build_object('key', operation_key, 'amount', amount::text) ORDER BY operation_key)
            FROM financial_operations) AS operations,
         (SELECT json_agg(json_build_object('id', id, 'balance', balance) ORDER BY id) FROM (
            SELECT id, balance::text AS balance FROM accounts WHERE kind = 'player'
            UNION ALL -- the house of a currency: the sum of its sub-accounts, however postings spread
            SELECT 'house:' || currency, sum(balance)::text FROM accounts WHERE kind = 'house' GROUP BY currency) a
         ) AS balances,
         (SELECT json_agg(json_build_object('code', coupon_code, 'status', status, 'realWin', real_win::text,
                   'generation', settlement_generation, 'settled', settled_amount::text,
                   'open', recalculation_open, 'review', needs_review) ORDER BY coupon_code) FROM coupons) AS coupons,
         (SELECT count(*)::int FROM callback_batches) AS batches`;

describe('PostgreSQL stopped during a stream of deliveries (CONTRACT §5)', () => {
  const dataDir = resolve(tmpdir(), `rel-pg-outage-${process.pid}`);
  let server: EmbeddedPostgresServer;
  let receiver: Receiver | undefined;
  let url: string;

  beforeAll(async () => {
    requireBuild();
    server = new EmbeddedPostgresServer({
      dataDir,
      port: PG_PORT,
      database: 'outage',
      settings: ['fsync=off'],
    });
    await server.start();
    url = `postgres://postgres:postgres@127.0.0.1:${PG_PORT}/outage`;
    receiver = await startReceiver(PORT, url, { CALLBACK_DEADLINE_MS: String(DEADLINE_MS) });
    await fundCoupons(
      receiver.url,
      { id: 'p-out', amount: '500.00', key: 'out-dep', reason: 'outage' },
      CODES,
      '2.00',
    );
  }, 120_000);

  afterAll(async () => {
    await stopReceiver(receiver);
    await server?.stop().catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('503 within the deadline while it is down (readiness 503), then redeliveries converge to the undisturbed ledger', async () => {
    const r = receiver as Receiver;
    const answers = new Map<number, { answer: DeliveryAnswer; ms: number; sentAt: number }[]>();
    const send = async (i: number) => {
      const sentAt = Date.now();
      const answer = await post(r.url, streamBatch(i), { timeoutMs: 12_000 });
      const list = answers.get(i) ?? [];
      list.push({ answer, ms: Date.now() - sentAt, sentAt });
      answers.set(i, list);
      return answer;
    };

    // The stream: two concurrent senders; PostgreSQL is stopped after a third of it, and neither
    // sends a later batch before the stop has completed.
    let stoppedAt = 0;
    let stopped = 0;
    let stopping: Promise<void> | undefined;
    let next = 0;
    const sender = async () => {
      while (next < BATCHES) {
        const i = next++;
        if (i === Math.floor(BATCHES / 3)) {
          stoppedAt = Date.now();
          stopping = server.stop().then(() => {
            stopped = Date.now();
          });
        }
        if (stopping) await stopping;
        await send(i);
      }
    };
    await Promise.all([sender(), sender()]);
    expect(stoppedAt).toBeGreaterThan(0);

    // While it is down: readiness 503, a new delivery 503 transient_failure within the deadline.
    const ready = await fetchRead(`${r.url}/health/ready`);
    expect(ready.status).toBe(503);
    const live = await fetchRead(`${r.url}/health/live`);
    expect(live.status).toBe(200);
    const during = await send(0);
    expect(statusAndCode(during)).toEqual({ status: 503, code: 'transient_failure' });

    const all = [...answers.values()].flat();
    // Never a 500, never a hang: 200 (committed before the stop) or 503, each inside the deadline.
    expect(
      all
        .filter((a) => ![200, 503].includes(a.answer.status))
        .map((a) => `${a.answer.status} ${a.answer.text}`),
    ).toEqual([]);
    expect(Math.max(...all.map((a) => a.ms))).toBeLessThan(DEADLINE_MS + 1000);
    // Everything sent after the stop completed (every batch from the third on) is refused.
    const afterStop = all.filter((a) => a.sentAt >= stopped);
    expect(afterStop.length).toBeGreaterThanOrEqual(BATCHES - Math.floor(BATCHES / 3));
    expect(afterStop.filter((a) => a.answer.status !== 503)).toEqual([]);
    const acknowledged = [...answers.entries()]
      .filter(([, l]) => l.some((a) => a.answer.status === 200))
      .map(([i]) => i);
    expect(acknowledged.length).toBeLessThan(BATCHES);

    // PostgreSQL returns; the receiver recovers without a restart.
    await server.start();
    await eventually(async () => (await fetchRead(`${r.url}/health/ready`)).status === 200, 'readiness', {
      timeoutMs: 30_000,
      intervalMs: 500,
    });
    expect((await fetchRead(`${r.url}/health/ready`)).status).toBe(200);

    // Every acknowledged batch was committed.
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query(`SELECT batch_id FROM callback_batches`);
      const stored = new Set(rows.map((row) => row.batch_id));
      expect(acknowledged.filter((i) => !stored.has(`out-${i}`))).toEqual([]);
    } finally {
      await client.end();
    }

    // SportAPI redelivers the rest, in order; duplicates of acknowledged ones are answered 200 too.
    for (let i = 0; i < BATCHES; i++) {
      let res = await send(i);
      for (let attempt = 0; res.status !== 200 && attempt < 5; attempt++) {
        await sleep(300);
        res = await send(i);
      }
      expect({ i, status: res.status }).toEqual({ i, status: 200 });
    }

    // The same stream, undisturbed, on another database and in the same order of first commit.
    const undisturbed: TestContext = await createTestApp();
    try {
      await deposit(undisturbed.app, 'p-out', '500.00', 'out-dep');
      for (const code of CODES) await register(undisturbed.app, code, 'p-out', '2.00');
      const outage = new pg.Client({ connectionString: url });
      await outage.connect();
      const order = (
        await outage.query(`SELECT batch_id FROM delivery_attempts WHERE outcome = 'processed' ORDER BY id`)
      ).rows.map((row) => Number(String(row.batch_id).slice(4)));
      const disturbed = (await outage.query(LEDGER_SQL)).rows[0];
      await outage.end();
      expect(order.length).toBe(BATCHES);
      for (const i of order) expect((await deliver(undisturbed.app, streamBatch(i))).status).toBe(200);
      const reference = (await undisturbed.db.query(LEDGER_SQL)).rows[0];
      expect(disturbed).toEqual(reference);
    } finally {
      await undisturbed.close();
    }
    expect((await verifyLedger(url)).violations).toEqual([]);
  }, 240_000);
});
