import { BulkActionWorker } from '../../src/operations/bulk-actions/bulk-action.worker.js';
import {
  balance,
  batchOf,
  deposit,
  expectError,
  ops,
  quarantinedConflict,
  quarantinedInvalid,
  register,
  startApp,
  TestContext,
  useTestApp,
} from '../support/test-app.js';
import { eventually } from '../support/wait.js';

// Issue 30 (docs/api.md#bulk-actions): plan with a count, run capped in the background in arrival
// order through the single action (same rules, an operator action per row), per-coupon and
// per-account order kept, watch, cancel, and a restart that resumes without redoing a row.

const OFF = { BULK_ACTION_POLL_INTERVAL: 'off', DELIVERY_ROLLUP_INTERVAL: 'off' };

/** Inserts a parked outbox row for the operation `key`. */
async function parkedOutboxRow(t: TestContext, key: string): Promise<string> {
  const { rows } = await t.db.query<{ id: string }>(
    `INSERT INTO wallet_outbox (operation_id, operation_key, account_id, status, parked_reason, parked_at)
     SELECT id, operation_key, account_id, 'parked', 'refused', now() FROM financial_operations WHERE operation_key = $1
     RETURNING id::text`,
    [key],
  );
  return rows[0].id;
}

const actionsOf = async (t: TestContext, bulkId: string) =>
  (
    await t.db.query<Record<string, unknown>>(
      `SELECT actor, action, target_kind, target_id, reason, request_id, outcome, details->>'outcome' AS result
         FROM operator_actions WHERE details->>'bulkActionId' = $1 OR (target_kind = 'bulk_action' AND target_id = $1)
        ORDER BY id`,
      [bulkId],
    )
  ).rows;

describe('bulk replay of quarantined bodies (issue 30)', () => {
  const t = useTestApp(OFF);
  const ids: string[] = [];

  beforeAll(async () => {
    await deposit(t.app, 'bq-p1', '50.00');
    await register(t.app, 'BQ-A', 'bq-p1', '10.00');
    ids.push(await quarantinedConflict(t, batchOf('bq-1', { code: 'BQ-A', status: 1 })));
    ids.push(await quarantinedInvalid(t, 'bq-2', 'BQ-B'));
    ids.push(await quarantinedConflict(t, batchOf('bq-3', { code: 'BQ-B', status: 2, realWin: '7.00' })));
    ids.push(await quarantinedConflict(t, batchOf('bq-4', { code: 'BQ-A', status: 2, realWin: '25.50' })));
  });

  it('plans without touching, runs in arrival order, and skips the later body of a coupon whose earlier one failed', async () => {
    const filter = { batchIdPrefix: 'bq-' };
    const plan = await ops(t.app, 'operator').post('/bulk-actions/plan', {
      kind: 'quarantine_replay',
      filter,
    });
    expect(plan.status).toBe(200);
    expect(plan.body).toEqual({
      kind: 'quarantine_replay',
      filter: { notReplayed: true, batchIdPrefix: 'bq-' },
      matched: 4,
      cap: 1000,
      wouldTouch: 4,
      sample: ids,
    });
    const capped = await ops(t.app, 'operator').post('/bulk-actions/plan', {
      kind: 'quarantine_replay',
      filter,
      cap: 3,
    });
    // The sample names only rows the run would take (report 2, finding 8).
    expect({
      wouldTouch: capped.body.wouldTouch,
      matched: capped.body.matched,
      sample: capped.body.sample,
    }).toEqual({ wouldTouch: 3, matched: 4, sample: ids.slice(0, 3) });
    const { rows: untouched } = await t.db.query(
      `SELECT sum(replay_count)::int AS n FROM quarantined_bodies`,
    );
    expect(untouched[0].n).toBe(0);

    const run = await ops(t.app, 'operator').post('/bulk-actions', {
      kind: 'quarantine_replay',
      filter,
      reason: 'bad deploy fixed',
    });
    expect(run.status).toBe(202);
    const id = run.body.id as string;
    expect(run.body).toEqual({
      id,
      kind: 'quarantine_replay',
      filter: { notReplayed: true, batchIdPrefix: 'bq-' },
      reason: 'bad deploy fixed',
      actor: 'operator',
      cap: 1000,
      total: 4,
      status: 'running',
      done: 0,
      skipped: 0,
      failed: 0,
      pending: 4,
      createdAt: run.body.createdAt,
      finishedAt: null,
      cancelledBy: null,
    });
    expect(await t.app.get(BulkActionWorker).runOnce()).toBe(4);

    const watched = await ops(t.app, 'reader').get(`/bulk-actions/${id}`);
    expect({
      status: watched.body.status,
      done: watched.body.done,
      skipped: watched.body.skipped,
      failed: watched.body.failed,
      pending: watched.body.pending,
    }).toEqual({ status: 'done', done: 2, skipped: 1, failed: 1, pending: 0 });
    expect(
      (watched.body.items as Record<string, unknown>[]).map(({ finishedAt: _, ...item }) => item),
    ).toEqual([
      {
        seq: 1,
        targetId: ids[0],
        outcome: 'done',
        code: 'processed',
        message: null,
        groupKeys: ['BQ-A'],
        attempts: 0,
      },
      {
        seq: 2,
        targetId: ids[1],
        outcome: 'failed',
        code: 'replay_rejected',
        message: 'the quarantined body is still refused: the batch does not match the contract',
        groupKeys: ['BQ-B'],
        attempts: 0,
      },
      {
        seq: 3,
        targetId: ids[2],
        outcome: 'skipped',
        code: 'blocked',
        message: 'row 2 of coupon BQ-B failed or was skipped first: its later rows keep their order',
        groupKeys: ['BQ-B'],
        attempts: 0,
      },
      {
        seq: 4,
        targetId: ids[3],
        outcome: 'done',
        code: 'processed',
        message: null,
        groupKeys: ['BQ-A'],
        attempts: 0,
      },
    ]);
    // The single action's rules and records: the win paid once, each replay an attempt and an operator action.
    expect(await balance(t.app, 'bq-p1')).toBe('65.50');
    const { rows: entries } = await t.db.query(
      `SELECT id::text, replay_count, replay_outcome, replayed_by FROM quarantined_bodies ORDER BY id`,
    );
    expect(entries).toEqual([
      { id: ids[0], replay_count: 1, replay_outcome: 'processed', replayed_by: 'operator' },
      { id: ids[1], replay_count: 1, replay_outcome: 'rejected', replayed_by: 'operator' },
      { id: ids[2], replay_count: 0, replay_outcome: null, replayed_by: null },
      { id: ids[3], replay_count: 1, replay_outcome: 'processed', replayed_by: 'operator' },
    ]);
    const request = `bulk-action:${id}`;
    expect(await actionsOf(t, id)).toEqual([
      {
        actor: 'operator',
        action: 'bulk_run',
        target_kind: 'bulk_action',
        target_id: id,
        reason: 'bad deploy fixed',
        request_id: expect.any(String),
        outcome: 'ok',
        result: null,
      },
      {
        actor: 'operator',
        action: 'replay',
        target_kind: 'quarantine',
        target_id: ids[0],
        reason: null,
        request_id: request,
        outcome: 'ok',
        result: 'processed',
      },
      {
        actor: 'operator',
        action: 'replay',
        target_kind: 'quarantine',
        target_id: ids[1],
        reason: null,
        request_id: request,
        outcome: 'replay_rejected',
        result: null,
      },
      {
        actor: 'operator',
        action: 'replay',
        target_kind: 'quarantine',
        target_id: ids[3],
        reason: null,
        request_id: request,
        outcome: 'ok',
        result: 'processed',
      },
    ]);
    const list = await ops(t.app, 'reader').get('/bulk-actions');
    expect(list.body.items.map((a: { id: string; status: string }) => `${a.id} ${a.status}`)).toEqual([
      `${id} done`,
    ]);
    const failedOnly = await ops(t.app, 'reader').get(`/bulk-actions/${id}?outcome=failed`);
    expect(failedOnly.body.items.map((i: { seq: number }) => i.seq)).toEqual([2]);
    const paged = await ops(t.app, 'reader').get(`/bulk-actions/${id}?limit=3`);
    expect(paged.body.nextCursor).toBe('3');
    const rest = await ops(t.app, 'reader').get(`/bulk-actions/${id}?limit=3&cursor=3`);
    expect({ seqs: rest.body.items.map((i: { seq: number }) => i.seq), next: rest.body.nextCursor }).toEqual({
      seqs: [4],
      next: null,
    });
  });

  it('refuses a read-only key, a filter field of another kind, a blank reason and a cap over the maximum', async () => {
    const body = { kind: 'quarantine_replay', filter: {}, reason: 'x' };
    expectError(await ops(t.app, 'reader').post('/bulk-actions/plan', body), 403, 'insufficient_scope');
    expectError(await ops(t.app, 'reader').post('/bulk-actions', body), 403, 'insufficient_scope');
    expectError(await ops(t.app, 'reader').post('/bulk-actions/1/cancel', {}), 403, 'insufficient_scope');
    expectError(
      await ops(t.app, 'operator').post('/bulk-actions', { ...body, filter: { parkedReason: 'refused' } }),
      400,
      'validation_failed',
    );
    expectError(
      await ops(t.app, 'operator').post('/bulk-actions', { ...body, reason: ' ' }),
      400,
      'validation_failed',
    );
    expectError(
      await ops(t.app, 'operator').post('/bulk-actions', { ...body, cap: 10_001 }),
      400,
      'validation_failed',
    );
    expectError(
      await ops(t.app, 'operator').post('/bulk-actions', { ...body, kind: 'delete' }),
      400,
      'validation_failed',
    );
    expectError(await ops(t.app, 'reader').get('/bulk-actions/999999'), 404, 'not_found');
    expectError(await ops(t.app, 'reader').get('/bulk-actions/abc'), 404, 'not_found');
  });
});

describe('bulk retry of parked outbox rows, and cancel (issue 30)', () => {
  const t = useTestApp(OFF);

  it('keeps per-account order: a row that cannot be retried blocks the later rows of its account only', async () => {
    await deposit(t.app, 'bo-a', '10.00', 'bo-dep-a1');
    await deposit(t.app, 'bo-a', '11.00', 'bo-dep-a2');
    await deposit(t.app, 'bo-b', '12.00', 'bo-dep-b1');
    const a1 = await parkedOutboxRow(t, 'adjustment:bo-dep-a1');
    const a2 = await parkedOutboxRow(t, 'adjustment:bo-dep-a2');
    const b1 = await parkedOutboxRow(t, 'adjustment:bo-dep-b1');
    const run = await ops(t.app, 'operator').post('/bulk-actions', {
      kind: 'outbox_retry',
      filter: { parkedReason: 'refused' },
      reason: 'wallet fixed',
    });
    expect(run.body.total).toBe(3);
    // Someone releases a1 by hand after the rows were frozen: the bulk retry of it is refused.
    expect((await ops(t.app, 'operator').post(`/wallet/outbox/${a1}/retry`, {})).status).toBe(200);
    expect(await t.app.get(BulkActionWorker).runOnce()).toBe(3);
    const watched = await ops(t.app, 'reader').get(`/bulk-actions/${run.body.id}`);
    expect(
      (watched.body.items as Record<string, unknown>[]).map((i) => [
        i.targetId,
        i.outcome,
        i.code,
        i.groupKeys,
      ]),
    ).toEqual([
      [a1, 'failed', 'outbox_entry_state', ['bo-a']],
      [a2, 'skipped', 'blocked', ['bo-a']],
      [b1, 'done', 'ok', ['bo-b']],
    ]);
    const { rows } = await t.db.query(
      `SELECT id::text, status, retried_by FROM wallet_outbox WHERE id = ANY($1::bigint[]) ORDER BY id`,
      [[a1, a2, b1]],
    );
    expect(rows).toEqual([
      { id: a1, status: 'pending', retried_by: 'operator' },
      { id: a2, status: 'parked', retried_by: null },
      { id: b1, status: 'pending', retried_by: 'operator' },
    ]);
    expect((await actionsOf(t, run.body.id)).map((a) => `${a.action} ${a.target_id} ${a.outcome}`)).toEqual([
      `bulk_run ${run.body.id} ok`,
      `outbox_retry ${a1} outbox_entry_state`,
      `outbox_retry ${b1} ok`,
    ]);
  });

  it('cancel stops before the next row; a second cancel is refused', async () => {
    const since = (await t.db.query<{ now: Date }>('SELECT now()')).rows[0].now.toISOString();
    await deposit(t.app, 'bc-a', '1.00', 'bc-dep-1');
    await deposit(t.app, 'bc-b', '1.00', 'bc-dep-2');
    await deposit(t.app, 'bc-c', '1.00', 'bc-dep-3');
    for (const key of ['bc-dep-1', 'bc-dep-2', 'bc-dep-3']) await parkedOutboxRow(t, `adjustment:${key}`);
    const run = await ops(t.app, 'operator').post('/bulk-actions', {
      kind: 'outbox_skip',
      filter: { accountId: 'bc-b' },
      reason: 'settled by hand',
    });
    expect(run.body.total).toBe(1);
    const all = await ops(t.app, 'operator').post('/bulk-actions', {
      kind: 'outbox_skip',
      filter: { parkedReason: 'refused', parkedFrom: since },
      reason: 'settled by hand',
      cap: 2,
    });
    expect(all.body.total).toBe(2);
    // Oldest first: the first bulk action's row, then one row of the second.
    expect(await t.app.get(BulkActionWorker).runOnce(2)).toBe(2);
    const cancelled = await ops(t.app, 'operator').post(`/bulk-actions/${all.body.id}/cancel`, {
      reason: 'enough',
    });
    expect(cancelled.status).toBe(200);
    expect({
      status: cancelled.body.status,
      cancelledBy: cancelled.body.cancelledBy,
      done: cancelled.body.done,
      pending: cancelled.body.pending,
    }).toEqual({ status: 'cancelled', cancelledBy: 'operator', done: 1, pending: 1 });
    expect(await t.app.get(BulkActionWorker).runOnce()).toBe(0);
    const { rows } = await t.db.query(
      `SELECT account_id, status, skip_reason FROM wallet_outbox WHERE account_id LIKE 'bc-%' ORDER BY id`,
    );
    expect(rows).toEqual([
      { account_id: 'bc-a', status: 'skipped', skip_reason: 'settled by hand' },
      { account_id: 'bc-b', status: 'skipped', skip_reason: 'settled by hand' },
      { account_id: 'bc-c', status: 'parked', skip_reason: null },
    ]);
    expectError(
      await ops(t.app, 'operator').post(`/bulk-actions/${all.body.id}/cancel`, {}),
      409,
      'bulk_action_state',
    );
    expect((await actionsOf(t, all.body.id)).map((a) => `${a.action} ${a.reason} ${a.outcome}`)).toEqual([
      'bulk_run settled by hand ok',
      'outbox_skip settled by hand ok',
      'bulk_cancel enough ok',
      'bulk_cancel null bulk_action_state',
    ]);
  });
});

describe('a restart in the middle of a bulk action (issue 30)', () => {
  const t = useTestApp(OFF);

  it('resumes where it stopped, never doing a row twice', async () => {
    const ids = [
      await quarantinedConflict(t, batchOf('br-1', { code: 'BR-1', status: 1 })),
      await quarantinedConflict(t, batchOf('br-2', { code: 'BR-2', status: 1 })),
      await quarantinedConflict(t, batchOf('br-3', { code: 'BR-1', status: 4, realWin: '0' })),
    ];
    const run = await ops(t.app, 'operator').post('/bulk-actions', {
      kind: 'quarantine_replay',
      filter: { batchIdPrefix: 'br-' },
      reason: 'restart test',
    });
    // A first process runs one row, then stops (a deploy).
    const first = await startApp(t.config);
    expect(await first.get(BulkActionWorker).runOnce(1)).toBe(1);
    await first.close();
    const between = await ops(t.app, 'reader').get(`/bulk-actions/${run.body.id}`);
    expect([between.body.status, between.body.done, between.body.pending, between.body.finishedAt]).toEqual([
      'running',
      1,
      2,
      null,
    ]);
    // The next process takes over.
    expect(await t.app.get(BulkActionWorker).runOnce()).toBe(2);
    // The last row's outcome ended the action in its own transaction: one now() for both.
    const { rows: ended } = await t.db.query(
      `SELECT b.status, b.finished_at = i.finished_at AS together FROM bulk_actions b
         JOIN bulk_action_items i ON i.bulk_action_id = b.id AND i.seq = 3 WHERE b.id = $1`,
      [run.body.id],
    );
    expect(ended).toEqual([{ status: 'done', together: true }]);
    const watched = await ops(t.app, 'reader').get(`/bulk-actions/${run.body.id}`);
    expect(
      watched.body.items.map((i: { outcome: string; code: string }) => `${i.outcome} ${i.code}`),
    ).toEqual(['done processed', 'done processed', 'done processed']);
    const { rows } = await t.db.query(
      `SELECT q.id::text, q.replay_count,
              (SELECT count(*)::int FROM delivery_attempts d WHERE d.request_id = 'quarantine-replay:' || q.id) AS attempts,
              (SELECT count(*)::int FROM operator_actions a WHERE a.action = 'replay' AND a.target_id = q.id::text) AS actions
         FROM quarantined_bodies q ORDER BY q.id`,
    );
    expect(rows).toEqual(ids.map((id) => ({ id, replay_count: 1, attempts: 1, actions: 1 })));
  });
});

describe('the bulk action worker in the background (issue 30)', () => {
  const t = useTestApp({ BULK_ACTION_POLL_INTERVAL: '50', DELIVERY_ROLLUP_INTERVAL: 'off' });

  it('runs a started bulk action to the end by itself', async () => {
    await quarantinedConflict(t, batchOf('bw-1', { code: 'BW-1', status: 1 }));
    const run = await ops(t.app, 'operator').post('/bulk-actions', {
      kind: 'quarantine_replay',
      filter: { quarantineReason: 'batch_conflict' },
      reason: 'background',
    });
    const done = await eventually(async () => {
      const res = await ops(t.app, 'reader').get(`/bulk-actions/${run.body.id}`);
      return res.body.status === 'done' && res.body;
    }, 'the bulk action done');
    expect({ done: done.done, failed: done.failed }).toEqual({ done: 1, failed: 0 });
  });
});
