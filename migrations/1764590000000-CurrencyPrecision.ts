import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every currency at its own precision (issue 17, CONTRACT §3): every money column becomes
 * `numeric(26,8)` (the 18 integer digits of `numeric(20,2)`, 8 fraction digits: BTC's satoshi) and
 * every currency column `varchar(8)` (codes of 3..8 of A-Z 0-9 such as `USDT`; the CHECK on
 * `accounts.currency` widened to match). `ALTER COLUMN ... TYPE` keeps every value exactly
 * (185.50 stays 185.50, scale only grows), one table rewrite each under an ACCESS EXCLUSIVE lock;
 * TypeORM would have dropped and re-added the currency columns. Every other CHECK (amount > 0,
 * amount <> 0, real_win >= 0...) is untouched. `down()` refuses when a value would not fit back.
 */
export class CurrencyPrecision1764590000000 implements MigrationInterface {
  name = 'CurrencyPrecision1764590000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE accounts
        DROP CONSTRAINT accounts_currency_check,
        ALTER COLUMN currency TYPE varchar(8),
        ALTER COLUMN balance TYPE numeric(26,8),
        ADD CONSTRAINT accounts_currency_check CHECK (currency ~ '^[A-Z0-9]{3,8}$')`);
    await q.query(`
      ALTER TABLE financial_operations
        ALTER COLUMN amount TYPE numeric(26,8),
        ALTER COLUMN currency TYPE varchar(8)`);
    await q.query(`ALTER TABLE ledger_entries ALTER COLUMN amount TYPE numeric(26,8)`);
    await q.query(`
      ALTER TABLE account_adjustments
        ALTER COLUMN amount TYPE numeric(26,8),
        ALTER COLUMN currency TYPE varchar(8),
        ALTER COLUMN balance_after TYPE numeric(26,8)`);
    await q.query(`
      ALTER TABLE coupons
        ALTER COLUMN stake TYPE numeric(26,8),
        ALTER COLUMN currency TYPE varchar(8),
        ALTER COLUMN real_win TYPE numeric(26,8),
        ALTER COLUMN settled_amount TYPE numeric(26,8)`);
    await q.query(`ALTER TABLE coupon_snapshots ALTER COLUMN real_win TYPE numeric(26,8)`);
    await q.query(`ALTER TABLE coupon_resolutions ALTER COLUMN real_win TYPE numeric(26,8)`);
  }

  async down(q: QueryRunner): Promise<void> {
    // numeric(20,2) would round a finer amount and char(3) would cut a longer code: refuse instead.
    const rows = (await q.query(`
      SELECT (SELECT count(*) FROM financial_operations WHERE min_scale(amount) > 2 OR length(currency) <> 3)
           + (SELECT count(*) FROM accounts WHERE min_scale(balance) > 2 OR length(currency) <> 3)
           + (SELECT count(*) FROM coupons WHERE min_scale(real_win) > 2 OR min_scale(settled_amount) > 2
                OR min_scale(stake) > 2 OR length(currency) <> 3)
           + (SELECT count(*) FROM coupon_snapshots WHERE min_scale(real_win) > 2)
           + (SELECT count(*) FROM coupon_resolutions WHERE min_scale(real_win) > 2) AS n`)) as {
      n: string;
    }[];
    if (Number(rows[0].n) > 0)
      throw new Error(
        `${rows[0].n} rows hold amounts finer than 2 digits or currency codes other than 3 letters`,
      );
    await q.query(`ALTER TABLE coupon_resolutions ALTER COLUMN real_win TYPE numeric(20,2)`);
    await q.query(`ALTER TABLE coupon_snapshots ALTER COLUMN real_win TYPE numeric(20,2)`);
    await q.query(`
      ALTER TABLE coupons
        ALTER COLUMN stake TYPE numeric(20,2),
        ALTER COLUMN currency TYPE char(3),
        ALTER COLUMN real_win TYPE numeric(20,2),
        ALTER COLUMN settled_amount TYPE numeric(20,2)`);
    await q.query(`
      ALTER TABLE account_adjustments
        ALTER COLUMN amount TYPE numeric(20,2),
        ALTER COLUMN currency TYPE char(3),
        ALTER COLUMN balance_after TYPE numeric(20,2)`);
    await q.query(`ALTER TABLE ledger_entries ALTER COLUMN amount TYPE numeric(20,2)`);
    await q.query(`
      ALTER TABLE financial_operations
        ALTER COLUMN amount TYPE numeric(20,2),
        ALTER COLUMN currency TYPE char(3)`);
    await q.query(`
      ALTER TABLE accounts
        DROP CONSTRAINT accounts_currency_check,
        ALTER COLUMN currency TYPE char(3),
        ALTER COLUMN balance TYPE numeric(20,2),
        ADD CONSTRAINT accounts_currency_check CHECK (currency ~ '^[A-Z]{3}$')`);
  }
}
