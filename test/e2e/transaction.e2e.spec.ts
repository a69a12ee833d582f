import { Socket } from 'node:net';
import { jest } from '@jest/globals';
import {
  DeadlineExceededError,
  Statement,
  TransactionRolledBackError,
  TransactionRunner,
  Tx,
} from '../../src/platform/database/transaction.js';
import { DataSource } from 'typeorm';
import { useTestApp } from '../support/test-app.js';

// Tx.savepoint (used by the inbox workers, CONTRACT §4 step 5): SAVEPOINT and RELEASE travel
// with the next group, so these tests check what is kept and what is undone in each case where
// they were, or were not yet, sent.

describe('Tx.savepoint', () => {
  const t = useTestApp();
  let transactions: TransactionRunner;

  beforeAll(async () => {
    transactions = t.app.get(TransactionRunner);
    await t.db.query('CREATE TABLE tx_marks (mark text PRIMARY KEY)');
  });
  beforeEach(() => t.db.query('TRUNCATE tx_marks'));

  const mark = (tx: Tx, value: string) => tx.query('INSERT INTO tx_marks (mark) VALUES ($1)', [value]);
  const marks = async () =>
    (await t.db.query<{ mark: string }>('SELECT mark FROM tx_marks ORDER BY mark')).rows.map((r) => r.mark);
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => undefined,
      (err: unknown) => err as Error & { code?: string },
    );

  it('work that succeeds: its writes commit with the ones around it, and its result is returned', async () => {
    const hooks: string[] = [];
    const result = await transactions.run(async (tx) => {
      await mark(tx, 'a-before');
      const inner = await tx.savepoint('sp', async () => {
        await mark(tx, 'b-inside');
        tx.afterCommit(() => hooks.push('inside'));
        return 42;
      });
      await mark(tx, 'c-after');
      return inner;
    });
    expect(result).toBe(42);
    expect(await marks()).toEqual(['a-before', 'b-inside', 'c-after']);
    expect(hooks).toEqual(['inside']);
  });

  it('work that fails after writing: its writes and after-commit hooks are undone, the transaction goes on', async () => {
    const hooks: string[] = [];
    const err = await transactions.run(async (tx) => {
      await mark(tx, 'a-before');
      tx.afterCommit(() => hooks.push('outside'));
      const thrown = await failure(
        tx.savepoint('sp', async () => {
          await mark(tx, 'b-inside');
          tx.afterCommit(() => hooks.push('inside'));
          throw new Error('apply failed');
        }),
      );
      await mark(tx, 'c-after');
      return thrown;
    });
    expect(err?.message).toBe('apply failed');
    expect(await marks()).toEqual(['a-before', 'c-after']);
    expect(hooks).toEqual(['outside']);
  });

  it('a statement that fails in PostgreSQL inside it: rolled back to the savepoint, the transaction stays usable', async () => {
    const err = await transactions.run(async (tx) => {
      await mark(tx, 'a-before');
      const thrown = await failure(
        tx.savepoint('sp', async () => {
          await mark(tx, 'b-inside');
          await mark(tx, 'a-before'); // unique violation: the transaction is aborted until rolled back
        }),
      );
      await mark(tx, 'c-after');
      return thrown;
    });
    expect(err?.code).toBe('23505');
    expect(await marks()).toEqual(['a-before', 'c-after']);
  });

  it('the first statement under it fails (sent in one group with SAVEPOINT): the same', async () => {
    const err = await transactions.run(async (tx) => {
      await mark(tx, 'a-before');
      const thrown = await failure(tx.savepoint('sp', () => mark(tx, 'a-before')));
      await mark(tx, 'c-after');
      return thrown;
    });
    expect(err?.code).toBe('23505');
    expect(await marks()).toEqual(['a-before', 'c-after']);
  });

  it('work that fails before sending anything: nothing to undo, the transaction goes on', async () => {
    const err = await transactions.run(async (tx) => {
      await mark(tx, 'a-before');
      const thrown = await failure(
        tx.savepoint('sp', () => {
          throw new Error('unparseable payload');
        }),
      );
      await mark(tx, 'c-after');
      return thrown;
    });
    expect(err?.message).toBe('unparseable payload');
    expect(await marks()).toEqual(['a-before', 'c-after']);
  });

  it('nested: an inner failure undoes only the inner writes; the outer ones commit', async () => {
    await transactions.run(async (tx) => {
      await tx.savepoint('sp_outer', async () => {
        await mark(tx, 'a-outer');
        await failure(
          tx.savepoint('sp_inner', async () => {
            await mark(tx, 'b-inner');
            throw new Error('inner failed');
          }),
        );
        await tx.savepoint('sp_inner2', () => mark(tx, 'c-inner2'));
      });
    });
    expect(await marks()).toEqual(['a-outer', 'c-inner2']);
  });

  it('the last statement of a transaction inside it: RELEASE goes with COMMIT and the writes commit', async () => {
    await transactions.run(async (tx) => {
      await tx.savepoint('sp', () => mark(tx, 'a-inside'));
      await tx.commitWith({});
    });
    expect(await marks()).toEqual(['a-inside']);
  });
});

// START TRANSACTION travels with the first group (or goes out when `tx.manager` is first used),
// COMMIT with the last: a transaction is two round trips at least, never one of its own for
// START. These check that everything still runs inside the one transaction.
describe('Tx: START TRANSACTION with the first group', () => {
  const t = useTestApp();
  let transactions: TransactionRunner;

  beforeAll(async () => {
    transactions = t.app.get(TransactionRunner);
    await t.db.query('CREATE TABLE tx_starts (mark text PRIMARY KEY)');
  });
  beforeEach(() => t.db.query('TRUNCATE tx_starts'));

  const marks = async () =>
    (await t.db.query<{ mark: string }>('SELECT mark FROM tx_starts ORDER BY mark')).rows.map((r) => r.mark);

  it('the first group runs inside the transaction: one transaction id for every group', async () => {
    const ids = await transactions.run(async (tx) => {
      const first = await tx.query<{ id: string }>('SELECT txid_current()::text AS id');
      const second = await tx.query<{ id: string }>('SELECT txid_current()::text AS id');
      return [first.rows[0].id, second.rows[0].id];
    });
    expect(ids[0]).toBe(ids[1]);
  });

  it('tx.manager before any group: START goes out first, the read sees the later writes of the same transaction', async () => {
    const seen = await transactions.run(async (tx) => {
      const before = await tx.manager.query('SELECT count(*)::int AS n FROM tx_starts');
      await tx.query("INSERT INTO tx_starts (mark) VALUES ('a')");
      const after = await tx.manager.query(
        'SELECT count(*)::int AS n, txid_current()::text AS id FROM tx_starts',
      );
      const id = await tx.query<{ id: string }>('SELECT txid_current()::text AS id');
      return { before: before[0].n, after: after[0].n, sameTx: after[0].id === id.rows[0].id };
    });
    expect(seen).toEqual({ before: 0, after: 1, sameTx: true });
    expect(await marks()).toEqual(['a']);
  });

  it('work that throws after writing: rolled back, nothing kept, the connection reusable', async () => {
    const err = await transactions
      .run(async (tx) => {
        await tx.query("INSERT INTO tx_starts (mark) VALUES ('b')");
        throw new Error('work failed');
      })
      .catch((e: Error) => e);
    expect((err as Error).message).toBe('work failed');
    expect(await marks()).toEqual([]);
    // Every pooled connection is outside a transaction again: a fresh one commits on its own.
    await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        transactions.run((tx) => tx.query('INSERT INTO tx_starts (mark) VALUES ($1)', [`c${i}`])),
      ),
    );
    expect(await marks()).toHaveLength(8);
  });

  it('work that throws before sending anything: nothing sent, nothing to roll back', async () => {
    const err = await transactions
      .run(() => Promise.reject(new Error('refused before any statement')))
      .catch((e: Error) => e);
    expect((err as Error).message).toBe('refused before any statement');
    await transactions.run((tx) => tx.query("INSERT INTO tx_starts (mark) VALUES ('d')"));
    expect(await marks()).toEqual(['d']);
  });
});

// node-postgres writes each statement on its own; a group (its START, SET LOCAL and COMMIT
// included) leaves in one write, so PostgreSQL is woken once per group.
describe('Tx: one write per group', () => {
  const t = useTestApp();
  let transactions: TransactionRunner;

  beforeAll(() => {
    transactions = t.app.get(TransactionRunner);
  });

  it('a transaction of two groups of three statements: two writes on the socket, the results in order', async () => {
    const writev = jest.spyOn(Socket.prototype, '_writev');
    const write = jest.spyOn(Socket.prototype, '_write');
    try {
      const [first, second] = await transactions.run(async (tx) => {
        const statements = (from: number) => ({
          a: { text: 'SELECT $1::int AS n', values: [from] } as Statement<{ n: number }>,
          b: { text: 'SELECT $1::int AS n', values: [from + 1] } as Statement<{ n: number }>,
          c: { text: 'SELECT $1::int AS n', values: [from + 2] } as Statement<{ n: number }>,
        });
        const one = await tx.send(statements(1));
        const two = await tx.commitWith(statements(4));
        return [one, two].map((g) => [g.a.rows[0].n, g.b.rows[0].n, g.c.rows[0].n]);
      });
      expect([first, second]).toEqual([
        [1, 2, 3],
        [4, 5, 6],
      ]);
      // What each write carried (background loops write on other connections: left out).
      const written = [
        ...writev.mock.calls.map(([chunks]) =>
          // Node passes the chunks as Buffers, or as { chunk } when some are strings.
          Buffer.concat(
            (chunks as (Buffer | { chunk: Buffer | string })[]).map((c) =>
              Buffer.isBuffer(c) ? c : Buffer.from(c.chunk),
            ),
          ),
        ),
        ...write.mock.calls.map(([chunk]) => Buffer.from(chunk as Buffer)),
      ]
        .map((b) => b.toString('latin1'))
        .filter((text) => text.includes('SELECT $1::int AS n'));
      expect(written).toHaveLength(2);
      expect(written[0]).toContain('START TRANSACTION');
      expect(written[0].split('SELECT $1::int AS n')).toHaveLength(4);
      expect(written[1].split('SELECT $1::int AS n')).toHaveLength(4);
      expect(written[1]).toContain('COMMIT');
    } finally {
      writev.mockRestore();
      write.mockRestore();
    }
  });
});

describe('Tx: a COMMIT that PostgreSQL answers with ROLLBACK', () => {
  const t = useTestApp();
  let transactions: TransactionRunner;

  beforeAll(async () => {
    transactions = t.app.get(TransactionRunner);
    await t.db.query('CREATE TABLE tx_aborts (mark text PRIMARY KEY)');
  });

  it('a failed statement whose error the work swallowed: the run fails, nothing committed, no hook', async () => {
    const hooks: string[] = [];
    const err = await transactions
      .run(async (tx) => {
        await tx.query("INSERT INTO tx_aborts (mark) VALUES ('a')");
        tx.afterCommit(() => hooks.push('committed'));
        await tx.manager.query('SELECT 1/0').catch(() => undefined);
      })
      .catch((e: Error) => e);
    expect(err).toBeInstanceOf(TransactionRolledBackError);
    expect(hooks).toEqual([]);
    expect((await t.db.query('SELECT mark FROM tx_aborts')).rows).toEqual([]);
  });
});

describe('Tx: generic plans for the statements that ask for them (Statement.genericPlan)', () => {
  const t = useTestApp();

  it('planned generic under force_generic_plan; the next statement is back under auto, and so is the session', async () => {
    const { generic, plain, plans } = await t.app.get(TransactionRunner).run((tx) =>
      tx.commitWith({
        generic: {
          name: 'tx_test_generic',
          text: `SELECT current_setting('plan_cache_mode') AS mode, $1::int AS n`,
          values: [7],
          genericPlan: true,
        },
        plain: { text: `SELECT current_setting('plan_cache_mode') AS mode` },
        plans: {
          text: `SELECT generic_plans::int AS generic, custom_plans::int AS custom
                   FROM pg_prepared_statements WHERE name = 'tx_test_generic'`,
        },
      }),
    );
    // Through PgBouncer (DATABASE_POOLED=1, docs/production.md#pgbouncer) statements go unnamed:
    // nothing prepared, nothing planned generic.
    const pooled = t.config.database.databasePooled;
    expect(generic.rows).toEqual([{ mode: pooled ? 'auto' : 'force_generic_plan', n: 7 }]);
    expect(plain.rows).toEqual([{ mode: 'auto' }]);
    expect(plans.rows).toEqual(pooled ? [] : [{ generic: 1, custom: 0 }]);
    // SET LOCAL: the next transaction on any pooled connection starts under auto again.
    const after = await t.app
      .get(TransactionRunner)
      .run((tx) => tx.query<{ mode: string }>(`SELECT current_setting('plan_cache_mode') AS mode`));
    expect(after.rows).toEqual([{ mode: 'auto' }]);
  });

  it('a read through tx.manager after a genericPlan statement runs under auto', async () => {
    const mode = await t.app.get(TransactionRunner).run(async (tx) => {
      await tx.send({
        g: { name: 'tx_test_generic_n', text: 'SELECT $1::int AS n', values: [1], genericPlan: true },
      });
      const rows = (await tx.manager.query(`SELECT current_setting('plan_cache_mode') AS mode`)) as {
        mode: string;
      }[];
      return rows[0].mode;
    });
    expect(mode).toBe('auto');
  });
});

describe('Tx: array parameters', () => {
  const t = useTestApp();

  it('reach PostgreSQL as node-postgres would send them, one array shared by a group included', async () => {
    const texts = [
      'A-1',
      'quote"d',
      'back\\slash',
      '\\"',
      'a,b',
      '{x}',
      ' spaced ',
      '',
      'NULL',
      'null',
      null,
      'ü€',
    ];
    const numbers = [1, -2.5, 0, null, 9007199254740991];
    const flags = [true, false, null];
    const dates = [new Date('2026-12-02T10:00:00.000Z')];
    const select = {
      text: 'SELECT $1::text[] AS texts, $2::numeric[]::text[] AS numbers, $3::boolean[] AS flags, $4::timestamptz[] AS dates',
      values: [texts, numbers, flags, dates],
    };
    const viaTx = await t.app
      .get(TransactionRunner)
      .run((tx) =>
        tx.commitWith({ first: select, second: { text: 'SELECT $1::text[] AS texts', values: [texts] } }),
      );
    const viaPg = await t.db.query(select.text, select.values);
    expect(viaTx.first.rows).toEqual(viaPg.rows);
    expect(viaTx.first.rows[0]).toEqual({
      texts,
      numbers: ['1', '-2.5', '0', null, '9007199254740991'],
      flags,
      dates,
    });
    expect(viaTx.second.rows).toEqual([{ texts }]);
  });
});

describe('Tx.savepoint less than statement_timeout before the deadline', () => {
  const t = useTestApp();

  it('a statement that fails under it: its own error, and the transaction stays usable', async () => {
    // With less than the 5 s statement_timeout left, every group lowers the timeouts first; the
    // rollback to the savepoint must not (the transaction is aborted until it is done).
    const result = await t.app.get(TransactionRunner).run(
      async (tx) => {
        await tx.query('SELECT 1');
        const thrown = await tx
          .savepoint('sp', () => tx.query('SELECT 1/0'))
          .then(
            () => 'no error',
            (e: Error & { code?: string }) => `${e.code} ${e.message}`,
          );
        const after = await tx.query<{ n: number }>('SELECT 2 AS n');
        return { thrown, after: after.rows };
      },
      { deadline: Date.now() + 4000 },
    );
    expect(result).toEqual({ thrown: '22012 division by zero', after: [{ n: 2 }] });
  });
});

describe('TransactionRunner: waiting for a connection of a busy pool', () => {
  // One connection: a second transaction queues behind the first. The pool used to give up
  // after a fixed 3 s, so a burst after a restart got 503s with most of the deadline left.
  const t = useTestApp({ DB_POOL_SIZE: '1' });

  /** Runs a transaction that holds the only connection until `release` is called. */
  const holdTheConnection = async (transactions: TransactionRunner) => {
    let release!: () => void;
    let started!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const hasIt = new Promise<void>((r) => (started = r));
    const holder = transactions.run(
      async (tx) => {
        await tx.query('SELECT 1');
        started();
        await held;
      },
      { deadline: Date.now() + 8000 },
    );
    await hasIt;
    return { release, holder };
  };

  it('waits past 3 s for the connection when its deadline allows, then runs', async () => {
    const transactions = t.app.get(TransactionRunner);
    const { release, holder } = await holdTheConnection(transactions);
    const waiter = transactions.run((tx) => tx.query<{ n: number }>('SELECT 2 AS n'), {
      deadline: Date.now() + 7500,
    });
    const timer = setTimeout(release, 3500);
    try {
      expect((await waiter).rows).toEqual([{ n: 2 }]);
    } finally {
      clearTimeout(timer);
      release();
      await holder;
    }
  });

  // A runner released before its late connection arrived used to keep that connection from the
  // pool for good (TypeORM ignores a second release): the last step below then timed out, and
  // app.close() spun in TypeORM's closePool on that runner (the run hangs instead of failing).
  it('gives up at its own deadline when the connection is not free by then', async () => {
    const transactions = t.app.get(TransactionRunner);
    const { release, holder } = await holdTheConnection(transactions);
    try {
      const outcome = await transactions
        .run(() => Promise.resolve('ran'), { deadline: Date.now() + 500 })
        .catch((err: unknown) => err);
      expect(outcome).toBeInstanceOf(DeadlineExceededError);
    } finally {
      release();
      await holder;
    }
    // The connection handed out after the deadline went back to the pool: the next one runs.
    expect((await transactions.run((tx) => tx.query<{ n: number }>('SELECT 3 AS n'))).rows).toEqual([
      { n: 3 },
    ]);
  });
});

describe('Tx: timeouts per transaction, nothing at connection start (issue 39)', () => {
  const t = useTestApp({
    DB_STATEMENT_TIMEOUT_MS: '4500',
    DB_LOCK_TIMEOUT_MS: '2500',
    DB_IDLE_IN_TRANSACTION_TIMEOUT_MS: '4000',
  });
  const SETTINGS = `SELECT current_setting('statement_timeout') AS statement, current_setting('lock_timeout') AS lock,
                           current_setting('idle_in_transaction_session_timeout') AS idle`;

  it('the first group sets the three timeouts with SET LOCAL', async () => {
    const { rows } = await t.app.get(TransactionRunner).run((tx) => tx.query(SETTINGS));
    expect(rows).toEqual([{ statement: '4500ms', lock: '2500ms', idle: '4s' }]);
  });

  it('a read through tx.manager before any group runs under them too', async () => {
    const rows = await t.app
      .get(TransactionRunner)
      .run(async (tx) => (await tx.manager.query(SETTINGS)) as unknown[]);
    expect(rows).toEqual([{ statement: '4500ms', lock: '2500ms', idle: '4s' }]);
  });

  it("the pool's connections carry no startup options, and no setting outlives a transaction", async () => {
    await t.app.get(TransactionRunner).run((tx) => tx.query(SETTINGS));
    // Outside any transaction, on the app's pool: what the server gives every session.
    const rows = (await t.app.get(DataSource).query(
      `SELECT name, source, setting = reset_val AS unchanged FROM pg_settings
        WHERE name IN ('statement_timeout', 'lock_timeout', 'idle_in_transaction_session_timeout') ORDER BY name`,
    )) as { name: string; source: string; unchanged: boolean }[];
    expect(rows.map((r) => r.name)).toEqual([
      'idle_in_transaction_session_timeout',
      'lock_timeout',
      'statement_timeout',
    ]);
    for (const r of rows) {
      expect(`${r.name}: ${r.source}`).not.toBe(`${r.name}: client`);
      expect(r.unchanged).toBe(true);
    }
  });
});
