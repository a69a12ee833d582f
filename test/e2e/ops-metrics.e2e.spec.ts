import { lockWaiters, whileLocked } from '../support/database-faults.js';
import { exportedSeries, sample, scrape } from '../support/metrics.js';
import { opsExpressions, parsePromql } from '../support/promql.js';
import { scriptedPublishers } from '../support/scripted-publisher.js';
import {
  batchOf,
  deliver,
  deposit,
  expectError,
  ops,
  pendingInboxRow,
  quarantinedInvalid,
  register,
  SCOPED_KEYS,
  useTestApp,
} from '../support/test-app.js';
import { eventually } from '../support/wait.js';

// Issue 41: the figures ops/'s alerts and dashboard need, counted exactly at scrape time (past-due
// and parked outbox rows per destination, the inbox's backlog, the quarantine, lock waits), and
// every PromQL expression of ops/alerts.yml and ops/grafana checked against a real /metrics: each
// metric exported, each label it matches, groups or prints carried by that metric, and no label
// whose values grow with traffic (batch ids, coupon codes, accounts, keys).

/** Labels Prometheus adds to every scraped series (scrape_configs), not the receiver. */
const TARGET_LABELS = ['job', 'instance'];
/** Series of Prometheus itself that the rules use. */
const PROMETHEUS_SERIES = new Map([['up', new Set<string>()]]);

describe('ops/ metrics: backlog gauges and every expression against a real scrape', () => {
  const scripted = scriptedPublishers('ev-a');
  const t = useTestApp(
    {
      WALLET_URL: 'http://127.0.0.1:4601',
      WALLET_SECRET: 'ops-metrics-wallet-secret',
      WALLET_OPERATION_TYPES: 'deposit',
      EVENT_PUBLISHERS: 'ev-a',
      EVENT_OPERATION_TYPES: 'deposit',
      DB_LOCK_TIMEOUT_MS: '7000',
    },
    { extensions: [scripted.module] },
  );
  const value = (text: string, series: string) => sample(text, series);

  it('counts past-due and parked outbox rows per destination: due now, in flight, waiting, parked', async () => {
    expect((await ops(t.app).post('/wallet/pause', { reason: 'metrics test' })).status).toBe(200);
    expect((await ops(t.app).post('/events/ev-a/pause', { reason: 'metrics test' })).status).toBe(200);
    for (const account of ['om-1', 'om-2', 'om-3', 'om-4']) await deposit(t.app, account, '10.00');
    const ids = async (table: string) =>
      (await t.db.query<{ id: string }>(`SELECT id::text FROM ${table} ORDER BY id`)).rows.map((r) => r.id);
    const wallet = await ids('wallet_outbox');
    const events = await ids('event_outbox');
    expect([wallet.length, events.length]).toEqual([4, 4]);
    // Due for 300 s; in flight (leased); waiting for its retry in an hour; parked 700 s ago.
    await t.db.query(
      `UPDATE wallet_outbox SET next_attempt_at = now() - interval '300 seconds' WHERE id = $1`,
      [wallet[0]],
    );
    await t.db.query(
      `UPDATE wallet_outbox SET next_attempt_at = now() - interval '60 seconds', leased_until = now() + interval '1 minute' WHERE id = $1`,
      [wallet[1]],
    );
    await t.db.query(`UPDATE wallet_outbox SET next_attempt_at = now() + interval '1 hour' WHERE id = $1`, [
      wallet[2],
    ]);
    await t.db.query(
      `UPDATE wallet_outbox SET status = 'parked', parked_reason = 'refused', parked_at = now() - interval '700 seconds' WHERE id = $1`,
      [wallet[3]],
    );
    // ev-a: two due (the older for 120 s), two waiting for their retry.
    await t.db.query(
      `UPDATE event_outbox SET next_attempt_at = now() - interval '120 seconds' WHERE id = $1`,
      [events[0]],
    );
    await t.db.query(
      `UPDATE event_outbox SET next_attempt_at = now() + interval '1 hour' WHERE id = ANY($1::bigint[])`,
      [[events[2], events[3]]],
    );

    const text = await scrape(t.app);
    expect(value(text, 'settlement_wallet_outbox_pending')).toBe(3);
    expect(value(text, 'settlement_wallet_outbox_past_due')).toBe(1);
    expect(value(text, 'settlement_wallet_outbox_parked')).toBe(1);
    expect(value(text, 'settlement_wallet_outbox_paused')).toBe(1);
    const walletDue = value(text, 'settlement_wallet_outbox_oldest_past_due_seconds')!;
    expect(walletDue).toBeGreaterThanOrEqual(300);
    expect(walletDue).toBeLessThan(330);
    const walletParked = value(text, 'settlement_wallet_outbox_oldest_parked_age_seconds')!;
    expect(walletParked).toBeGreaterThanOrEqual(700);
    expect(walletParked).toBeLessThan(730);
    expect(value(text, 'settlement_event_outbox_pending{publisher="ev-a"}')).toBe(4);
    expect(value(text, 'settlement_event_outbox_past_due{publisher="ev-a"}')).toBe(2);
    expect(value(text, 'settlement_event_outbox_parked{publisher="ev-a"}')).toBe(0);
    expect(value(text, 'settlement_event_outbox_oldest_parked_age_seconds{publisher="ev-a"}')).toBe(0);
    const eventDue = value(text, 'settlement_event_outbox_oldest_past_due_seconds{publisher="ev-a"}')!;
    expect(eventDue).toBeGreaterThanOrEqual(120);
    expect(eventDue).toBeLessThan(150);

    // Nothing due any more: both figures drop to 0 (a row waiting for its retry is not past due).
    await t.db.query(
      `UPDATE wallet_outbox SET next_attempt_at = now() + interval '1 hour' WHERE status = 'pending'`,
    );
    await t.db.query(`UPDATE wallet_outbox SET leased_until = NULL`);
    const after = await scrape(t.app);
    expect(value(after, 'settlement_wallet_outbox_past_due')).toBe(0);
    expect(value(after, 'settlement_wallet_outbox_oldest_past_due_seconds')).toBe(0);
    expect(value(after, 'settlement_wallet_outbox_pending')).toBe(3);
  });

  it("counts the inbox's pending rows and the oldest one's age", async () => {
    const before = await scrape(t.app);
    expect(value(before, 'settlement_inbox_pending')).toBe(0);
    expect(value(before, 'settlement_inbox_oldest_pending_age_seconds')).toBe(0);
    await pendingInboxRow(t, 'om-inbox-1', 'OM-I-1');
    await pendingInboxRow(t, 'om-inbox-2', 'OM-I-2');
    await t.db.query(
      `UPDATE callback_inbox SET received_at = now() - interval '400 seconds' WHERE batch_id = 'om-inbox-1'`,
    );
    const text = await scrape(t.app);
    expect(value(text, 'settlement_inbox_pending')).toBe(2);
    const age = value(text, 'settlement_inbox_oldest_pending_age_seconds')!;
    expect(age).toBeGreaterThanOrEqual(400);
    expect(age).toBeLessThan(430);
  });

  it('counts quarantined bodies not replayed and the oldest one; a replayed one leaves the count', async () => {
    expect(value(await scrape(t.app), 'settlement_quarantine_not_replayed')).toBe(0);
    const first = await quarantinedInvalid(t, 'om-q-1', 'OM-Q-1');
    await quarantinedInvalid(t, 'om-q-2', 'OM-Q-2');
    const third = await quarantinedInvalid(t, 'om-q-3', 'OM-Q-3');
    await t.db.query(
      `UPDATE quarantined_bodies SET received_at = now() - interval '500 seconds' WHERE id = $1`,
      [first],
    );
    await t.db.query(
      `UPDATE quarantined_bodies SET replayed_at = now(), replay_outcome = 'rejected', replay_count = 1 WHERE id = $1`,
      [third],
    );
    const text = await scrape(t.app);
    expect(value(text, 'settlement_quarantine_not_replayed')).toBe(2);
    const age = value(text, 'settlement_quarantine_oldest_not_replayed_age_seconds')!;
    expect(age).toBeGreaterThanOrEqual(500);
    expect(age).toBeLessThan(530);
  });

  it("counts the receiver's sessions waiting for a lock: 1 while a delivery waits for a coupon's row", async () => {
    expect(value(await scrape(t.app), 'settlement_database_lock_waiting')).toBe(0);
    await deposit(t.app, 'om-player', '50.00');
    await register(t.app, 'OM-L-1', 'om-player', '5.00');
    // The lock is released when the function returns: the delivery's promise comes back wrapped.
    const { delivery } = await whileLocked(
      t.db,
      `SELECT 1 FROM coupons WHERE coupon_code = 'OM-L-1' FOR UPDATE`,
      async () => {
        const waiting = deliver(
          t.app,
          batchOf('om-lock-1', { code: 'OM-L-1', status: 2, realWin: '9.00' }),
        ).then((r) => r);
        await eventually(
          async () => (await lockWaiters(t.db)).length === 1,
          'the delivery waits for the lock',
        );
        expect(value(await scrape(t.app), 'settlement_database_lock_waiting')).toBe(1);
        return { delivery: waiting };
      },
    );
    expect((await delivery).status).toBe(200);
    expect(value(await scrape(t.app), 'settlement_database_lock_waiting')).toBe(0);
  });

  it('every expression of ops/ uses exported metrics with their labels', async () => {
    // Traffic of every kind the dashboard draws: processed, duplicate, unauthorized deliveries.
    const batch = batchOf('om-contract-1', { code: 'OM-C-1', status: 1 });
    expect((await deliver(t.app, batch)).status).toBe(200);
    expect((await deliver(t.app, batch)).status).toBe(200);
    expectError(await deliver(t.app, batch, { secret: 'not-the-secret' }), 401, 'invalid_signature');
    const exported = exportedSeries(await scrape(t.app));
    const labelsOf = (metric: string) => exported.get(metric)?.labels ?? PROMETHEUS_SERIES.get(metric);

    const problems: string[] = [];
    for (const { where, expr, labelsUsed } of opsExpressions()) {
      const parsed = parsePromql(expr);
      if (parsed.errors.length) problems.push(`${where}: does not parse near ${parsed.errors.join(', ')}`);
      const carried = new Set(TARGET_LABELS);
      for (const { metric, labels } of parsed.selectors) {
        const known = labelsOf(metric);
        if (!known) {
          problems.push(`${where}: ${metric} is not exported`);
          continue;
        }
        for (const l of known) carried.add(l);
        for (const l of labels)
          if (!known.has(l) && !TARGET_LABELS.includes(l))
            problems.push(`${where}: ${metric} has no label ${l}`);
      }
      for (const l of [...parsed.grouping, ...labelsUsed])
        if (!carried.has(l)) problems.push(`${where}: no series of it carries ${l}`);
    }
    expect(problems).toEqual([]);
  });

  it('keeps cardinality bounded: no label of a batch, coupon, account, key or request; few values each', async () => {
    const exported = exportedSeries(await scrape(t.app));
    const names = [...exported.values()].flatMap((m) => [...m.labels]);
    expect(names.filter((l) => /batch|coupon|account|key|request|actor|operation_id|id$/i.test(l))).toEqual(
      [],
    );
    // The test's own identifiers never appear as a label value.
    const values = [...exported.values()].flatMap((m) => [...m.values.values()].flatMap((v) => [...v]));
    const ours = ['om-', 'OM-', 'test-', ...Object.keys(SCOPED_KEYS)];
    expect(values.filter((v) => ours.some((o) => v.startsWith(o)))).toEqual([]);
    // Every label has a short, fixed list of values (le: a histogram's buckets; space: V8's heap
    // spaces in prom-client's default metrics, 9 on Node 20 and 13 on Node 24).
    const limit: Record<string, number> = { le: 20, space: 20 };
    const wide = [...exported].flatMap(([metric, m]) =>
      [...m.values]
        .filter(([label, v]) => v.size > (limit[label] ?? 12))
        .map(([label]) => `${metric}{${label}}`),
    );
    expect(wide).toEqual([]);
  });
});
