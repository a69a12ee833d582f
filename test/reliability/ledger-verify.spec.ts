import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import pg from 'pg';
import { LedgerCheck } from '../../src/core/ledger/ledger-verifier.js';
import {
  balance,
  batchOf,
  createTestApp,
  deliver,
  deposit,
  register,
  TestContext,
  useTestApp,
} from '../support/test-app.js';
import { eventually } from '../support/wait.js';
import { requireBuild, verifyLedger, violationsOf } from './support/receiver.js';

// `npm run ledger:verify` and LedgerVerifier (CONTRACT §7, §8): clean on a database the receiver
// wrote, and each forged row (balance, missing/extra entry, missing/extra operation, malformed
// key, batch without delivery record) is named, with exit code 1 from the CLI.

const CLI = resolve(process.cwd(), 'dist/src/core/ledger/verify-cli.js');

/** Runs the built CLI against `url`; returns exit code and stdout. */
function runCli(url: string): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI], {
    env: { PATH: process.env.PATH, DATABASE_URL: url },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('ledger:verify (CONTRACT §7)', () => {
  let t: TestContext;
  let url: string;
  let forger: pg.Client;

  /** Runs `sql` with triggers off (the ledger is append-only), in one transaction. */
  async function forge(sql: string, params: unknown[] = []): Promise<void> {
    await forger.query('BEGIN');
    await forger.query('SET LOCAL session_replication_role = replica');
    await forger.query(sql, params);
    await forger.query('COMMIT');
  }

  /**
   * Forges a balanced final_credit `key` of coupon V1 (generation `generation`) paying `amount` to
   * p-ver from the house, with both ledger entries and both balances moved.
   */
  async function forgeCredit(key: string, generation: number, amount: string): Promise<void> {
    await forge(
      `WITH o AS (INSERT INTO financial_operations (operation_key, type, coupon_code, generation, account_id, amount, currency)
                  VALUES ($1, 'final_credit', 'V1', $2, 'p-ver', $3, 'EUR') RETURNING id)
       INSERT INTO ledger_entries (operation_id, account_id, amount)
       SELECT id, 'p-ver', $3::numeric FROM o UNION ALL SELECT id, 'house:EUR', -$3::numeric FROM o`,
      [key, generation, amount],
    );
    await forge(
      `UPDATE accounts SET balance = balance + CASE id WHEN 'p-ver' THEN $1::numeric ELSE -$1::numeric END`,
      [amount],
    );
  }

  /** Takes back what {@link forgeCredit}`(key, …, amount)` forged. */
  async function unforgeCredit(key: string, amount: string): Promise<void> {
    await forge(
      `UPDATE accounts SET balance = balance - CASE id WHEN 'p-ver' THEN $1::numeric ELSE -$1::numeric END`,
      [amount],
    );
    await forge(
      `DELETE FROM ledger_entries WHERE operation_id IN (SELECT id FROM financial_operations WHERE operation_key = $1)`,
      [key],
    );
    await forge(`DELETE FROM financial_operations WHERE operation_key = $1`, [key]);
  }

  /** The violations of a V1 credit with an entry too few or too many, sorted. */
  const V1_CREDIT_UNBALANCED = [
    `${LedgerCheck.BALANCE_MISMATCH} p-ver`,
    `${LedgerCheck.LEDGER_UNBALANCED} ledger_entries`,
    `${LedgerCheck.OPERATION_UNBALANCED} V1:0:final_credit`,
  ];

  /** Puts a deleted `row` (every column, as `SELECT *` read it) back into `table` with {@link forge}. */
  async function restore(table: string, row: Record<string, unknown>): Promise<void> {
    const columns = Object.keys(row);
    await forge(
      `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')})`,
      Object.values(row),
    );
  }

  beforeAll(async () => {
    requireBuild();
    t = await createTestApp();
    url = t.config.database.databaseUrl as string;
    forger = new pg.Client({ connectionString: url });
    await forger.connect();
    await deposit(t.app, 'p-ver', '100.00');
    await register(t.app, 'V1', 'p-ver', '10.00');
    await register(t.app, 'V2', 'p-ver', '5.00');
    await register(t.app, 'V4', 'p-ver', '1.00');
    // V1: WIN 25.00. V2: WIN 8.00, recalculation with realWin 3.00 (generation 1).
    // V3: unregistered, settled. V4: WIN 4.00, then a conflicting 9.00 (needs review, not paid).
    const batches = [
      batchOf('vb-1', { code: 'V1', status: 2, realWin: '25.00' }),
      batchOf('vb-2', { code: 'V2', status: 2, realWin: '8.00' }),
      batchOf('vb-3', { code: 'V2', status: 15, realWin: '3.00' }),
      batchOf('vb-4', { code: 'V3', status: 2, realWin: '7.00' }),
      batchOf('vb-5', { code: 'V4', status: 2, realWin: '4.00' }),
      batchOf('vb-6', { code: 'V4', status: 2, realWin: '9.00' }),
      batchOf('vb-1', { code: 'V1', status: 2, realWin: '25.00' }),
    ];
    for (const b of batches) expect((await deliver(t.app, b)).status).toBe(200);
    // 100 - 10 - 5 - 1 + 25 + 8 - 8 + 3 + 4 = 116
    expect(await balance(t.app, 'p-ver')).toBe('116.00');
  });

  afterAll(async () => {
    await forger?.end();
    await t?.close();
  });

  it('a database written by the receiver is clean, with exact figures', async () => {
    const report = await verifyLedger(url);
    expect(report.violations).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.summary).toEqual({
      accounts: 2,
      // deposit, 3 stakes, V1 credit, V2 credit + debit + credit, V4 credit
      operations: 9,
      entries: 18,
      coupons: 4,
      registeredCoupons: 3,
      needsReviewCoupons: 1,
      batches: 6,
      deliveryAttempts: 7,
      entriesTotal: '0.00',
      playerBalances: '116.00',
    });
    const cli = runCli(url);
    expect(cli.code).toBe(0);
    expect(cli.stdout).toContain('ledger OK');
    expect(cli.stdout).toContain('financial operations 9, ledger entries 18 (sum 0.00)');
  });

  it('a forged balance → balance_mismatch, exit 1', async () => {
    await forge(`UPDATE accounts SET balance = balance + 0.01 WHERE id = 'p-ver'`);
    try {
      // The player's figure no longer matches its entries, and EUR's accounts no longer sum to 0.
      expect(violationsOf(await verifyLedger(url))).toEqual([
        `${LedgerCheck.BALANCE_MISMATCH} p-ver`,
        `${LedgerCheck.CURRENCY_UNBALANCED} EUR`,
      ]);
      const cli = runCli(url);
      expect(cli.code).toBe(1);
      expect(cli.stdout).toContain('balance_mismatch  p-ver: balance 116.01, entries sum to 116.00');
    } finally {
      await forge(`UPDATE accounts SET balance = balance - 0.01 WHERE id = 'p-ver'`);
    }
    expect((await verifyLedger(url)).ok).toBe(true);
  });

  it('a missing ledger entry → operation_unbalanced, ledger_unbalanced, balance_mismatch, exit 1', async () => {
    const { rows } = await forger.query(
      `SELECT e.* FROM ledger_entries e JOIN financial_operations o ON o.id = e.operation_id
       WHERE o.operation_key = 'V1:0:final_credit' AND e.account_id = 'p-ver'`,
    );
    expect(rows).toHaveLength(1);
    await forge(`DELETE FROM ledger_entries WHERE id = $1`, [rows[0].id]);
    try {
      expect(violationsOf(await verifyLedger(url)).sort()).toEqual(V1_CREDIT_UNBALANCED);
      const cli = runCli(url);
      expect(cli.code).toBe(1);
      expect(cli.stdout).toContain('operation_unbalanced  V1:0:final_credit: 1 entries summing to -25.00');
      expect(cli.stdout).toContain('ledger_unbalanced  ledger_entries: all entries sum to -25.00, not 0');
    } finally {
      await restore('ledger_entries', rows[0]);
    }
    expect((await verifyLedger(url)).ok).toBe(true);
  });

  it('an extra ledger entry → operation_unbalanced, ledger_unbalanced, balance_mismatch, exit 1', async () => {
    await forge(
      `INSERT INTO ledger_entries (operation_id, account_id, amount)
       SELECT id, 'p-ver', 25.00 FROM financial_operations WHERE operation_key = 'V1:0:final_credit'`,
    );
    try {
      expect(violationsOf(await verifyLedger(url)).sort()).toEqual(V1_CREDIT_UNBALANCED);
      const cli = runCli(url);
      expect(cli.code).toBe(1);
      expect(cli.stdout).toContain('operation_unbalanced  V1:0:final_credit: 3 entries summing to 25.00');
    } finally {
      await forge(
        `DELETE FROM ledger_entries WHERE id = (SELECT max(e.id) FROM ledger_entries e
           JOIN financial_operations o ON o.id = e.operation_id WHERE o.operation_key = 'V1:0:final_credit')`,
      );
    }
    expect((await verifyLedger(url)).ok).toBe(true);
  });

  it('an extra balanced operation (a second credit) → undecided_operation and coupon_settlement_mismatch', async () => {
    await forgeCredit('V1:0:final_credit_x', 0, '25.00');
    try {
      expect(violationsOf(await verifyLedger(url)).sort()).toEqual([
        `${LedgerCheck.COUPON_SETTLEMENT_MISMATCH} V1`,
        `${LedgerCheck.OPERATION_KEY_MALFORMED} V1:0:final_credit_x`,
      ]);
    } finally {
      await unforgeCredit('V1:0:final_credit_x', '25.00');
    }
    // Well-formed but undecided: generation 1 credit that no snapshot decided.
    await forgeCredit('V1:1:final_credit', 1, '2.00');
    try {
      const report = await verifyLedger(url);
      expect(violationsOf(report).sort()).toEqual([
        `${LedgerCheck.COUPON_SETTLEMENT_MISMATCH} V1`,
        `${LedgerCheck.UNDECIDED_OPERATION} V1:1:final_credit`,
      ]);
      expect(report.violations.find((v) => v.check === LedgerCheck.COUPON_SETTLEMENT_MISMATCH)?.detail).toBe(
        'callback credits minus debits 27.00, expected 25.00 (generation 0, settled for 25.00)',
      );
    } finally {
      await unforgeCredit('V1:1:final_credit', '2.00');
    }
    expect((await verifyLedger(url)).ok).toBe(true);
  });

  it('a missing operation (credit and its entries gone) → decided_operation_missing and coupon_settlement_mismatch', async () => {
    const { rows: op } = await forger.query(
      `SELECT * FROM financial_operations WHERE operation_key = 'V2:1:final_credit'`,
    );
    const { rows: entries } = await forger.query(`SELECT * FROM ledger_entries WHERE operation_id = $1`, [
      op[0].id,
    ]);
    await forge(`DELETE FROM ledger_entries WHERE operation_id = $1`, [op[0].id]);
    await forge(`DELETE FROM financial_operations WHERE id = $1`, [op[0].id]);
    await forge(`UPDATE accounts SET balance = balance - CASE id WHEN 'p-ver' THEN 3 ELSE -3 END`);
    try {
      const report = await verifyLedger(url);
      expect(violationsOf(report).sort()).toEqual([
        `${LedgerCheck.COUPON_SETTLEMENT_MISMATCH} V2`,
        `${LedgerCheck.DECIDED_OPERATION_MISSING} V2:1:final_credit`,
      ]);
      expect(report.violations.map((v) => v.detail).sort()).toEqual([
        'callback credits minus debits 0.00, expected 3.00 (generation 1, settled for 3.00)',
        'decided by batch vb-3 for 3.00, not in the ledger',
      ]);
      expect(runCli(url).code).toBe(1);
    } finally {
      await restore('financial_operations', op[0]);
      for (const e of entries) await restore('ledger_entries', e);
      await forge(`UPDATE accounts SET balance = balance + CASE id WHEN 'p-ver' THEN 3 ELSE -3 END`);
    }
    expect((await verifyLedger(url)).ok).toBe(true);
  });

  it('a committed batch without its delivery record → batch_without_delivery', async () => {
    const { rows } = await forger.query(
      `SELECT * FROM delivery_attempts WHERE batch_id = 'vb-4' AND outcome = 'processed'`,
    );
    expect(rows).toHaveLength(1);
    await forge(`DELETE FROM delivery_attempts WHERE id = $1`, [rows[0].id]);
    try {
      expect(violationsOf(await verifyLedger(url))).toEqual([`${LedgerCheck.BATCH_WITHOUT_DELIVERY} vb-4`]);
    } finally {
      await restore('delivery_attempts', rows[0]);
    }
    expect((await verifyLedger(url)).ok).toBe(true);
  });

  it('a coupon whose stake differs from its stake debit → stake_mismatch', async () => {
    await forge(`UPDATE coupons SET stake = 11.00 WHERE coupon_code = 'V1'`);
    try {
      expect(violationsOf(await verifyLedger(url))).toEqual([`${LedgerCheck.STAKE_MISMATCH} V1`]);
    } finally {
      await forge(`UPDATE coupons SET stake = 10.00 WHERE coupon_code = 'V1'`);
    }
    expect((await verifyLedger(url)).ok).toBe(true);
  });
});

describe('ledger:verify in inbox mode (CALLBACK_MODE=inbox)', () => {
  const t = useTestApp({ CALLBACK_MODE: 'inbox' });

  it('batches applied by the inbox workers (delivery attempt "accepted") verify clean', async () => {
    await deposit(t.app, 'p-inbox', '20.00');
    await register(t.app, 'IB1', 'p-inbox', '5.00');
    for (const b of [
      batchOf('ib-1', { code: 'IB1', status: 2, realWin: '9.00' }),
      batchOf('ib-2', { code: 'IB2', status: 4, realWin: '0' }),
    ]) {
      expect((await deliver(t.app, b)).status).toBe(200);
    }
    await eventually(
      async () => (await t.db.query(`SELECT count(*)::int AS n FROM callback_batches`)).rows[0].n === 2,
      'the inbox workers to apply both batches',
      { intervalMs: 100 },
    );
    expect(await balance(t.app, 'p-inbox')).toBe('24.00');
    const report = await verifyLedger(t.config.database.databaseUrl as string);
    expect(report.violations).toEqual([]);
    expect(report.summary.batches).toBe(2);
  });
});
