import pg from 'pg';
import { DataSource } from 'typeorm';
import { MIGRATIONS } from '../../migrations/index.js';
import { CurrencyPrecision1764590000000 } from '../../migrations/1764590000000-CurrencyPrecision.js';
import { CurrencyTable } from '../../src/platform/common/currency.js';
import { buildDataSourceOptions } from '../../src/platform/database/data-source-options.js';
import { LedgerVerifier } from '../../src/core/ledger/ledger-verifier.js';
import { createDatabaseMigratedTo, withClient } from '../support/database.js';

// Issue 17: the migration to numeric(26,8) and varchar(8) keeps a database of 2-digit amounts
// exactly (CONTRACT §7: money is decimal, never rounded), sums and ledger invariants included.

const BEFORE = MIGRATIONS.indexOf(CurrencyPrecision1764590000000);

/** The data a receiver of the 2-digit schema wrote: a deposit, a stake, a WIN of 185.50. */
const TWO_DIGIT_DATA = `
  INSERT INTO accounts (id, kind, currency, balance) VALUES ('p-mig', 'player', 'EUR', 275.50), ('house:EUR', 'house', 'EUR', -275.50);
  INSERT INTO callback_batches (batch_id, payload_hash, coupon_count, payload) VALUES ('b-mig', repeat('a', 64), 1, '\\x7b7d');
  INSERT INTO delivery_attempts (batch_id, received_at, outcome, http_status, coupon_count, duration_ms, payload_hash)
    VALUES ('b-mig', now(), 'processed', 200, 1, 5, repeat('a', 64));
  INSERT INTO financial_operations (id, operation_key, type, coupon_code, generation, account_id, amount, currency, batch_id) VALUES
    (1, 'adjustment:dep-mig', 'deposit', NULL, NULL, 'p-mig', 100.00, 'EUR', NULL),
    (2, 'MIG1:0:stake_debit', 'stake_debit', 'MIG1', 0, 'p-mig', 10.00, 'EUR', NULL),
    (3, 'MIG1:0:final_credit', 'final_credit', 'MIG1', 0, 'p-mig', 185.50, 'EUR', 'b-mig');
  INSERT INTO ledger_entries (operation_id, account_id, amount) VALUES
    (1, 'p-mig', 100.00), (1, 'house:EUR', -100.00), (2, 'p-mig', -10.00), (2, 'house:EUR', 10.00),
    (3, 'p-mig', 185.50), (3, 'house:EUR', -185.50);
  INSERT INTO account_adjustments (idempotency_key, account_id, request_hash, amount, currency, reason, operation_id, balance_after)
    VALUES ('dep-mig', 'p-mig', repeat('b', 64), 100.00, 'EUR', 'cashier deposit', 1, 100.00);
  INSERT INTO coupons (coupon_code, account_id, stake, currency, registration_hash, registered_at, status, real_win,
                       settlement_generation, generation_settled, settled_amount)
    VALUES ('MIG1', 'p-mig', 10.00, 'EUR', repeat('c', 64), now(), 2, 185.50, 0, true, 185.50);
  INSERT INTO coupon_snapshots (coupon_code, batch_id, status, real_win, applied, transition, generation, operations, payload)
    VALUES ('MIG1', 'b-mig', 2, 185.50, true, 'settled', 0, '[{"type":"final_credit","generation":0,"amount":"185.50"}]', '{}');
  INSERT INTO coupon_resolutions (idempotency_key, coupon_code, request_hash, status, real_win, reason, resolved_by, batch_id, transition, generation, operations)
    VALUES ('res-mig', 'MIG1', repeat('d', 64), 2, 185.50, 'checked', 'ops', 'b-mig', 'same_result', 0, '[]');`;

/** Every money and currency column: table.column → [type, value as text] of the one row asked for. */
async function moneyColumns(c: pg.Client): Promise<Record<string, [string, string]>> {
  const cells: [string, string][] = [
    ['accounts', `id = 'p-mig'`],
    ['financial_operations', `id = 3`],
    ['ledger_entries', `operation_id = 3 AND account_id = 'house:EUR'`],
    ['account_adjustments', `idempotency_key = 'dep-mig'`],
    ['coupons', `coupon_code = 'MIG1'`],
    ['coupon_snapshots', `coupon_code = 'MIG1'`],
    ['coupon_resolutions', `idempotency_key = 'res-mig'`],
  ];
  const out: Record<string, [string, string]> = {};
  for (const [table, where] of cells) {
    const { rows: columns } = await c.query<{ name: string; type: string }>(
      `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type FROM pg_attribute a
       WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped
         AND (format_type(a.atttypid, NULL) = 'numeric' OR a.attname = 'currency') ORDER BY a.attnum`,
      [table],
    );
    for (const { name, type } of columns) {
      const { rows } = await c.query<{ v: string }>(`SELECT ${name}::text AS v FROM ${table} WHERE ${where}`);
      out[`${table}.${name}`] = [type, rows[0].v];
    }
  }
  return out;
}

describe('migration CurrencyPrecision (issue 17) on a database holding 2-digit data', () => {
  let url: string;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    ({ url, drop } = await createDatabaseMigratedTo(BEFORE));
    await withClient(url, (c) => c.query(TWO_DIGIT_DATA));
  });

  afterAll(() => drop());

  async function migrate(direction: 'up' | 'down'): Promise<void> {
    // This migration's up and down only: later migrations are not this test's subject.
    const ds = await new DataSource({
      ...buildDataSourceOptions(url, undefined, 2),
      migrations: MIGRATIONS.slice(0, BEFORE + 1),
    }).initialize();
    try {
      if (direction === 'up') await ds.runMigrations({ transaction: 'each' });
      else await ds.undoLastMigration({ transaction: 'each' });
    } finally {
      await ds.destroy();
    }
  }

  it('keeps every amount exactly, widens the types, and the ledger verifies clean', async () => {
    const before = await withClient(url, moneyColumns);
    expect(before['accounts.balance']).toEqual(['numeric(20,2)', '275.50']);
    expect(before['accounts.currency']).toEqual(['character(3)', 'EUR']);
    await migrate('up');
    const after = await withClient(url, moneyColumns);
    expect(after).toEqual({
      'accounts.currency': ['character varying(8)', 'EUR'],
      'accounts.balance': ['numeric(26,8)', '275.50000000'],
      'financial_operations.amount': ['numeric(26,8)', '185.50000000'],
      'financial_operations.currency': ['character varying(8)', 'EUR'],
      'ledger_entries.amount': ['numeric(26,8)', '-185.50000000'],
      'account_adjustments.amount': ['numeric(26,8)', '100.00000000'],
      'account_adjustments.currency': ['character varying(8)', 'EUR'],
      'account_adjustments.balance_after': ['numeric(26,8)', '100.00000000'],
      'coupons.stake': ['numeric(26,8)', '10.00000000'],
      'coupons.currency': ['character varying(8)', 'EUR'],
      'coupons.real_win': ['numeric(26,8)', '185.50000000'],
      'coupons.settled_amount': ['numeric(26,8)', '185.50000000'],
      'coupon_snapshots.real_win': ['numeric(26,8)', '185.50000000'],
      'coupon_resolutions.real_win': ['numeric(26,8)', '185.50000000'],
    });
    // Each value equals its 2-digit original as a number too (185.50 stays 185.50), sums unchanged.
    const sums = await withClient(url, (c) =>
      c.query(`SELECT (SELECT sum(amount) FROM ledger_entries)::text AS total,
                      (SELECT sum(amount) FROM ledger_entries WHERE account_id = 'p-mig') = 275.50 AS player,
                      (SELECT balance FROM accounts WHERE id = 'house:EUR') = -275.50 AS house,
                      (SELECT amount FROM financial_operations WHERE id = 3) = 185.50 AS credit,
                      (SELECT array_agg(amount::text ORDER BY id) FROM financial_operations) AS amounts`),
    );
    expect(sums.rows[0]).toEqual({
      total: '0.00000000',
      player: true,
      house: true,
      credit: true,
      amounts: ['100.00000000', '10.00000000', '185.50000000'],
    });
    const report = await withClient(url, (c) => new LedgerVerifier(c, CurrencyTable.of()).verify());
    expect(report.violations).toEqual([]);
    expect([report.summary.entriesTotal, report.summary.playerBalances]).toEqual(['0.00', '275.50']);
  });

  it('keeps the CHECKs: amounts still > 0 and <> 0, currencies of 3..8 of A-Z 0-9 now', async () => {
    await withClient(url, async (c) => {
      await c.query(`INSERT INTO accounts (id, kind, currency) VALUES ('house:USDT', 'house', 'USDT')`);
      for (const bad of [
        `INSERT INTO accounts (id, kind, currency) VALUES ('house:us', 'house', 'us')`,
        `INSERT INTO accounts (id, kind, currency) VALUES ('house:ABCDEFGHI', 'house', 'ABCDEFGHI')`,
        `INSERT INTO financial_operations (operation_key, type, account_id, amount, currency) VALUES ('adjustment:z', 'deposit', 'p-mig', 0, 'EUR')`,
        `INSERT INTO ledger_entries (operation_id, account_id, amount) VALUES (1, 'p-mig', 0)`,
        `UPDATE coupons SET real_win = -0.00000001 WHERE coupon_code = 'MIG1'`,
      ])
        await expect(c.query(bad)).rejects.toThrow(/violates check constraint|value too long/);
      // 8 fraction digits are held exactly; a 9th would be rounded by numeric(26,8), which the
      // receiver never sends (MAX_MINOR_UNITS = 8).
      const { rows } = await c.query(`SELECT 0.00012345::numeric(26,8)::text AS v`);
      expect(rows[0].v).toBe('0.00012345');
    });
  });

  it('down() refuses while a finer amount or a longer code is stored, and restores 2-digit data exactly', async () => {
    await expect(migrate('down')).rejects.toThrow(/rows hold amounts finer than 2 digits or currency codes/);
    await withClient(url, (c) => c.query(`DELETE FROM accounts WHERE id = 'house:USDT'`));
    await migrate('down');
    const restored = await withClient(url, moneyColumns);
    expect(restored['accounts.balance']).toEqual(['numeric(20,2)', '275.50']);
    expect(restored['coupons.currency']).toEqual(['character(3)', 'EUR']);
    expect(restored['coupon_resolutions.real_win']).toEqual(['numeric(20,2)', '185.50']);
    await migrate('up');
    expect((await withClient(url, moneyColumns))['accounts.balance']).toEqual([
      'numeric(26,8)',
      '275.50000000',
    ]);
  });
});
