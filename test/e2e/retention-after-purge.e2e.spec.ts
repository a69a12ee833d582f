import { LedgerVerifier } from '../../src/core/ledger/ledger-verifier.js';
import { ensurePartitions } from '../../src/operations/retention/retention-partitions.js';
import { RetentionJob } from '../../src/operations/retention/retention.job.js';
import { sample, scrape } from '../support/metrics.js';
import {
  balance,
  batchOf,
  deliver,
  deposit,
  expectError,
  ops,
  register,
  useTestApp,
} from '../support/test-app.js';

// Issue 32 (docs/retention.md, "After a purge"): the scheduled job purges batches five hundred
// days old (back-dated rows), and the ledger check, the coupon history, the batch audit, the
// delivery audit and a redelivery keep answering: "expired under the retention policy" where the
// bytes are gone, never a 500, no money moved twice. One replica at a time.

const DAY = 86_400_000;

describe('after a purge (the retention job in the app)', () => {
  const t = useTestApp();

  /** Moves every row of `batchIds` back by `days` (the ledger's rows too: triggers off for this session). */
  async function backdate(batchIds: string[], days: number): Promise<void> {
    const c = await t.db.connect();
    try {
      await ensurePartitions(c, new Date(), 3, new Date(Date.now() - (days + 40) * DAY));
      await c.query(`SET session_replication_role = replica`);
      const shift = `interval '${days} days'`;
      await c.query(
        `UPDATE callback_batches SET received_at = received_at - ${shift} WHERE batch_id = ANY ($1)`,
        [batchIds],
      );
      await c.query(
        `UPDATE coupon_snapshots SET received_at = received_at - ${shift} WHERE batch_id = ANY ($1)`,
        [batchIds],
      );
      await c.query(
        `UPDATE delivery_attempts SET received_at = received_at - ${shift} WHERE batch_id = ANY ($1)`,
        [batchIds],
      );
      await c.query(
        `UPDATE financial_operations SET created_at = created_at - ${shift} WHERE batch_id = ANY ($1)`,
        [batchIds],
      );
    } finally {
      await c.query(`RESET session_replication_role`).catch(() => undefined);
      c.release();
    }
  }

  it('purges the old batches, and every reader answers what is left, with what expired', async () => {
    await deposit(t.app, 'p-old', '100.00');
    await register(t.app, 'OLD-1', 'p-old', '10.00');
    const won = batchOf('b-old-1', { code: 'OLD-1', status: 2, realWin: '25.00' });
    expect((await deliver(t.app, won)).status).toBe(200);
    expect(
      (await deliver(t.app, batchOf('b-old-2', { code: 'OLD-2', status: 4, realWin: '0' }))).status,
    ).toBe(200);
    expect(await balance(t.app, 'p-old')).toBe('115.00');
    await backdate(['b-old-1', 'b-old-2'], 500);
    await register(t.app, 'NEW-1', 'p-old', '5.00');
    expect(
      (await deliver(t.app, batchOf('b-new-1', { code: 'NEW-1', status: 4, realWin: '0' }))).status,
    ).toBe(200);

    const run = await t.app.get(RetentionJob).runOnce();
    if (run.skipped) throw new Error('the run was skipped');
    const removed = Object.fromEntries(run.report.classes.map((c) => [c.dataClass, c.removeRows]));
    // b-old-1's coupon is settled and registered; OLD-2 is unregistered but decided nothing: both go.
    expect(removed).toEqual({ batch_ids: 2, raw_bodies: 2, snapshots: 2, delivery_attempts: 2, outbox: 0 });

    // The ledger verifies clean: the expired snapshot and attempts are no violation.
    const client = await t.db.connect();
    try {
      const report = await new LedgerVerifier(client, t.config.money.currencies).verify();
      expect(report.violations).toEqual([]);
      expect(report.ok).toBe(true);
    } finally {
      client.release();
    }

    const history = await ops(t.app).get('/coupons/OLD-1/history');
    expect(history.status).toBe(200);
    expect(history.body.items).toEqual([]);
    expect(Date.parse(history.body.expiredBefore)).toBeLessThan(Date.now() - 90 * DAY);
    const fresh = await ops(t.app).get('/coupons/NEW-1/history');
    expect(fresh.body.items).toHaveLength(1);

    const audit = await ops(t.app).get('/callbacks/batches/b-old-1');
    expect(audit.status).toBe(200);
    expect(audit.body).toMatchObject({
      committed: true,
      payloadHash: null,
      coupons: [],
      deliveries: [],
      expired: {
        note: 'expired under the retention policy',
        classes: ['batch_ids', 'raw_bodies', 'snapshots', 'delivery_attempts'],
      },
    });
    expect(audit.body.operations.map((o: { key: string }) => o.key)).toEqual(['OLD-1:0:final_credit']);
    const gone = await ops(t.app).get('/callbacks/batches/b-old-2');
    expectError(gone, 404, 'not_found');
    expect(gone.body.error.message).toMatch(
      /^batch b-old-2 was never delivered, or expired under the retention policy/,
    );
    const newAudit = await ops(t.app).get('/callbacks/batches/b-new-1');
    expect(newAudit.body.expired).toBeNull();
    const deliveries = await ops(t.app).get('/callbacks/deliveries');
    expect(deliveries.status).toBe(200);
    expect(deliveries.body.items.map((d: { batchId: string }) => d.batchId)).toEqual(['b-new-1']);

    // A redelivery of the expired batch moves no money: the coupon's state already holds it.
    expect((await deliver(t.app, won)).status).toBe(200);
    expect(await balance(t.app, 'p-old')).toBe('110.00');

    const metrics = await scrape(t.app);
    expect(sample(metrics, 'settlement_retention_removed_rows_total{class="snapshots"}')).toBe(2);
    expect(sample(metrics, 'settlement_retention_last_run_timestamp_seconds')).toBeGreaterThan(
      Date.now() / 1000 - 60,
    );
    expect(sample(metrics, 'settlement_retention_bytes{class="snapshots"}')).toBeGreaterThan(0);
  });

  it('runs on one replica at a time: a run finding the lock held is skipped', async () => {
    const holder = await t.db.connect();
    try {
      await holder.query('SELECT pg_advisory_lock(727006)');
      expect(await t.app.get(RetentionJob).runOnce()).toEqual({ skipped: true });
    } finally {
      await holder.query('SELECT pg_advisory_unlock(727006)');
      holder.release();
    }
  });
});
