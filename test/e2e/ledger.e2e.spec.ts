import { ErrorCode } from '../../src/common/domain.exception.js';
import { TransactionRunner } from '../../src/database/transaction.js';
import { LedgerException } from '../../src/ledger/ledger.exception.js';
import { LedgerService } from '../../src/ledger/ledger.service.js';
import { OperationType, Posting } from '../../src/ledger/ledger.types.js';
import { SettlementMetrics } from '../../src/observability/settlement-metrics.js';
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
    const metrics = t.app.get(SettlementMetrics);
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
