import type { DataSource } from 'typeorm';
import { sharesServerConnections } from '../../src/platform/database/session-database.js';

// Issue 39, the breaker's finding: a replica started without DATABASE_POOLED while other replicas
// loaded the same transaction-mode PgBouncer was let through 2 times in 5 by a single probe (A's
// and B's server processes compared once), then took session advisory locks on shared server
// connections. The probe's logic against scripted server processes: what each statement of the
// two connections, A and B, is served by.

/** A data source whose two query runners answer `pg_backend_pid()` from scripts, in order. */
function scripted(a: number[], b: number[]): { dataSource: DataSource; asked: () => number } {
  let asked = 0;
  const runner = (pids: number[]) => ({
    query: async () => {
      asked++;
      const pid = pids.shift();
      if (pid === undefined) throw new Error('asked more than scripted');
      return [{ pid }];
    },
    startTransaction: async () => undefined,
    rollbackTransaction: async () => undefined,
    release: async () => undefined,
  });
  const runners = [runner(a), runner(b)];
  const dataSource = {
    options: { extra: { max: 16 } },
    createQueryRunner: () => runners.shift(),
  } as unknown as DataSource;
  return { dataSource, asked: () => asked };
}

describe('sharesServerConnections (the start-up check of DATABASE_URL)', () => {
  it('a direct connection: A keeps its process, B has its own, every round: none seen', async () => {
    // A: its first answer, then during and after each of B's 16 transactions.
    const { dataSource, asked } = scripted(Array(33).fill(101), Array(16).fill(202));
    await expect(sharesServerConnections(dataSource)).resolves.toBe(false);
    expect(asked()).toBe(49);
  });

  it('B meets the server connection A just freed: a pooler, in the first round', async () => {
    const { dataSource, asked } = scripted([101, 101], [101]);
    await expect(sharesServerConnections(dataSource)).resolves.toBe(true);
    expect(asked()).toBe(3);
  });

  it('A meets another process after B’s transaction: a pooler', async () => {
    const { dataSource } = scripted([101, 101, 303], [202]);
    await expect(sharesServerConnections(dataSource)).resolves.toBe(true);
  });

  it('another client took A’s server connection: A meets a second process, a pooler', async () => {
    const { dataSource } = scripted([101, 303], [202]);
    await expect(sharesServerConnections(dataSource)).resolves.toBe(true);
  });

  it('a round that misses both (the single probe’s blind spot) is followed by the next', async () => {
    // Round 1: another client holds 101 while B begins (B gets 202), then frees it for A again.
    const { dataSource, asked } = scripted([101, 101, 101, 101], [202, 101]);
    await expect(sharesServerConnections(dataSource)).resolves.toBe(true);
    expect(asked()).toBe(6);
  });

  it('a pool of one connection is not probed', async () => {
    const dataSource = { options: { extra: { max: 1 } } } as unknown as DataSource;
    await expect(sharesServerConnections(dataSource)).resolves.toBe(false);
  });
});
