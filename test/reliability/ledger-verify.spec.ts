import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import pg from 'pg';
import { LedgerCheck } from '../../src/ledger/ledger-verifier.js';
import {
  balance,
  batchOf,
  createTestApp,
  deliver,
  deposit,
  register,
  TestContext,
} from '../support/test-app.js';
import { requireBuild, verifyLedger, violationsOf } from './support/receiver.js';

// `npm run ledger:verify` and LedgerVerifier (CONTRACT §7, §8): clean on a database the receiver
// wrote, and each forged row (balance, missing/extra entry, missing/extra operation, malformed
// key, batch without delivery record) is named, with exit code 1 from the CLI.

const CLI = resolve(process.cwd(), 'dist/src/ledger/verify-cli.js');

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

  beforeAll(async () => {
    requireBuild();
    t = await createTestApp();
    url = t.config.databaseUrl as string;
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
      expect(violationsOf(await verifyLedger(url))).toEqual([`${LedgerCheck.BALANCE_MISMATCH} p-ver`]);
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
      expect(violationsOf(await verifyLedger(url)).sort()).toEqual([
        `${LedgerCheck.BALANCE_MISMATCH} p-ver`,
        `${LedgerCheck.LEDGER_UNBALANCED} ledger_entries`,
        `${LedgerCheck.OPERATION_UNBALANCED} V1:0:final_credit`,
      ]);
      const cli = runCli(url);
      expect(cli.code).toBe(1);
      expect(cli.stdout).toContain('operation_unbalanced  V1:0:final_credit: 1 entries summing to -25.00');
      expect(cli.stdout).toContain('ledger_unbalanced  ledger_entries: all entries sum to -25.00, not 0');
    } finally {
      await forge(
        `INSERT INTO ledger_entries (id, operation_id, account_id, amount, created_at) VALUES ($1, $2, $3, $4, $5)`,
        [rows[0].id, rows[0].operation_id, rows[0].account_id, rows[0].amount, rows[0].created_at],
      );
    }
    expect((await verifyLedger(url)).ok).toBe(true);
  });

  it('an extra ledger entry → operation_unbalanced, ledger_unbalanced, balance_mismatch, exit 1', async () => {
    await forge(
      `INSERT INTO ledger_entries (operation_id, account_id, amount)
       SELECT id, 'p-ver', 25.00 FROM financial_operations WHERE operation_key = 'V1:0:final_credit'`,
    );
    try {
      expect(violationsOf(await verifyLedger(url)).sort()).toEqual([
        `${LedgerCheck.BALANCE_MISMATCH} p-ver`,
        `${LedgerCheck.LEDGER_UNBALANCED} ledger_entries`,
        `${LedgerCheck.OPERATION_UNBALANCED} V1:0:final_credit`,
      ]);
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
    await forge(`
      WITH o AS (INSERT INTO financial_operations (operation_key, type, coupon_code, generation, account_id, amount, currency)
                 VALUES ('V1:0:final_credit_x', 'final_credit', 'V1', 0, 'p-ver', 25.00, 'EUR') RETURNING id)
      INSERT INTO ledger_entries (operation_id, account_id, amount)
      SELECT id, 'p-ver', 25.00 FROM o UNION ALL SELECT id, 'house:EUR', -25.00 FROM o`);
    await forge(`UPDATE accounts SET balance = balance + CASE id WHEN 'p-ver' THEN 25 ELSE -25 END`);
    try {
      expect(violationsOf(await verifyLedger(url)).sort()).toEqual([
        `${LedgerCheck.COUPON_SETTLEMENT_MISMATCH} V1`,
        `${LedgerCheck.OPERATION_KEY_MALFORMED} V1:0:final_credit_x`,
      ]);
    } finally {
      await forge(`UPDATE accounts SET balance = balance - CASE id WHEN 'p-ver' THEN 25 ELSE -25 END`);
      await forge(`DELETE FROM ledger_entries WHERE operation_id IN
                     (SELECT id FROM financial_operations WHERE operation_key = 'V1:0:final_credit_x')`);
      await forge(`DELETE FROM financial_operations WHERE operation_key = 'V1:0:final_credit_x'`);
    }
    // Well-formed but undecided: generation 1 credit that no snapshot decided.
    await forge(`
      WITH o AS (INSERT INTO financial_operations (operation_key, type, coupon_code, generation, account_id, amount, currency)
                 VALUES ('V1:1:final_credit', 'final_credit', 'V1', 1, 'p-ver', 2.00, 'EUR') RETURNING id)
      INSERT INTO ledger_entries (operation_id, account_id, amount)
      SELECT id, 'p-ver', 2.00 FROM o UNION ALL SELECT id, 'house:EUR', -2.00 FROM o`);
    await forge(`UPDATE accounts SET balance = balance + CASE id WHEN 'p-ver' THEN 2 ELSE -2 END`);
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
      await forge(`UPDATE accounts SET balance = balance - CASE id WHEN 'p-ver' THEN 2 ELSE -2 END`);
      await forge(`DELETE FROM ledger_entries WHERE operation_id IN
                     (SELECT id FROM financial_operations WHERE operation_key = 'V1:1:final_credit')`);
      await forge(`DELETE FROM financial_operations WHERE operation_key = 'V1:1:final_credit'`);
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
      const o = op[0];
      await forge(
        `INSERT INTO financial_operations (id, operation_key, type, coupon_code, generation, account_id, amount, currency, batch_id, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        [
          o.id,
          o.operation_key,
          o.type,
          o.coupon_code,
          o.generation,
          o.account_id,
          o.amount,
          o.currency,
          o.batch_id,
          o.created_at,
        ],
      );
      for (const e of entries) {
        await forge(
          `INSERT INTO ledger_entries (id, operation_id, account_id, amount) VALUES ($1, $2, $3, $4)`,
          [e.id, e.operation_id, e.account_id, e.amount],
        );
      }
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
      const r = rows[0];
      await forge(
        `INSERT INTO delivery_attempts (id, batch_id, request_id, received_at, outcome, http_status, error_code, coupon_count, duration_ms, payload_hash)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        [
          r.id,
          r.batch_id,
          r.request_id,
          r.received_at,
          r.outcome,
          r.http_status,
          r.error_code,
          r.coupon_count,
          r.duration_ms,
          r.payload_hash,
        ],
      );
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
  let t: TestContext;

  beforeAll(async () => {
    t = await createTestApp({ CALLBACK_MODE: 'inbox' });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('batches applied by the inbox workers (delivery attempt "accepted") verify clean', async () => {
    await deposit(t.app, 'p-inbox', '20.00');
    await register(t.app, 'IB1', 'p-inbox', '5.00');
    for (const b of [
      batchOf('ib-1', { code: 'IB1', status: 2, realWin: '9.00' }),
      batchOf('ib-2', { code: 'IB2', status: 4, realWin: '0' }),
    ]) {
      expect((await deliver(t.app, b)).status).toBe(200);
    }
    for (let i = 0; i < 100; i++) {
      const { rows } = await t.db.query(`SELECT count(*)::int AS n FROM callback_batches`);
      if (rows[0].n === 2) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(await balance(t.app, 'p-inbox')).toBe('24.00');
    const report = await verifyLedger(t.config.databaseUrl as string);
    expect(report.violations).toEqual([]);
    expect(report.summary.batches).toBe(2);
  });
});
