import { ErrorCode } from '../../src/platform/common/domain.exception.js';
import { TransactionRunner } from '../../src/platform/database/transaction.js';
import { LedgerException } from '../../src/core/ledger/ledger.exception.js';
import { LedgerCheck, LedgerVerifier } from '../../src/core/ledger/ledger-verifier.js';
import { LedgerService } from '../../src/core/ledger/ledger.service.js';
import { OperationType, Posting } from '../../src/core/ledger/ledger.types.js';
import { MetricsRegistry } from '../../src/platform/observability/metrics-registry.js';
import { deposit, useTestApp } from '../support/test-app.js';

// CONTRACT §7: LedgerService is the only way money moves. Its one posting statement is checked
// here directly (the HTTP paths that use it are covered by the partner API and callback tests):
// results, idempotent keys, key collisions, account and currency checks, the funds check in the
// order of the postings, and metrics counted only after COMMIT.

const credit = (key: string, accountId: string, amount: string, currency = 'EUR'): Posting => ({
  key,
  type: OperationType.FINAL_CREDIT,
  accountId,
  currency,
  amount,
  couponCode: key.split(':')[0],
  generation: Number(key.split(':')[1]),
});
const debit = (key: string, accountId: string, amount: string, requireFunds = true): Posting => ({
  key,
  type: OperationType.STAKE_DEBIT,
  accountId,
  currency: 'EUR',
  amount,
  couponCode: key.split(':')[0],
  generation: 0,
  requireFunds,
});

describe('LedgerService: one posting statement (CONTRACT §7)', () => {
  const t = useTestApp();
  let ledger: LedgerService;
  let transactions: TransactionRunner;

  beforeAll(async () => {
    ledger = t.app.get(LedgerService);
    transactions = t.app.get(TransactionRunner);
    await deposit(t.app, 'lg-a', '20.00');
  });

  const post = (postings: Posting[]) => transactions.run((tx) => ledger.post(tx, postings));
  const ledgerState = async (account: string) =>
    (
      await t.db.query<{ balance: string; entries: string; ops: number; total: string }>(
        `SELECT (SELECT balance::text FROM accounts WHERE id = $1) AS balance,
                (SELECT coalesce(sum(amount), 0)::text FROM ledger_entries WHERE account_id = $1) AS entries,
                (SELECT count(*)::int FROM financial_operations WHERE account_id = $1) AS ops,
                (SELECT sum(amount)::text FROM ledger_entries) AS total`,
        [account],
      )
    ).rows[0];
  const refusal = (p: Promise<unknown>) =>
    p.then(
      () => undefined,
      (err: unknown) => err,
    );
  /** Asserts that `p` fails with a LedgerException of `code` (and exactly `message` when given). */
  const expectRefused = async (p: Promise<unknown>, code: ErrorCode, message?: string) => {
    const err = await refusal(p);
    expect(err).toBeInstanceOf(LedgerException);
    expect((err as LedgerException).code).toBe(code);
    if (message !== undefined) expect((err as Error).message).toBe(message);
  };

  it('posts new operations: ids by key, balances after, two entries each, the ledger sums to zero', async () => {
    const result = await post([
      credit('LG1:0:final_credit', 'lg-a', '5.50'),
      debit('LG2:0:stake_debit', 'lg-a', '3.25'),
    ]);
    expect([...result.inserted.keys()]).toEqual(['LG1:0:final_credit', 'LG2:0:stake_debit']);
    expect([...result.inserted.values()].every((id) => /^\d+$/.test(id))).toBe(true);
    expect(result.types).toEqual([OperationType.FINAL_CREDIT, OperationType.STAKE_DEBIT]);
    expect(result.balances).toEqual(new Map([['lg-a', '22.25000000']]));
    expect(await ledgerState('lg-a')).toEqual({
      balance: '22.25000000',
      entries: '22.25000000',
      ops: 3,
      total: '0.00000000',
    });
    const house = await t.db.query(`SELECT balance::text FROM accounts WHERE id = 'house:EUR'`);
    expect(house.rows).toEqual([{ balance: '-22.25000000' }]);
  });

  it('the same operation again inserts nothing and moves nothing', async () => {
    const result = await post([credit('LG1:0:final_credit', 'lg-a', '5.50')]);
    expect(result.inserted.size).toBe(0);
    expect(result.types).toEqual([]);
    expect(result.balances).toEqual(new Map([['lg-a', '22.25000000']]));
    expect(await ledgerState('lg-a')).toEqual({
      balance: '22.25000000',
      entries: '22.25000000',
      ops: 3,
      total: '0.00000000',
    });
  });

  it('a key that names another operation: OPERATION_KEY_COLLISION, nothing written', async () => {
    await expectRefused(
      post([credit('LG9:0:final_credit', 'lg-a', '1.00'), credit('LG1:0:final_credit', 'lg-a', '5.51')]),
      ErrorCode.OPERATION_KEY_COLLISION,
      'operation key collision on LG1:0:final_credit: the stored operation differs',
    );
    expect(await ledgerState('lg-a')).toEqual({
      balance: '22.25000000',
      entries: '22.25000000',
      ops: 3,
      total: '0.00000000',
    });
  });

  it('an account that does not exist: NOT_FOUND; another currency: CURRENCY_MISMATCH', async () => {
    await expectRefused(
      post([credit('LG3:0:final_credit', 'lg-nobody', '1.00')]),
      ErrorCode.NOT_FOUND,
      'account lg-nobody does not exist',
    );
    await expectRefused(
      post([credit('LG3:0:final_credit', 'lg-a', '1.00', 'USD')]),
      ErrorCode.CURRENCY_MISMATCH,
    );
    expect(await ledgerState('lg-a')).toEqual({
      balance: '22.25000000',
      entries: '22.25000000',
      ops: 3,
      total: '0.00000000',
    });
  });

  it('funds are checked in the order of the postings, earlier ones included', async () => {
    // 22.25 on the account: a debit of 30.00 first is refused even though a credit follows it.
    await expectRefused(
      post([debit('LG4:0:stake_debit', 'lg-a', '30.00'), credit('LG5:0:final_credit', 'lg-a', '50.00')]),
      ErrorCode.INSUFFICIENT_FUNDS,
      'balance of lg-a is below 30.00',
    );
    expect(await ledgerState('lg-a')).toEqual({
      balance: '22.25000000',
      entries: '22.25000000',
      ops: 3,
      total: '0.00000000',
    });
    // The credit first: 72.25 - 30.00 leaves 42.25.
    const second = await post([
      credit('LG5:0:final_credit', 'lg-a', '50.00'),
      debit('LG4:0:stake_debit', 'lg-a', '30.00'),
    ]);
    expect(second.balances).toEqual(new Map([['lg-a', '42.25000000']]));
    // A debit without requireFunds may overdraw (a recalculation debit never waits for money).
    const overdraw = await post([debit('LG6:0:stake_debit', 'lg-a', '50.00', false)]);
    expect(overdraw.balances).toEqual(new Map([['lg-a', '-7.75000000']]));
    expect(await ledgerState('lg-a')).toEqual({
      balance: '-7.75000000',
      entries: '-7.75000000',
      ops: 6,
      total: '0.00000000',
    });
  });

  it('operations are counted in the metrics only once their transaction has committed', async () => {
    const metrics = t.app.get(MetricsRegistry);
    const counted = async () =>
      (await metrics.registry.getSingleMetric('settlement_ledger_operations_total')?.get())?.values.find(
        (v) => v.labels.type === OperationType.FINAL_CREDIT,
      )?.value;
    const before = await counted();
    const rolledBack = await refusal(
      transactions.run(async (tx) => {
        await ledger.post(tx, [credit('LG7:0:final_credit', 'lg-a', '1.00')]);
        throw new Error('rolled back on purpose');
      }),
    );
    expect((rolledBack as Error).message).toBe('rolled back on purpose');
    expect(await counted()).toBe(before);
    await post([credit('LG7:0:final_credit', 'lg-a', '1.00')]);
    expect(await counted()).toBe((before as number) + 1);
  });
});

describe('house sub-accounts (CONTRACT §7, issue 14)', () => {
  const t = useTestApp({ HOUSE_SUB_ACCOUNTS: '4', DB_LOCK_TIMEOUT_MS: '1000' });
  let ledger: LedgerService;
  let transactions: TransactionRunner;

  beforeAll(async () => {
    ledger = t.app.get(LedgerService);
    transactions = t.app.get(TransactionRunner);
    await deposit(t.app, 'hs-a', '50.00');
    await deposit(t.app, 'hs-b', '50.00');
  });

  const houses = async () =>
    (
      await t.db.query<{ id: string; balance: string }>(
        `SELECT id, balance::text FROM accounts WHERE kind = 'house' AND currency = 'EUR' ORDER BY id`,
      )
    ).rows;
  const houseOf = async (key: string) =>
    (
      await t.db.query<{ id: string }>(
        `SELECT e.account_id AS id FROM ledger_entries e JOIN financial_operations o ON o.id = e.operation_id
          JOIN accounts a ON a.id = e.account_id WHERE o.operation_key = $1 AND a.kind = 'house'`,
        [key],
      )
    ).rows.map((r) => r.id);
  /** The verifier's balance checks (these postings name coupons that do not exist: the coupon checks are not this test's). */
  const BALANCE_CHECKS: string[] = [
    LedgerCheck.OPERATION_UNBALANCED,
    LedgerCheck.LEDGER_UNBALANCED,
    LedgerCheck.BALANCE_MISMATCH,
    LedgerCheck.CURRENCY_UNBALANCED,
    LedgerCheck.HOUSE_BALANCE_MISMATCH,
  ];
  const verify = async () => {
    const client = await t.db.connect();
    try {
      return (await new LedgerVerifier(client).verify()).violations
        .filter((v) => BALANCE_CHECKS.includes(v.check))
        .map((v) => `${v.check} ${v.subject}`);
    } finally {
      client.release();
    }
  };

  it('a currency has HOUSE_SUB_ACCOUNTS house accounts; its house balance is their sum and the ledger sums to zero', async () => {
    const ids = (await houses()).map((h) => h.id);
    expect(ids).toEqual(['house:EUR', 'house:EUR:1', 'house:EUR:2', 'house:EUR:3']);
    const total = await t.db.query(
      `SELECT sum(balance)::text AS house, (SELECT sum(balance)::text FROM accounts WHERE currency = 'EUR') AS all
         FROM accounts WHERE kind = 'house' AND currency = 'EUR'`,
    );
    expect(total.rows).toEqual([{ house: '-100.00000000', all: '0.00000000' }]);
    expect((await houseOf('adjustment:dep-hs-a-50.00'))[0]).toMatch(/^house:EUR(:[123])?$/);
    expect(await verify()).toEqual([]);
  });

  it('two postings in flight at once take different house accounts: neither waits for the other', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let posted!: () => void;
    const firstPosted = new Promise<void>((r) => (posted = r));
    const first = transactions.run(async (tx) => {
      await ledger.post(tx, [credit('HS1:0:final_credit', 'hs-a', '3.00')]);
      posted();
      await held; // its house account stays locked until this transaction commits
    });
    await firstPosted;
    // With one house account the second posting would wait on its lock (and fail after 1 s).
    await transactions.run((tx) => ledger.post(tx, [credit('HS2:0:final_credit', 'hs-b', '4.00')]));
    release();
    await first;
    const [a, b] = [await houseOf('HS1:0:final_credit'), await houseOf('HS2:0:final_credit')];
    expect(a).toHaveLength(1);
    expect(b).toHaveLength(1);
    expect(a[0]).not.toBe(b[0]);
    expect(await verify()).toEqual([]);
  });

  it('ledger:verify catches a forged house figure', async () => {
    await t.db.query(`UPDATE accounts SET balance = balance + 1 WHERE id = 'house:EUR:2'`);
    try {
      expect(await verify()).toEqual([
        'balance_mismatch house:EUR:2',
        'currency_unbalanced EUR',
        'house_balance_mismatch house:EUR',
      ]);
    } finally {
      await t.db.query(`UPDATE accounts SET balance = balance - 1 WHERE id = 'house:EUR:2'`);
    }
    expect(await verify()).toEqual([]);
  });
});
