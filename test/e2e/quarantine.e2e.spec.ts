import request from 'supertest';
import {
  batchOf,
  deliver,
  deposit,
  expectError,
  operations,
  ops,
  pendingInboxRow,
  quarantinedConflict,
  register,
  useTestApp,
} from '../support/test-app.js';

// The quarantine endpoints (CONTRACT §8 on the partner API, §10): GET /callbacks/quarantine
// (bearer key, newest first, keyset pagination, bodies cut to a preview), GET …/{id} (the bytes),
// POST …/{id}/replay (parse + validate + apply; recorded on the entry and as a delivery attempt).

describe('quarantine endpoints', () => {
  const t = useTestApp();
  const bodies: string[] = [];
  beforeAll(async () => {
    await deposit(t.app, 'q-p1', '100.00');
    await register(t.app, 'Q-1', 'q-p1', '10.00');
    // Three signed bodies refused: malformed JSON, a schema violation, a conflicting batch.
    bodies.push('{"batchId":"q-bad-json",');
    expectError(await deliver(t.app, bodies[0]), 400, 'malformed_json');
    bodies.push(JSON.stringify({ batchId: 'q-invalid', couponCount: 2, coupons: [] }));
    expectError(await deliver(t.app, bodies[1]), 400, 'validation_failed');
    expect((await deliver(t.app, batchOf('q-b1', { code: 'Q-1', status: 2, realWin: '25.00' }))).status).toBe(
      200,
    );
    bodies.push(JSON.stringify(batchOf('q-b1', { code: 'Q-1', status: 2, realWin: '26.00' })));
    expectError(await deliver(t.app, bodies[2]), 409, 'batch_conflict');
  });

  it('lists entries newest first without their bodies (a 256-byte preview), paginated by cursor', async () => {
    const page1 = await ops(t.app).get('/callbacks/quarantine?limit=2');
    expect(page1.status).toBe(200);
    expect(
      page1.body.items.map((i: { batchId: string; reason: string; httpStatus: number }) => [
        i.batchId,
        i.reason,
        i.httpStatus,
      ]),
    ).toEqual([
      ['q-b1', 'batch_conflict', 409],
      ['q-invalid', 'validation_failed', 400],
    ]);
    const first = page1.body.items[0];
    expect(Object.keys(first).sort()).toEqual(
      [
        'bodyBytes',
        'bodyPreview',
        'batchId',
        'contentType',
        'details',
        'httpStatus',
        'id',
        'inboxId',
        'payloadHash',
        'reason',
        'receivedAt',
        'replayCount',
        'replayOutcome',
        'replayedAt',
        'replayedBy',
      ].sort(),
    );
    expect(first).toMatchObject({
      bodyBytes: Buffer.byteLength(bodies[2]),
      bodyPreview: bodies[2],
      replayCount: 0,
      replayOutcome: null,
      replayedAt: null,
      inboxId: null,
      contentType: 'application/json',
    });
    expect(page1.body.nextCursor).toBe(page1.body.items[1].id);
    const page2 = await ops(t.app).get(`/callbacks/quarantine?limit=2&cursor=${page1.body.nextCursor}`);
    expect(page2.body.items.map((i: { reason: string }) => i.reason)).toEqual(['malformed_json']);
    expect(page2.body.nextCursor).toBeNull();
  });

  it('cuts long bodies to a 256-byte preview in the list and shows the exact bytes by id', async () => {
    const long = JSON.stringify({ batchId: 'q-long', couponCount: 0, coupons: [], pad: 'x'.repeat(1000) });
    expectError(await deliver(t.app, long), 400, 'validation_failed');
    const list = await ops(t.app).get('/callbacks/quarantine?limit=1');
    const [entry] = list.body.items;
    expect({ batchId: entry.batchId, bodyBytes: entry.bodyBytes, preview: entry.bodyPreview }).toEqual({
      batchId: 'q-long',
      bodyBytes: long.length,
      preview: long.slice(0, 256),
    });
    const one = await ops(t.app).get(`/callbacks/quarantine/${entry.id}`);
    expect({ status: one.status, body: one.body.body, b64: one.body.bodyBase64 }).toEqual({
      status: 200,
      body: long,
      b64: Buffer.from(long).toString('base64'),
    });
  });

  it('answers a replay of a body that is still invalid with 422 replay_rejected and records it (entry stays quarantined)', async () => {
    const list = await ops(t.app).get('/callbacks/quarantine?limit=100');
    const invalid = list.body.items.find((i: { batchId: string }) => i.batchId === 'q-invalid');
    const res = await ops(t.app).post(`/callbacks/quarantine/${invalid.id}/replay`, {});
    expectError(res, 422, 'replay_rejected');
    expect(res.body.error.fields).toEqual(
      expect.arrayContaining([expect.objectContaining({ path: expect.stringMatching(/^coupon/) })]),
    );
    const malformed = list.body.items.find((i: { reason: string }) => i.reason === 'malformed_json');
    expectError(
      await ops(t.app).post(`/callbacks/quarantine/${malformed.id}/replay`, {}),
      422,
      'replay_rejected',
    );
    const after = await ops(t.app).get(`/callbacks/quarantine/${invalid.id}`);
    expect({
      outcome: after.body.replayOutcome,
      count: after.body.replayCount,
      at: typeof after.body.replayedAt,
    }).toEqual({ outcome: 'rejected', count: 1, at: 'string' });
    const { rows } = await t.db.query(
      `SELECT outcome, http_status, error_code FROM delivery_attempts WHERE request_id = $1`,
      [`quarantine-replay:${invalid.id}`],
    );
    expect(rows).toEqual([{ outcome: 'rejected', http_status: 422, error_code: 'replay_rejected' }]);
  });

  it('answers a replay of a conflicting body with 409 batch_conflict and moves no money', async () => {
    const list = await ops(t.app).get('/callbacks/quarantine?limit=100');
    const conflict = list.body.items.find((i: { batchId: string }) => i.batchId === 'q-b1');
    expectError(
      await ops(t.app).post(`/callbacks/quarantine/${conflict.id}/replay`, {}),
      409,
      'batch_conflict',
    );
    expectError(
      await ops(t.app).post(`/callbacks/quarantine/${conflict.id}/replay`, {}),
      409,
      'batch_conflict',
    );
    const after = await ops(t.app).get(`/callbacks/quarantine/${conflict.id}`);
    expect({ outcome: after.body.replayOutcome, count: after.body.replayCount }).toEqual({
      outcome: 'conflict',
      count: 2,
    });
    expect(await operations(t.app, 'Q-1')).toEqual(['Q-1:0:final_credit=25.00', 'Q-1:0:stake_debit=10.00']);
  });

  it('replays a body whose batch was never applied (inline mode): processed once, then duplicate', async () => {
    // A conflict whose first body is removed by an operator stands for "the cause is fixed".
    await register(t.app, 'Q-2', 'q-p1', '10.00');
    expect((await deliver(t.app, batchOf('q-b2', { code: 'Q-2', status: 1 }))).status).toBe(200);
    // Quarantined as a 409 because another body held the batch id, which is then removed.
    const entry = {
      id: await quarantinedConflict(t, batchOf('q-b2x', { code: 'Q-2', status: 2, realWin: '12.00' })),
    };
    const r1 = await ops(t.app).post(`/callbacks/quarantine/${entry.id}/replay`, {});
    const r2 = await ops(t.app).post(`/callbacks/quarantine/${entry.id}/replay`, {});
    expect([r1.status, r1.body.outcome, r2.status, r2.body.outcome, r2.body.entry.replayCount]).toEqual([
      200,
      'processed',
      200,
      'duplicate',
      2,
    ]);
    expect(await operations(t.app, 'Q-2')).toEqual(['Q-2:0:final_credit=12.00', 'Q-2:0:stake_debit=10.00']);
  });

  it('refuses a replay while pending inbox rows hold its coupons (409 coupon_inbox_pending, nothing recorded), applies it after them', async () => {
    await register(t.app, 'Q-5', 'q-p1', '10.00');
    const entry = {
      id: await quarantinedConflict(t, batchOf('q-b5', { code: 'Q-5', status: 2, realWin: '9.00' })),
    };

    // An earlier batch of Q-5 waits in the inbox (answered 200 before): the replay must not overtake it.
    await pendingInboxRow(t, 'q-b5-earlier', 'Q-5');
    const refused = await ops(t.app).post(`/callbacks/quarantine/${entry.id}/replay`, {});
    expectError(refused, 409, 'coupon_inbox_pending');
    expect(refused.body.error.message).toBe(
      "the inbox holds 1 pending batch(es) of this batch's coupons; replay after they are applied",
    );
    const unchanged = await ops(t.app).get(`/callbacks/quarantine/${entry.id}`);
    expect([unchanged.body.replayCount, unchanged.body.replayOutcome]).toEqual([0, null]);
    expect(await operations(t.app, 'Q-5')).toEqual(['Q-5:0:stake_debit=10.00']);
    const attempts = await t.db.query(
      `SELECT count(*)::int AS n FROM delivery_attempts WHERE request_id = $1`,
      [`quarantine-replay:${entry.id}`],
    );
    expect(attempts.rows[0].n).toBe(0);

    await t.db.query(`DELETE FROM callback_inbox WHERE batch_id = 'q-b5-earlier'`);
    const applied = await ops(t.app).post(`/callbacks/quarantine/${entry.id}/replay`, {});
    expect([applied.status, applied.body.outcome]).toEqual([200, 'processed']);
    expect(await operations(t.app, 'Q-5')).toEqual(['Q-5:0:final_credit=9.00', 'Q-5:0:stake_debit=10.00']);
  });

  it('applies a batch once when the same entry is replayed twice at the same time', async () => {
    await register(t.app, 'Q-3', 'q-p1', '10.00');
    const entry = {
      id: await quarantinedConflict(t, batchOf('q-b3', { code: 'Q-3', status: 2, realWin: '7.00' })),
    };
    const both = await Promise.all([
      ops(t.app).post(`/callbacks/quarantine/${entry.id}/replay`, {}),
      ops(t.app).post(`/callbacks/quarantine/${entry.id}/replay`, {}),
    ]);
    expect(both.map((r) => `${r.status} ${r.body.outcome}`).sort()).toEqual([
      '200 duplicate',
      '200 processed',
    ]);
    expect(await operations(t.app, 'Q-3')).toEqual(['Q-3:0:final_credit=7.00', 'Q-3:0:stake_debit=10.00']);
    const { rows } = await t.db.query(
      `SELECT outcome FROM delivery_attempts WHERE request_id = $1 ORDER BY id`,
      [`quarantine-replay:${entry.id}`],
    );
    expect(rows.map((r) => r.outcome)).toEqual(['processed', 'duplicate']);
  });

  it('needs the bearer key, validates limit and cursor, and answers 404 for unknown ids', async () => {
    const server = t.app.getHttpServer();
    expectError(await request(server).get('/callbacks/quarantine'), 401, 'unauthorized');
    expectError(await request(server).post('/callbacks/quarantine/1/replay'), 401, 'unauthorized');
    expectError(await ops(t.app).get('/callbacks/quarantine?limit=0'), 400, 'validation_failed');
    expectError(await ops(t.app).get('/callbacks/quarantine?limit=201'), 400, 'validation_failed');
    expectError(await ops(t.app).get('/callbacks/quarantine?cursor=abc'), 400, 'validation_failed');
    expectError(await ops(t.app).get('/callbacks/quarantine?other=1'), 400, 'validation_failed');
    expectError(await ops(t.app).get('/callbacks/quarantine/999999'), 404, 'not_found');
    expectError(await ops(t.app).post('/callbacks/quarantine/999999/replay', {}), 404, 'not_found');
    expectError(await ops(t.app).post('/callbacks/quarantine/abc/replay', {}), 404, 'not_found');
  });

  it('documents the endpoints in Swagger with examples', async () => {
    const doc = (await request(t.app.getHttpServer()).get('/docs-json')).body;
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/callbacks/quarantine',
        '/callbacks/quarantine/{id}',
        '/callbacks/quarantine/{id}/replay',
        '/callbacks/inbox',
      ]),
    );
    const replay = doc.paths['/callbacks/quarantine/{id}/replay'].post;
    expect(Object.keys(replay.responses).sort()).toEqual([
      '200',
      '401',
      '403',
      '404',
      '409',
      '422',
      '429',
      '503',
    ]);
    expect(replay.responses['200'].content['application/json'].example.outcome).toBe('processed');
  });
});
