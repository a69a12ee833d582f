import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { ensurePartitions } from '../../src/operations/retention/retention-partitions.js';
import { sleep } from '../support/wait.js';
import {
  DeliveryAnswer,
  fundCoupons,
  partner,
  portRange,
  post,
  useReceivers,
  verifyLedger,
  violationsOf,
} from './support/receiver.js';

// Issue 32 (docs/retention.md): `npm run retention -- --apply` (the built CLI) detaches and drops
// old partitions and deletes old batch rows in small batches while two receivers take callbacks
// at concurrency 8: every callback is answered 200 and everything it wrote is there afterwards
// (its batch with its body, its snapshot, its processed attempt, its credit), the old rows are
// gone exactly as many as were put there, and the ledger verifies clean.

const CLI = resolve(process.cwd(), 'dist/src/operations/retention/retention-cli.js');
const DAY = 86_400_000;
const OLD_BATCHES = 3000;
const NEW_COUPONS = 160;

/** Runs `npm run retention -- --apply --json` on `url`; resolves with its exit code and output. */
function applyRetention(url: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const proc = spawn(process.execPath, [CLI, '--apply', '--json'], {
      env: { PATH: process.env.PATH, DATABASE_URL: url, RETENTION_BATCH_ROWS: '50' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    proc.once('exit', (code) => done({ code, stdout, stderr }));
  });
}

describe('a purge under concurrent callbacks loses nothing', () => {
  const suite = useReceivers(portRange(88, 2), { env: { RETENTION_INTERVAL: 'off' }, poolSize: 4 });
  const { receivers } = suite;
  const codes = Array.from({ length: NEW_COUPONS }, (_, i) => `NEW${String(i).padStart(4, '0')}`);

  beforeAll(async () => {
    const c = await suite.db.pool.connect();
    try {
      await ensurePartitions(c, new Date(), 3, new Date(Date.now() - 520 * DAY));
      // Back-dated traffic: batches, one snapshot each (200 days old), attempts (480 days old).
      await c.query(`INSERT INTO coupons (coupon_code, generation_settled, settled_amount, status)
                     SELECT 'OLD' || g, true, 0, 4 FROM generate_series(1, ${OLD_BATCHES}) g`);
      await c.query(
        `INSERT INTO callback_batches (batch_id, payload_hash, coupon_count, payload, received_at)
         SELECT 'ob-' || g, encode(sha256(convert_to('old ' || g, 'UTF8')), 'hex'), 1, convert_to('old ' || g, 'UTF8'),
                now() - interval '480 days' FROM generate_series(1, ${OLD_BATCHES}) g`,
      );
      await c.query(
        `INSERT INTO coupon_snapshots (coupon_code, batch_id, status, applied, transition, generation, payload, received_at)
         SELECT 'OLD' || g, 'ob-' || g, 4, true, 'settled', 0, '{}', now() - interval '200 days'
         FROM generate_series(1, ${OLD_BATCHES}) g`,
      );
      await c.query(
        `INSERT INTO delivery_attempts (batch_id, received_at, outcome, http_status, coupon_count, duration_ms, payload_hash)
         SELECT 'ob-' || g, now() - interval '480 days', 'processed', 200, 1, 3, encode(sha256(convert_to('old ' || g, 'UTF8')), 'hex')
         FROM generate_series(1, ${OLD_BATCHES}) g`,
      );
    } finally {
      c.release();
    }
    await fundCoupons(
      receivers.map((r) => r.url),
      { id: 'p-purge', amount: '1000.00', key: 'purge-dep', reason: 'purge' },
      codes,
      '1.00',
    );
  }, 120_000);

  afterAll(() => {
    for (const r of receivers)
      expect(r.output()).not.toMatch(/\b500\b.*Internal|UnhandledPromiseRejection|FATAL/);
  });

  it('every callback answered 200 and kept; the old rows removed exactly; the ledger clean', async () => {
    const answers: DeliveryAnswer[] = [];
    let next = 0;
    const sender = async () => {
      while (next < codes.length) {
        const i = next++;
        const code = codes[i];
        const body = {
          batchId: `nb-${code}`,
          couponCount: 1,
          coupons: [
            { coupon_code: code, status: 2, realWin: '2.50', events: [{ uuid: `${code}-e1`, status: 2 }] },
          ],
        };
        let a: DeliveryAnswer;
        // Like SportAPI: a 503 (never expected here) is redelivered.
        for (let n = 0; ; n++) {
          a = await post(receivers[i % 2].url, body);
          if (a.status !== 503 || n >= 5) break;
          await sleep(100);
        }
        answers.push(a);
      }
    };
    const callbacks = Promise.all(Array.from({ length: 8 }, sender));
    const first = applyRetention(suite.db.url);
    // Further runs while callbacks still flow (each creates partitions ahead, finds nothing to drop).
    const runs = [await first];
    let more = true;
    void callbacks.then(() => (more = false));
    while (more) runs.push(await applyRetention(suite.db.url));
    await callbacks;

    expect(answers.map((a) => a.status)).toEqual(codes.map(() => 200));
    expect(runs.map((r) => r.code)).toEqual(runs.map(() => 0));
    const report = JSON.parse(runs[0].stdout) as { classes: { dataClass: string; removeRows: number }[] };
    expect(Object.fromEntries(report.classes.map((c) => [c.dataClass, c.removeRows]))).toEqual({
      batch_ids: OLD_BATCHES,
      raw_bodies: OLD_BATCHES,
      snapshots: OLD_BATCHES,
      delivery_attempts: OLD_BATCHES,
      outbox: 0,
    });

    const { rows } = await suite.db.pool.query(`
      SELECT (SELECT count(*)::int FROM callback_batches WHERE batch_id LIKE 'nb-%' AND payload IS NOT NULL) AS batches,
             (SELECT count(*)::int FROM coupon_snapshots WHERE batch_id LIKE 'nb-%') AS snapshots,
             (SELECT count(DISTINCT batch_id)::int FROM delivery_attempts WHERE batch_id LIKE 'nb-%' AND outcome = 'processed') AS attempts,
             (SELECT count(*)::int FROM financial_operations WHERE type = 'final_credit') AS credits,
             (SELECT count(*)::int FROM callback_batches WHERE batch_id LIKE 'ob-%') AS old_batches,
             (SELECT count(*)::int FROM coupon_snapshots WHERE batch_id LIKE 'ob-%') AS old_snapshots,
             (SELECT count(*)::int FROM delivery_attempts WHERE batch_id LIKE 'ob-%') AS old_attempts`);
    expect(rows[0]).toEqual({
      batches: NEW_COUPONS,
      snapshots: NEW_COUPONS,
      attempts: NEW_COUPONS,
      credits: NEW_COUPONS,
      old_batches: 0,
      old_snapshots: 0,
      old_attempts: 0,
    });
    const account = await partner(receivers[0].url, 'GET', '/accounts/p-purge');
    expect(account.body.balance).toBe((1000 - NEW_COUPONS * 1 + NEW_COUPONS * 2.5).toFixed(2));
    expect(violationsOf(await verifyLedger(suite.db.url))).toEqual([]);
  }, 300_000);
});
