import { BACKFILL } from '../../migrations/1796402000000-OperatorConsole.js';
import { FakeSportApi, startFakeSportApi } from '../support/fake-sportapi.js';
import {
  balance,
  batchOf,
  createTestApp,
  deliver,
  deposit,
  expectError,
  ops,
  quarantinedConflict,
  register,
  TestContext,
} from '../support/test-app.js';

// Issue 30 (docs/api.md#operator-actions): every action taken with a key of scope money or operate
// is logged, with key, action, target, reason, request id and outcome, in the action's own
// transaction; a refusal after the rollback with its error code (and no money moves); a key that
// only registers is not logged. The log is append-only, listed newest first and filtered, and the
// migration backfilled it from the actor columns.

interface ActionRow {
  actor: string;
  action: string;
  target_kind: string | null;
  target_id: string | null;
  reason: string | null;
  request_id: string | null;
  outcome: string;
  details: Record<string, unknown>;
}

describe('operator actions (issue 30)', () => {
  let t: TestContext;
  let api: FakeSportApi;
  beforeAll(async () => {
    api = await startFakeSportApi();
    t = await createTestApp({
      SPORTAPI_BASE_URL: api.url,
      RECONCILE_INTERVAL: 'off',
      BULK_ACTION_POLL_INTERVAL: 'off',
      DELIVERY_ROLLUP_INTERVAL: 'off',
    });
  });
  afterAll(async () => {
    await t.close();
    await api.close();
  });

  /** The actions logged since id `after`, oldest first. */
  const logged = async (after = '0'): Promise<ActionRow[]> =>
    (
      await t.db.query<ActionRow>(
        `SELECT actor, action, target_kind, target_id, reason, request_id, outcome, details
           FROM operator_actions WHERE id > $1 ORDER BY id`,
        [after],
      )
    ).rows;
  const lastId = async () =>
    (await t.db.query<{ id: string }>(`SELECT coalesce(max(id), 0)::text AS id FROM operator_actions`))
      .rows[0].id;

  it('an adjustment: one row with key, target, reason, request id and amounts; its replay too', async () => {
    const res = await ops(t.app, 'cashier')
      .post(
        '/accounts/oa-p1/adjustments',
        { amount: '100.00', currency: 'EUR', reason: 'cashier deposit' },
        { 'idempotency-key': 'oa-dep-1' },
      )
      .set('x-request-id', 'oa-req-1');
    expect(res.status).toBe(201);
    const again = await ops(t.app, 'cashier').post(
      '/accounts/oa-p1/adjustments',
      { amount: '100.00', currency: 'EUR', reason: 'cashier deposit' },
      { 'idempotency-key': 'oa-dep-1' },
    );
    expect(again.headers['idempotent-replayed']).toBe('true');
    const rows = await logged();
    const details = {
      idempotencyKey: 'oa-dep-1',
      operationKey: 'adjustment:oa-dep-1',
      amount: '100.00',
      currency: 'EUR',
      balance: '100.00',
    };
    expect(rows).toEqual([
      {
        actor: 'cashier',
        action: 'adjustment',
        target_kind: 'account',
        target_id: 'oa-p1',
        reason: 'cashier deposit',
        request_id: 'oa-req-1',
        outcome: 'ok',
        details: { ...details, replayed: false },
      },
      {
        actor: 'cashier',
        action: 'adjustment',
        target_kind: 'account',
        target_id: 'oa-p1',
        reason: 'cashier deposit',
        request_id: expect.any(String),
        outcome: 'ok',
        details: { ...details, replayed: true },
      },
    ]);
  });

  it('a refused adjustment writes its outcome row after the rollback, and moves no money', async () => {
    const before = await lastId();
    const res = await ops(t.app, 'cashier')
      .post(
        '/accounts/oa-p1/adjustments',
        { amount: '-500.00', currency: 'EUR', reason: 'too much' },
        { 'idempotency-key': 'oa-wd-1' },
      )
      .set('x-request-id', 'oa-req-2');
    expectError(res, 422, 'insufficient_funds');
    expect(await balance(t.app, 'oa-p1')).toBe('100.00');
    const { rows: ops_ } = await t.db.query(
      `SELECT 1 FROM financial_operations WHERE operation_key = 'adjustment:oa-wd-1'`,
    );
    expect(ops_).toEqual([]);
    expect(await logged(before)).toEqual([
      {
        actor: 'cashier',
        action: 'adjustment',
        target_kind: 'account',
        target_id: 'oa-p1',
        reason: 'too much',
        request_id: 'oa-req-2',
        outcome: 'insufficient_funds',
        details: {
          idempotencyKey: 'oa-wd-1',
          operationKey: 'adjustment:oa-wd-1',
          amount: '-500.00',
          currency: 'EUR',
        },
      },
    ]);
  });

  it('a registration is logged for a key that also holds money or operate, not for one that only registers', async () => {
    const before = await lastId();
    await register(t.app, 'OA-1', 'oa-p1', '10.00'); // the bare key: every scope
    expect(
      (
        await ops(t.app, 'placement').post('/coupons', {
          coupon_code: 'OA-2',
          accountId: 'oa-p1',
          stake: '1.00',
          currency: 'EUR',
        })
      ).status,
    ).toBe(201);
    expect(await logged(before)).toEqual([
      {
        actor: 'key-1',
        action: 'registration',
        target_kind: 'coupon',
        target_id: 'OA-1',
        reason: null,
        request_id: expect.any(String),
        outcome: 'ok',
        details: { accountId: 'oa-p1', stake: '10.00', currency: 'EUR', created: true },
      },
    ]);
  });

  it('resolution, reconcile, replay, outbox retry and skip, pause and resume: one row each, refusals with their code', async () => {
    const before = await lastId();
    // A flagged coupon, resolved.
    expect(
      (await deliver(t.app, batchOf('oa-b1', { code: 'OA-1', status: 2, realWin: '20.00' }))).status,
    ).toBe(200);
    expect(
      (await deliver(t.app, batchOf('oa-b2', { code: 'OA-1', status: 2, realWin: '22.00' }))).status,
    ).toBe(200);
    const resolution = await ops(t.app, 'operator').post(
      '/coupons/OA-1/resolution',
      { realWin: '22.00', reason: 'SportAPI confirmed 22.00', resolvedBy: 'alice' },
      { 'idempotency-key': 'oa-res-1' },
    );
    expect(resolution.status).toBe(201);
    const notFlagged = await ops(t.app, 'operator').post(
      '/coupons/OA-2/resolution',
      { realWin: '1.00', reason: 'nothing to resolve', resolvedBy: 'alice' },
      { 'idempotency-key': 'oa-res-2' },
    );
    expectError(notFlagged, 409, 'coupon_not_flagged');
    // Reconcile read from SportAPI.
    api.serve({ coupon_code: 'OA-2', status: 4, realWin: '0', events: [] });
    expect((await ops(t.app, 'operator').post('/coupons/OA-2/reconcile', {})).status).toBe(200);
    expectError(
      await ops(t.app, 'operator').post('/coupons/OA-404/reconcile', {}),
      404,
      'sportapi_coupon_not_found',
    );
    // A quarantine replay, then an unknown entry.
    const q = await quarantinedConflict(t, batchOf('oa-b3', { code: 'OA-3', status: 1 }));
    expect((await ops(t.app, 'operator').post(`/callbacks/quarantine/${q}/replay`, {})).status).toBe(200);
    expectError(
      await ops(t.app, 'operator').post('/callbacks/quarantine/999999/replay', {}),
      404,
      'not_found',
    );
    // The outbox: a parked row retried, another skipped, and a retry refused.
    const { rows: parked } = await t.db.query<{ id: string }>(
      `INSERT INTO wallet_outbox (operation_id, operation_key, account_id, status, parked_reason, parked_at)
       SELECT id, operation_key, account_id, 'parked', 'refused', now() FROM financial_operations
        WHERE operation_key IN ('OA-1:0:final_credit', 'adjustment:oa-dep-1') ORDER BY id
       RETURNING id::text`,
    );
    const [skipRow, retryRow] = parked.map((r) => r.id);
    expect((await ops(t.app, 'operator').post(`/wallet/outbox/${retryRow}/retry`, {})).status).toBe(200);
    expectError(
      await ops(t.app, 'operator').post(`/wallet/outbox/${retryRow}/retry`, {}),
      409,
      'outbox_entry_state',
    );
    expect(
      (await ops(t.app, 'operator').post(`/wallet/outbox/${skipRow}/skip`, { reason: 'paid by hand' }))
        .status,
    ).toBe(200);
    expect((await ops(t.app, 'operator').post('/wallet/pause', { reason: 'maintenance' })).status).toBe(200);
    expect((await ops(t.app, 'operator').post('/wallet/resume', {})).status).toBe(200);

    const rows = await logged(before);
    expect(rows.map((r) => [r.actor, r.action, r.target_kind, r.target_id, r.reason, r.outcome])).toEqual([
      ['operator', 'resolution', 'coupon', 'OA-1', 'SportAPI confirmed 22.00', 'ok'],
      ['operator', 'resolution', 'coupon', 'OA-2', 'nothing to resolve', 'coupon_not_flagged'],
      ['operator', 'reconcile', 'coupon', 'OA-2', null, 'ok'],
      ['operator', 'reconcile', 'coupon', 'OA-404', null, 'sportapi_coupon_not_found'],
      ['operator', 'replay', 'quarantine', q, null, 'ok'],
      ['operator', 'replay', 'quarantine', '999999', null, 'not_found'],
      ['operator', 'outbox_retry', 'outbox', retryRow, null, 'ok'],
      ['operator', 'outbox_retry', 'outbox', retryRow, null, 'outbox_entry_state'],
      ['operator', 'outbox_skip', 'outbox', skipRow, 'paid by hand', 'ok'],
      ['operator', 'wallet_pause', 'wallet', null, 'maintenance', 'ok'],
      ['operator', 'wallet_resume', 'wallet', null, null, 'ok'],
    ]);
    expect(rows[0].details).toEqual({
      idempotencyKey: 'oa-res-1',
      resolvedBy: 'alice',
      realWin: '22.00',
      batchId: resolution.body.resolution.batchId,
      transition: 'resettled',
      generation: 1,
      replayed: false,
    });
    expect(rows[2].details).toEqual({
      outcome: 'applied',
      batchId: expect.stringMatching(/^poll:OA-2:[0-9a-f]{64}$/),
      transition: 'settled',
    });
    expect(rows[4].details).toEqual({ batchId: 'oa-b3', outcome: 'processed' });
    expect(rows[6].details).toEqual({
      operationKey: 'OA-1:0:final_credit',
      accountId: 'oa-p1',
      amount: '20.00',
      currency: 'EUR',
    });
  });

  it('GET /operator-actions: newest first, filtered by key, action, target and time, keyset-paginated', async () => {
    const all = await ops(t.app, 'reader').get('/operator-actions?limit=200');
    expect(all.status).toBe(200);
    const ids = (all.body.items as { id: string }[]).map((a) => Number(a.id));
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    expect(all.body.nextCursor).toBeNull();
    const actions = async (query: string) =>
      (
        (await ops(t.app, 'reader').get(`/operator-actions?${query}`)).body.items as {
          action: string;
          targetId: string;
        }[]
      ).map((a) => `${a.action} ${a.targetId}`);
    expect(await actions('actor=cashier&action=adjustment')).toEqual([
      'adjustment oa-p1',
      'adjustment oa-p1',
      'adjustment oa-p1',
    ]);
    expect(await actions('targetKind=coupon&targetId=OA-2')).toEqual(['reconcile OA-2', 'resolution OA-2']);
    expect(await actions('action=wallet_pause')).toEqual(['wallet_pause null']);
    expect(await actions('from=2999-01-01T00:00:00Z')).toEqual([]);
    expect(await actions('to=2000-01-01T00:00:00Z')).toEqual([]);
    const first = await ops(t.app, 'reader').get('/operator-actions?limit=2');
    expect(first.body.nextCursor).toBe(first.body.items[1].id);
    const second = await ops(t.app, 'reader').get(
      `/operator-actions?limit=2&cursor=${first.body.nextCursor}`,
    );
    expect(second.body.items.map((a: { id: string }) => Number(a.id))).toEqual(ids.slice(2, 4));
    expect((await ops(t.app, 'reader').get(`/operator-actions?cursor=${ids[ids.length - 1]}`)).body).toEqual({
      items: [],
      nextCursor: null,
    });
    for (const bad of [
      'action=delete',
      'cursor=x',
      'limit=0',
      'limit=201',
      'from=yesterday',
      'targetKind=table',
    ])
      expectError(await ops(t.app, 'reader').get(`/operator-actions?${bad}`), 400, 'validation_failed');
    expectError(await ops(t.app, 'placement').get('/operator-actions'), 403, 'insufficient_scope');
  });

  it('is append-only', async () => {
    await expect(t.db.query(`UPDATE operator_actions SET outcome = 'ok'`)).rejects.toThrow(
      'operator_actions is append-only',
    );
    await expect(t.db.query(`DELETE FROM operator_actions`)).rejects.toThrow(
      'operator_actions is append-only',
    );
  });

  it('the migration backfilled the history of the actor columns, marked as such', async () => {
    await deposit(t.app, 'oa-p9', '1.00'); // the bare key also moved money: it is an operator's key
    // The log as the migration would have written it from the columns kept today.
    const client = await t.db.connect();
    try {
      await client.query('BEGIN');
      await client.query('TRUNCATE operator_actions');
      await client.query(BACKFILL);
      const { rows } = await client.query<ActionRow>(
        `SELECT actor, action, target_kind, target_id, reason, outcome, details FROM operator_actions ORDER BY id`,
      );
      await client.query('ROLLBACK');
      const summary = rows.map((r) => [
        r.actor,
        r.action,
        r.target_kind,
        r.target_id,
        r.outcome,
        r.details.backfilled,
      ]);
      expect(summary).toEqual(
        expect.arrayContaining([
          ['cashier', 'adjustment', 'account', 'oa-p1', 'ok', true],
          ['key-1', 'registration', 'coupon', 'OA-1', 'ok', true],
          ['operator', 'resolution', 'coupon', 'OA-1', 'ok', true],
          ['operator', 'reconcile', 'coupon', 'OA-2', 'ok', true],
          ['operator', 'outbox_skip', 'outbox', expect.any(String), 'ok', true],
          ['operator', 'outbox_retry', 'outbox', expect.any(String), 'ok', true],
          ['operator', 'wallet_resume', 'wallet', null, 'ok', true],
        ]),
      );
      // The key that only registers is not taken for an operator; every replay has its attempt.
      expect(summary.filter((r) => r[0] === 'placement')).toEqual([]);
      expect(summary.filter((r) => r[1] === 'replay').map((r) => r[4])).toEqual(['ok']);
      expect(rows.find((r) => r.action === 'adjustment')?.details).toEqual({
        idempotencyKey: 'oa-dep-1',
        operationKey: 'adjustment:oa-dep-1',
        amount: '100.00',
        currency: 'EUR',
        backfilled: true,
      });
    } finally {
      client.release();
    }
  });
});
