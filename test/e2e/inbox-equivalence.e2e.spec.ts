import { buildSequence } from '../../sim/generate.js';
import { batchOf, createTestApp, deliver, expectError, ops, TestContext } from '../support/test-app.js';
import { eventually } from '../support/wait.js';

// Inline and inbox modes are two schedules of the same apply step (CONTRACT §4, §6, §7): for
// one delivery sequence they must end in exactly the same coupons, bets, snapshots, operations,
// ledger entries and balances. The sequence is the simulator's seeded generator (intermediate,
// final, recalculation, same-state and redelivered batches), with some coupons registered only
// after their callbacks (unallocated, §7) and a conflicting body (409).

/** Every table a batch writes, without ids and timestamps, in a stable order. */
const DUMPS = {
  coupons: `SELECT coupon_code, account_id, stake, currency, registration_hash, status, real_win,
                   settlement_generation, generation_settled, settled_amount, recalculation_open,
                   needs_review, review_reason, last_batch_id
              FROM coupons ORDER BY coupon_code`,
  bets: `SELECT coupon_code, uuid, status, payload, last_batch_id FROM bets ORDER BY coupon_code, uuid`,
  snapshots: `SELECT coupon_code, batch_id, status, real_win, applied, transition, generation, operations, payload
                FROM coupon_snapshots ORDER BY coupon_code, id`,
  batches: `SELECT batch_id, payload_hash, coupon_count, payload FROM callback_batches ORDER BY batch_id`,
  operations: `SELECT operation_key, type, coupon_code, generation, account_id, amount, currency, batch_id
                 FROM financial_operations ORDER BY operation_key`,
  entries: `SELECT o.operation_key, e.account_id, e.amount
              FROM ledger_entries e JOIN financial_operations o ON o.id = e.operation_id
             ORDER BY o.operation_key, e.account_id`,
  accounts: `SELECT id, kind, currency, balance FROM accounts ORDER BY id`,
} as const;

async function dump(t: TestContext): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const [name, sql] of Object.entries(DUMPS)) out[name] = (await t.db.query(sql)).rows;
  return out;
}

describe('inline and inbox modes end identically for one delivery sequence', () => {
  const { files, manifest } = buildSequence({
    seed: 20261130,
    coupons: 40,
    batches: 14,
    maxBatchSize: 12,
    prefix: 'eq',
  });
  // Every fifth coupon is registered only after all deliveries (its callbacks arrive unallocated).
  const late = new Set(manifest.coupons.filter((_, i) => i % 5 === 0).map((c) => c.coupon_code));
  const apps: Record<'inline' | 'inbox', TestContext | undefined> = { inline: undefined, inbox: undefined };

  beforeAll(async () => {
    apps.inline = await createTestApp({ CALLBACK_MODE: 'inline' });
    apps.inbox = await createTestApp({
      CALLBACK_MODE: 'inbox',
      INBOX_POLL_INTERVAL_MS: '20',
      INBOX_CONCURRENCY: '4',
    });
  });
  afterAll(async () => {
    await apps.inline?.close();
    await apps.inbox?.close();
  });

  async function play(t: TestContext, inbox: boolean): Promise<string[]> {
    for (const a of manifest.accounts) {
      const res = await ops(t.app).post(
        `/accounts/${a.id}/adjustments`,
        { amount: a.deposit, currency: a.currency, reason: 'equivalence deposit' },
        { 'idempotency-key': a.depositKey },
      );
      expect(res.status).toBe(201);
    }
    const register = async (c: (typeof manifest.coupons)[number]) => {
      const res = await ops(t.app).post('/coupons', {
        coupon_code: c.coupon_code,
        accountId: c.accountId,
        stake: c.stake,
        currency: c.currency,
      });
      expect([200, 201]).toContain(res.status);
    };
    for (const c of manifest.coupons) if (!late.has(c.coupon_code)) await register(c);
    const answers: string[] = [];
    for (const f of files) {
      const res = await deliver(t.app, f.bytes);
      answers.push(`${f.file} ${res.status} ${JSON.stringify(res.body)}`);
    }
    // A different body under an existing batch id: 409 in both modes.
    const conflict = await deliver(
      t.app,
      batchOf(files[0].batchId, { code: manifest.coupons[0].coupon_code, status: 2, realWin: '1.00' }),
    );
    expectError(conflict, 409, 'batch_conflict');
    if (inbox) {
      const unfinished = async () =>
        (await t.db.query(`SELECT count(*)::int AS n FROM callback_inbox WHERE status <> 'done'`)).rows[0].n;
      await eventually(async () => (await unfinished()) === 0, 'the inbox to drain', { timeoutMs: 20_000 });
      // Every new batch id went through the inbox, once.
      const { rows } = await t.db.query(
        `SELECT count(*)::int AS n FROM callback_inbox WHERE outcome = 'processed'`,
      );
      expect(rows[0].n).toBe(files.filter((f) => f.kind !== 'redelivery').length);
    }
    for (const c of manifest.coupons) if (late.has(c.coupon_code)) await register(c);
    return answers;
  }

  it('answers every delivery the same way and ends with equal partner-API views and table contents', async () => {
    const inline = apps.inline as TestContext;
    const inbox = apps.inbox as TestContext;
    expect(manifest.stats.redeliveries).toBeGreaterThan(0);
    expect(
      manifest.stats.recalculationsWithRealWin + manifest.stats.recalculationsWithoutRealWin,
    ).toBeGreaterThan(0);
    expect(late.size).toBe(8);

    const answersInline = await play(inline, false);
    const answersInbox = await play(inbox, true);
    expect(answersInbox).toEqual(answersInline);
    expect(answersInline.filter((a) => a.includes('"duplicate":true'))).toHaveLength(
      manifest.stats.redeliveries,
    );

    const views = async (t: TestContext) => ({
      coupons: await Promise.all(
        manifest.coupons.map(async (c) => (await ops(t.app).get(`/coupons/${c.coupon_code}`)).body),
      ),
      accounts: await Promise.all(
        manifest.accounts.map(async (a) => (await ops(t.app).get(`/accounts/${a.id}`)).body),
      ),
    });
    const viewInline = await views(inline);
    expect(await views(inbox)).toEqual(viewInline);
    // The balances are those the simulator's model predicts for this sequence.
    expect(viewInline.accounts.map((a: { balance: string }) => a.balance)).toEqual(
      manifest.accounts.map((a) => a.expectedBalance),
    );

    const dumpInline = await dump(inline);
    expect(dumpInline.operations.length).toBeGreaterThan(manifest.coupons.length);
    expect(await dump(inbox)).toEqual(dumpInline);
  }, 120_000);
});
