import { batchOf, deposit, register, useTestApp, TestContext } from '../support/test-app.js';
import { eventually } from '../support/wait.js';

// docs/inbox-mode.md#workers (issue 31): a worker applies up to four due rows of disjoint coupons
// in one transaction, their postings in one posting statement; when that transaction fails its rows
// are applied one per transaction, where the failing one is counted alone.

/** Inserts pending inbox rows for `bodies` in ONE transaction: a worker sees them together. */
async function rowsTogether(t: TestContext, bodies: object[]): Promise<void> {
  const client = await t.db.connect();
  try {
    await client.query('BEGIN');
    for (const batch of bodies as { batchId: string; coupons: { coupon_code: string }[] }[]) {
      const body = JSON.stringify(batch);
      await client.query(
        `INSERT INTO callback_inbox (batch_id, payload_hash, coupon_count, coupon_codes, payload)
         VALUES ($1, encode(sha256($2), 'hex'), $3, $4, $2)`,
        [batch.batchId, Buffer.from(body), batch.coupons.length, batch.coupons.map((c) => c.coupon_code)],
      );
    }
    await client.query('COMMIT');
  } finally {
    client.release();
  }
}

interface InboxRow {
  batch_id: string;
  status: string;
  outcome: string | null;
  attempts: number;
  finished_at: Date | null;
}

async function settled(t: TestContext, batchIds: string[]): Promise<InboxRow[]> {
  return eventually(
    async () => {
      const { rows } = await t.db.query<InboxRow>(
        `SELECT batch_id, status, outcome, attempts, finished_at FROM callback_inbox
        WHERE batch_id = ANY($1::text[]) ORDER BY id`,
        [batchIds],
      );
      return rows.length === batchIds.length && rows.every((r) => r.status !== 'pending') && rows;
    },
    `inbox rows ${batchIds.join(', ')} settled`,
  );
}

const balanceOf = async (t: TestContext, account: string) =>
  (await t.db.query<{ b: string }>(`SELECT balance::text AS b FROM accounts WHERE id = $1`, [account]))
    .rows[0]?.b;

describe('inbox rows applied together (issue 31)', () => {
  // One worker, so that the four rows are claimed by one claim.
  const t = useTestApp({
    CALLBACK_MODE: 'inbox',
    INBOX_CONCURRENCY: '1',
    INBOX_POLL_INTERVAL_MS: '20',
    INBOX_RETRY_BASE_MS: '10',
    INBOX_MAX_ATTEMPTS: '3',
  });

  it('four due rows of four coupons: one transaction, one posting, each coupon credited once', async () => {
    for (let i = 0; i < 4; i++) {
      await deposit(t.app, `it-${i}`, '10.00');
      await register(t.app, `IT${i}`, `it-${i}`, '1.00');
    }
    const ids = [0, 1, 2, 3].map((i) => `it-b-${i}`);
    await rowsTogether(
      t,
      ids.map((id, i) => batchOf(id, { code: `IT${i}`, status: 2, realWin: `${i + 2}.50` })),
    );
    const rows = await settled(t, ids);
    expect(rows.map((r) => [r.batch_id, r.status, r.outcome, r.attempts])).toEqual(
      ids.map((id) => [id, 'done', 'processed', 0]),
    );
    // now() is the transaction's start: rows finished in one transaction share it.
    expect(new Set(rows.map((r) => r.finished_at?.toISOString())).size).toBe(1);
    expect(await Promise.all([0, 1, 2, 3].map((i) => balanceOf(t, `it-${i}`)))).toEqual([
      '11.50000000',
      '12.50000000',
      '13.50000000',
      '14.50000000',
    ]);
    const { rows: ops } = await t.db.query<{ key: string }>(
      `SELECT operation_key AS key FROM financial_operations WHERE coupon_code LIKE 'IT%' AND type = 'final_credit' ORDER BY 1`,
    );
    expect(ops.map((o) => o.key)).toEqual([0, 1, 2, 3].map((i) => `IT${i}:0:final_credit`));
  });

  it('a posting that fails the common transaction: the rows again one by one, the failing one counted alone', async () => {
    for (let i = 0; i < 3; i++) {
      await deposit(t.app, `iu-${i}`, '10.00');
      await register(t.app, `IU${i}`, `iu-${i}`, '1.00');
    }
    // A foreign operation holds the key IU1's final credit will use: its posting fails (RL409).
    await t.db.query(
      `INSERT INTO accounts (id, kind, currency) VALUES ('rogue-iu', 'player', 'EUR') ON CONFLICT (id) DO NOTHING`,
    );
    await t.db.query(
      `INSERT INTO financial_operations (operation_key, type, coupon_code, generation, account_id, amount, currency)
       VALUES ('IU1:0:final_credit', 'final_credit', 'IU1', 0, 'rogue-iu', '99.00', 'EUR')`,
    );
    const ids = [0, 1, 2].map((i) => `iu-b-${i}`);
    await rowsTogether(
      t,
      ids.map((id, i) => batchOf(id, { code: `IU${i}`, status: 2, realWin: '3.00' })),
    );
    const rows = await settled(t, ids);
    expect(rows.map((r) => [r.batch_id, r.status, r.outcome])).toEqual([
      ['iu-b-0', 'done', 'processed'],
      ['iu-b-1', 'quarantined', 'failed'],
      ['iu-b-2', 'done', 'processed'],
    ]);
    // Applied one per transaction after the common one failed.
    expect(rows[0].finished_at?.toISOString()).not.toBe(rows[2].finished_at?.toISOString());
    expect(await Promise.all([0, 1, 2].map((i) => balanceOf(t, `iu-${i}`)))).toEqual([
      '12.00000000',
      '9.00000000',
      '12.00000000',
    ]);
    const { rows: q } = await t.db.query<{ reason: string }>(
      `SELECT q.reason FROM quarantined_bodies q JOIN callback_inbox i ON i.id = q.inbox_id WHERE i.batch_id = 'iu-b-1'`,
    );
    expect(q).toHaveLength(1);
  });
});
