import { DeliveryRollupJob } from '../../src/operations/console/delivery-rollup.job.js';
import {
  batchOf,
  deliver,
  deposit,
  expectError,
  ops,
  pendingInboxRow,
  quarantinedConflict,
  register,
  TestContext,
  useTestApp,
} from '../support/test-app.js';
import { scriptedPublishers } from '../support/scripted-publisher.js';
import { eventually } from '../support/wait.js';

// Issue 30 (docs/api.md#search, #overview): one box for any id, and the console's first screen,
// whose delivery counts come from the rollup of closed minutes plus a live count of the rest.

/** Inserts a parked outbox row for the operation `key` (no wallet connector runs in these tests). */
async function parkedOutboxRow(t: TestContext, key: string, reason = 'refused'): Promise<string> {
  const { rows } = await t.db.query<{ id: string }>(
    `INSERT INTO wallet_outbox (operation_id, operation_key, account_id, status, parked_reason, parked_at)
     SELECT id, operation_key, account_id, 'parked', $2, now() FROM financial_operations WHERE operation_key = $1
     RETURNING id::text`,
    [key, reason],
  );
  return rows[0].id;
}

describe('GET /search (issue 30)', () => {
  const t = useTestApp({ DELIVERY_ROLLUP_INTERVAL: 'off' });
  let outboxId: string;
  let quarantineId: string;
  let inboxId: string;

  beforeAll(async () => {
    await deposit(t.app, 'se-p1', '50.00', 'se-dep-1');
    await register(t.app, 'SE-1', 'se-p1', '10.00');
    const settled = await deliver(
      t.app,
      batchOf('se-b1', {
        code: 'SE-1',
        status: 2,
        realWin: '20.00',
        events: [{ uuid: 'se-bet-uuid-1', status: 2 }],
      }),
      { headers: { 'x-request-id': 'se-req-delivery' } },
    );
    expect(settled.status).toBe(200);
    outboxId = await parkedOutboxRow(t, 'SE-1:0:final_credit');
    quarantineId = await quarantinedConflict(t, batchOf('se-b2', { code: 'SE-2', status: 1 }));
    await pendingInboxRow(t, 'se-b3', 'SE-3');
    inboxId = (
      await t.db.query<{ id: string }>(`SELECT id::text FROM callback_inbox WHERE batch_id = 'se-b3'`)
    ).rows[0].id;
    const pause = await ops(t.app, 'operator')
      .post('/wallet/pause', { reason: 'search test' })
      .set('x-request-id', 'se-req-action');
    expect(pause.status).toBe(200);
    await ops(t.app, 'operator').post('/wallet/resume', {});
  });

  const find = async (q: string) => {
    const res = await ops(t.app, 'reader').get(`/search?q=${encodeURIComponent(q)}`);
    expect(res.status).toBe(200);
    return (res.body.items as { kind: string; id: string; label: string; link: string }[]).map(
      (h) => `${h.kind} ${h.id} ${h.link} | ${h.label}`,
    );
  };

  it('finds each kind of record by its id, with its label and link', async () => {
    const committed = (
      await t.db.query<{ at: Date }>(
        `SELECT received_at AS at FROM callback_batches WHERE batch_id = 'se-b1'`,
      )
    ).rows[0].at.toISOString();
    expect(await find('se-b1')).toEqual([
      `batch se-b1 /callbacks/batches/se-b1 | batch se-b1: committed ${committed}, 1 coupon(s), 1 delivery attempt(s)`,
    ]);
    expect(await find('se-b2')).toEqual([
      'batch se-b2 /callbacks/batches/se-b2 | batch se-b2: not committed, 1 delivery attempt(s), 1 quarantined',
    ]);
    expect(await find('SE-1')).toEqual(['coupon SE-1 /coupons/SE-1 | coupon SE-1: se-p1, EUR, status 2 WIN']);
    expect(await find('se-bet-uuid-1')).toEqual([
      'bet se-bet-uuid-1 /coupons/SE-1 | bet se-bet-uuid-1 of coupon SE-1: status 2',
    ]);
    expect(await find('se-p1')).toEqual(['account se-p1 /accounts/se-p1 | account se-p1: 60.00 EUR']);
    expect(await find('se-')).toEqual(['account se-p1 /accounts/se-p1 | account se-p1: 60.00 EUR']);
    expect(await find('SE-1:0:final_credit')).toEqual([
      'operation SE-1:0:final_credit /callbacks/batches/se-b1 | final_credit 20.00 EUR on se-p1 (coupon SE-1), batch se-b1',
      `outbox ${outboxId} /wallet/outbox/${outboxId} | outbox row ${outboxId}: SE-1:0:final_credit to se-p1, parked (refused)`,
    ]);
    expect(await find('adjustment:se-dep-1')).toEqual([
      'operation adjustment:se-dep-1 /accounts/se-p1/statement | deposit 50.00 EUR on se-p1',
    ]);
    const attempt = (
      await t.db.query<{ id: string }>(
        `SELECT id::text FROM delivery_attempts WHERE request_id = 'se-req-delivery'`,
      )
    ).rows[0].id;
    expect(await find('se-req-delivery')).toEqual([
      `delivery ${attempt} /callbacks/batches/se-b1 | delivery attempt ${attempt}: processed 200, batch se-b1`,
    ]);
    const action = (
      await t.db.query<{ id: string }>(
        `SELECT id::text FROM operator_actions WHERE request_id = 'se-req-action'`,
      )
    ).rows[0].id;
    expect(await find('se-req-action')).toEqual([
      `operator_action ${action} /operator-actions?actor=operator&action=wallet_pause | wallet_pause by operator on wallet: ok`,
    ]);
  });

  it('finds a wallet delivery attempt by its request id', async () => {
    const { rows } = await t.db.query<{ id: string }>(
      `INSERT INTO wallet_delivery_attempts (outbox_id, attempt, request_id, connector, started_at, duration_ms, outcome, http_status)
       VALUES ($1, 1, 'se-req-wallet', 'http', now(), 12, 'refused', 422) RETURNING id::text`,
      [outboxId],
    );
    expect(await find('se-req-wallet')).toEqual([
      `wallet_attempt ${rows[0].id} /wallet/outbox/${outboxId} | wallet delivery attempt 1 of outbox row ${outboxId}: refused 422`,
    ]);
  });

  it('a number is looked up as an outbox, quarantine and inbox id', async () => {
    expect(await find(outboxId)).toContain(
      `outbox ${outboxId} /wallet/outbox/${outboxId} | outbox row ${outboxId}: SE-1:0:final_credit to se-p1, parked (refused)`,
    );
    expect(await find(quarantineId)).toContain(
      `quarantine ${quarantineId} /callbacks/quarantine/${quarantineId} | quarantined body ${quarantineId}: batch_conflict, batch se-b2, not replayed`,
    );
    expect(await find(inboxId)).toContain(
      `inbox ${inboxId} /callbacks/batches/se-b3 | inbox row ${inboxId}: pending, batch se-b3`,
    );
  });

  it('nothing found is an empty list; q is required and bounded; read scope only', async () => {
    expect(await find('no-such-id-anywhere')).toEqual([]);
    expectError(await ops(t.app, 'reader').get('/search'), 400, 'validation_failed');
    expectError(await ops(t.app, 'reader').get(`/search?q=${'x'.repeat(201)}`), 400, 'validation_failed');
    expectError(await ops(t.app, 'placement').get('/search?q=SE-1'), 403, 'insufficient_scope');
  });
});

describe('GET /overview and the delivery rollup (issue 30)', () => {
  const t = useTestApp({ DELIVERY_ROLLUP_INTERVAL: 'off' });

  /** Inserts `n` attempts of `outcome` received `ago` (an SQL interval) ago; @returns their minute. */
  const attempts = async (n: number, outcome: string, ago: string) => {
    const { rows } = await t.db.query<{ at: Date }>(
      `INSERT INTO delivery_attempts (batch_id, request_id, received_at, outcome, http_status, duration_ms)
       SELECT 'ov-' || g, 'ov-req-' || g, now() - $3::interval, $2, 200, 1 FROM generate_series(1, $1) g
       RETURNING received_at AS at`,
      [n, outcome, ago],
    );
    return Math.floor(rows[0].at.getTime() / 60_000) * 60_000;
  };

  it('counts deliveries per minute and outcome for the last hour and day, the same before and after the rollup', async () => {
    const tenMinutes = await attempts(3, 'processed', '10 minutes');
    await attempts(1, 'duplicate', '10 minutes');
    const threeHours = await attempts(2, 'rejected', '3 hours');
    await attempts(5, 'failed', '2 days');
    const now = await attempts(1, 'processed', '0 seconds');
    const check = async () => {
      const res = await ops(t.app, 'reader').get('/overview');
      expect(res.status).toBe(200);
      const { lastHour, lastDay } = res.body.deliveries;
      const at = (series: { from: string }, minute: number) => (minute - Date.parse(series.from)) / 60_000;
      expect({ minutes: lastHour.minutes, day: lastDay.minutes }).toEqual({ minutes: 60, day: 1440 });
      expect(lastHour.totals).toEqual({
        processed: 4,
        accepted: 0,
        duplicate: 1,
        conflict: 0,
        rejected: 0,
        unauthorized: 0,
        failed: 0,
      });
      expect(lastDay.totals).toEqual({ ...lastHour.totals, rejected: 2 });
      expect(lastHour.series.processed[at(lastHour, tenMinutes)]).toBe(3);
      expect(lastHour.series.duplicate[at(lastHour, tenMinutes)]).toBe(1);
      expect(lastDay.series.rejected[at(lastDay, threeHours)]).toBe(2);
      expect(lastHour.series.processed[at(lastHour, now)]).toBe(1);
      return res.body.deliveries.rolledUntil as string | null;
    };
    expect(await check()).toBeNull();
    const written = await t.app.get(DeliveryRollupJob).runOnce();
    expect(typeof written === 'number' && written >= 1435 && written <= 1440).toBe(true);
    const until = await check();
    expect(until).not.toBeNull();
    // A second run recounts the last minutes only, and changes no figure.
    const again = await t.app.get(DeliveryRollupJob).runOnce();
    expect(typeof again === 'number' && again <= 6).toBe(true);
    await check();
    const { rows } = await t.db.query<{ n: number }>(`SELECT sum(failed)::int AS n FROM delivery_minutes`);
    expect(rows[0].n).toBe(0);
  });

  it('shows flagged and unallocated coupons, quarantine, inbox and outbox backlogs', async () => {
    await deposit(t.app, 'ov-p1', '50.00');
    await register(t.app, 'OV-1', 'ov-p1', '10.00');
    await deliver(t.app, batchOf('ov-b1', { code: 'OV-1', status: 2, realWin: '20.00' }));
    await deliver(t.app, batchOf('ov-b2', { code: 'OV-1', status: 2, realWin: '21.00' }));
    await deliver(t.app, batchOf('ov-b3', { code: 'OV-9', status: 1 }));
    await quarantinedConflict(t, batchOf('ov-b4', { code: 'OV-4', status: 1 }));
    await pendingInboxRow(t, 'ov-b5', 'OV-5');
    await parkedOutboxRow(t, 'OV-1:0:final_credit');
    const res = await ops(t.app, 'reader').get('/overview');
    const { generatedAt, deliveries: _, ...rest } = res.body;
    expect(typeof generatedAt).toBe('string');
    expect(rest.quarantine.oldestNotReplayedAt).toEqual(expect.any(String));
    expect(rest.walletOutbox.oldestUndeliveredAgeSeconds).toBeGreaterThanOrEqual(0);
    expect(rest.inbox.oldestPendingAgeSeconds).toBeGreaterThanOrEqual(0);
    expect({
      ...rest,
      quarantine: { ...rest.quarantine, oldestNotReplayedAt: 'set' },
      inbox: { ...rest.inbox, oldestPendingAgeSeconds: 'set' },
      walletOutbox: { ...rest.walletOutbox, oldestUndeliveredAgeSeconds: 'set' },
    }).toEqual({
      coupons: { needsReview: 1, byReviewReason: { conflicting_result: 1 }, unallocated: 1 },
      quarantine: { notReplayed: 1, oldestNotReplayedAt: 'set' },
      inbox: { pending: 1, oldestPendingAgeSeconds: 'set' },
      walletOutbox: { paused: false, pending: 0, parked: 1, skipped: 0, oldestUndeliveredAgeSeconds: 'set' },
      // No EVENT_PUBLISHERS: no publisher to count.
      events: [],
    });
  });
});

describe('GET /overview and /search: settlement events (new-user report 2, medium 3)', () => {
  const scripted = scriptedPublishers('ev-a', 'ev-b');
  const t = useTestApp(
    { EVENT_PUBLISHERS: 'ev-a,ev-b', EVENT_POLL_INTERVAL_MS: '20' },
    { extensions: [scripted.module] },
  );
  const rowOf = async (publisher: string, key: string) =>
    (
      await t.db.query<{ id: string; status: string }>(
        `SELECT id::text, status FROM event_outbox WHERE publisher = $1 AND operation_key = $2`,
        [publisher, key],
      )
    ).rows[0];

  beforeAll(async () => {
    // ev-a paused: its events wait; ev-b refuses: its first event parks and holds the account's next.
    const paused = await ops(t.app, 'operator').post('/events/ev-a/pause', { reason: 'broker maintenance' });
    expect(paused.status).toBe(200);
    await deposit(t.app, 'ev-p1', '50.00');
    await register(t.app, 'EV-1', 'ev-p1', '10.00');
    await deliver(t.app, batchOf('ev-b1', { code: 'EV-1', status: 2, realWin: '20.00' }));
    await eventually(
      async () => (await rowOf('ev-b', 'EV-1:0:stake_debit'))?.status === 'parked',
      'the stake debit parked at ev-b',
    );
  });

  it('the overview counts each publisher: paused, pending, parked, the oldest undelivered age', async () => {
    const res = await ops(t.app, 'reader').get('/overview');
    expect(res.status).toBe(200);
    const events = res.body.events as { oldestUndeliveredAgeSeconds: number }[];
    for (const e of events) expect(e.oldestUndeliveredAgeSeconds).toBeGreaterThan(0);
    expect(events.map((e) => ({ ...e, oldestUndeliveredAgeSeconds: 'set' }))).toEqual([
      {
        publisher: 'ev-a',
        paused: true,
        pending: 2,
        parked: 0,
        skipped: 0,
        oldestUndeliveredAgeSeconds: 'set',
      },
      {
        publisher: 'ev-b',
        paused: false,
        pending: 1,
        parked: 1,
        skipped: 0,
        oldestUndeliveredAgeSeconds: 'set',
      },
    ]);
    expect(res.body.walletOutbox).toEqual({
      paused: false,
      pending: 0,
      parked: 0,
      skipped: 0,
      oldestUndeliveredAgeSeconds: 0,
    });
    // The same figures as the publishers' own status.
    const status = await ops(t.app, 'reader').get('/events/status');
    expect(status.body).toMatchObject([
      { publisher: 'ev-a', paused: true, pending: 2, parked: 0 },
      { publisher: 'ev-b', paused: false, pending: 1, parked: 1 },
    ]);
  });

  it('search finds an event row by its id and by its operation key, linked to its publisher', async () => {
    const find = async (q: string) => {
      const res = await ops(t.app, 'reader').get(`/search?q=${encodeURIComponent(q)}`);
      expect(res.status).toBe(200);
      return (res.body.items as { kind: string; id: string; label: string; link: string }[]).map(
        (h) => `${h.kind} ${h.id} ${h.link} | ${h.label}`,
      );
    };
    const a = (await rowOf('ev-a', 'EV-1:0:stake_debit')).id;
    const b = (await rowOf('ev-b', 'EV-1:0:stake_debit')).id;
    expect(await find(b)).toEqual([
      `event_outbox ${b} /events/ev-b/outbox/${b} | ev-b event row ${b}: EV-1:0:stake_debit of ev-p1, parked (refused)`,
    ]);
    expect(await find('EV-1:0:stake_debit')).toEqual([
      'operation EV-1:0:stake_debit /coupons/EV-1 | stake_debit 10.00 EUR on ev-p1 (coupon EV-1)',
      `event_outbox ${a} /events/ev-a/outbox/${a} | ev-a event row ${a}: EV-1:0:stake_debit of ev-p1, pending`,
      `event_outbox ${b} /events/ev-b/outbox/${b} | ev-b event row ${b}: EV-1:0:stake_debit of ev-p1, parked (refused)`,
    ]);
    // The link is the operators' endpoint of that row.
    const row = await ops(t.app, 'reader').get(`/events/ev-b/outbox/${b}`);
    expect(row.body).toMatchObject({ id: b, status: 'parked', parkedReason: 'refused' });
  });
});
