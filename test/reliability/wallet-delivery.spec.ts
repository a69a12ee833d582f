import { RunningWallet, startWallet } from '../../sim/wallet.js';
import { Rng } from '../../sim/random.js';
import { whileDatabaseDown } from '../support/database-faults.js';
import { batchOf } from '../support/test-app.js';
import { eventually, sleep } from '../support/wait.js';
import {
  DeliveryAnswer,
  fundCoupons,
  portRange,
  post,
  startReceiver,
  useReceivers,
  verifyLedger,
  violationsOf,
} from './support/receiver.js';
import {
  attemptFigures,
  ledgerOrder,
  pendingRows,
  reconcileWithWallet,
  walletOrder,
} from './support/wallet.js';

// docs/wallet.md: every pushed financial operation reaches the wallet exactly once per operation
// key, in ledger order per account, whatever happens to the receiver process, its database and
// the wallet. Real receiver processes on real PostgreSQL against the stand-in wallet of
// sim/wallet.ts: a SIGKILL mid-delivery, PostgreSQL gone between the claim and the record, and
// two replicas with 8 workers each against a wallet that fails, throttles and loses answers.

const WALLET_SECRET = 'reliability-wallet-secret';
const [
  KILL_PORT,
  KILL_WALLET_PORT,
  ORDER_PORT_A,
  ORDER_PORT_B,
  ORDER_WALLET_PORT,
  DOWN_PORT,
  DOWN_WALLET_PORT,
] = portRange(72, 7);
const walletEnv = (port: number, env: Record<string, string> = {}) => ({
  WALLET_URL: `http://127.0.0.1:${port}`,
  WALLET_SECRET,
  WALLET_RETRY_BASE_MS: '20',
  WALLET_RETRY_MAX_MS: '200',
  WALLET_POLL_INTERVAL_MS: '20',
  LOG_LEVEL: 'warn',
  ...env,
});
/**
 * A crashed worker's row waits for its lease, 2 × WALLET_TIMEOUT_MS + 10 s (OutboxWorker.leaseMs):
 * 11 s here, the shortest WALLET_TIMEOUT_MS allows, plus the restart.
 */
const LEASE_WAIT_MS = 30_000;

/** The line the stand-in logs when a request enters its `slowMs` delay. */
const SLOW = 'POST /transactions slow: handling';

interface AttemptRow {
  attempt: number;
  outcome: string;
  http_status: number | null;
  answer: string | null;
}

/** The outbox row of `key` and its recorded attempts. */
async function outboxRow(pool: import('pg').Pool, key: string) {
  const { rows } = await pool.query<{ id: string; status: string; attempts: number; body: Buffer | null }>(
    `SELECT id::text, status, attempts, body FROM wallet_outbox WHERE operation_key = $1`,
    [key],
  );
  const row = rows[0];
  const history = row
    ? (
        await pool.query<AttemptRow>(
          `SELECT attempt, outcome, http_status, answer FROM wallet_delivery_attempts WHERE outbox_id = $1 ORDER BY id`,
          [row.id],
        )
      ).rows
    : [];
  return { ...row, history };
}

/** The transaction `key` as `wallet` applied it, without `appliedAt`: the body it received. */
function appliedBody(wallet: RunningWallet, key: string): string {
  const applied = wallet.transactions().filter((t) => t.transactionId === key);
  expect(applied).toHaveLength(1);
  const { appliedAt: _, ...body } = applied[0];
  return JSON.stringify(body);
}

describe('SIGKILL of the receiver while a wallet delivery is in flight (docs/wallet.md)', () => {
  const suite = useReceivers([KILL_PORT], { env: walletEnv(KILL_WALLET_PORT, { WALLET_TIMEOUT_MS: '500' }) });
  const log: string[] = [];
  let wallet: RunningWallet;

  beforeAll(async () => {
    wallet = await startWallet({
      port: KILL_WALLET_PORT,
      secret: WALLET_SECRET,
      seed: 5,
      slowMs: 3000,
      log: (line) => log.push(line),
    });
  });
  afterAll(() => wallet?.close());

  it('the new process delivers the same transaction id and body again; the wallet applied it once', async () => {
    const key = 'KILL1:0:final_credit';
    await fundCoupons(
      suite.receiver.url,
      { id: 'kill-p', amount: '10.00', key: 'kill-dep', reason: 'kill mid-delivery' },
      ['KILL1'],
      '1.00',
    );
    expect(
      (await post(suite.receiver.url, batchOf('kill-b1', { code: 'KILL1', status: 2, realWin: '7.25' })))
        .status,
    ).toBe(200);
    await eventually(async () => log.some((l) => l.startsWith(SLOW)), 'the first attempt in the wallet');
    // The body is stored before the first byte is sent.
    const inFlight = await outboxRow(suite.db.pool, key);
    expect({ status: inFlight.status, attempts: inFlight.attempts, history: inFlight.history }).toEqual({
      status: 'pending',
      attempts: 1,
      history: [],
    });
    const sent = inFlight.body?.toString('utf8');
    expect(JSON.parse(sent ?? 'null')).toMatchObject({ transactionId: key, amount: '7.25', currency: 'EUR' });

    suite.receiver.kill('SIGKILL');
    expect(await suite.receiver.exited).toEqual({ code: null, signal: 'SIGKILL' });
    wallet.setFaults({ slowMs: 0 });
    suite.receiver = await startReceiver(
      KILL_PORT,
      suite.db.url,
      walletEnv(KILL_WALLET_PORT, { WALLET_TIMEOUT_MS: '500' }),
    );

    const row = await eventually(
      async () => {
        const r = await outboxRow(suite.db.pool, key);
        return r.status !== 'pending' && r;
      },
      'the row delivered by the new process once the lease ran out',
      { timeoutMs: LEASE_WAIT_MS, intervalMs: 100 },
    );
    // Attempt 1 died with its process before it was recorded; attempt 2 sent the stored bytes.
    expect({ status: row.status, attempts: row.attempts, body: row.body?.toString('utf8') }).toEqual({
      status: 'delivered',
      attempts: 2,
      body: sent,
    });
    expect(row.history).toEqual([
      {
        attempt: 2,
        outcome: 'delivered',
        http_status: 200,
        answer: `{"transactionId":"${key}","status":"applied","balance":"7.25","currency":"EUR"}`,
      },
    ]);
    // Both requests reached the wallet with the same id and bytes: applied, then a repeat.
    expect(log.filter((l) => l.includes(key))).toEqual([
      `POST /transactions ${key} → 200 applied, balance 7.25 EUR`,
      `POST /transactions ${key} → 200 repeat (first answer again)`,
    ]);
    expect(wallet.stats()).toMatchObject({ applied: 1, repeats: 1, conflicts: 0 });
    expect(appliedBody(wallet, key)).toBe(sent);
    expect((await reconcileWithWallet(suite.db.pool, wallet)).differences).toEqual([]);
    expect(violationsOf(await verifyLedger(suite.db.url))).toEqual([]);
  }, 60_000);
});

describe('PostgreSQL gone between the claim and the record of an attempt (docs/wallet.md)', () => {
  const suite = useReceivers([DOWN_PORT], { env: walletEnv(DOWN_WALLET_PORT, { WALLET_TIMEOUT_MS: '500' }) });
  const log: string[] = [];
  let wallet: RunningWallet;

  beforeAll(async () => {
    // The outage ends this suite's own idle connections too.
    suite.db.pool.on('error', () => undefined);
    wallet = await startWallet({
      port: DOWN_WALLET_PORT,
      secret: WALLET_SECRET,
      seed: 6,
      slowMs: 1000,
      log: (line) => log.push(line),
    });
  });
  afterAll(() => wallet?.close());

  it('the wallet applied it, the record failed: delivered again after the lease, applied once', async () => {
    const key = 'DOWN1:0:final_credit';
    await fundCoupons(
      suite.receiver.url,
      { id: 'down-p', amount: '10.00', key: 'down-dep', reason: 'database down mid-delivery' },
      ['DOWN1'],
      '1.00',
    );
    expect(
      (await post(suite.receiver.url, batchOf('down-b1', { code: 'DOWN1', status: 2, realWin: '4.40' })))
        .status,
    ).toBe(200);
    await eventually(async () => log.some((l) => l.startsWith(SLOW)), 'the first attempt in the wallet');
    const sent = (await outboxRow(suite.db.pool, key)).body?.toString('utf8');
    await whileDatabaseDown(suite.db.url, () =>
      eventually(
        async () => /outbox row \d+ attempt 1 not recorded/.test(suite.receiver.output()),
        'the receiver failing to record the attempt',
        { timeoutMs: 10_000, intervalMs: 50 },
      ),
    );
    wallet.setFaults({ slowMs: 0 });
    const row = await eventually(
      async () => {
        const r = await outboxRow(suite.db.pool, key);
        return r.status !== 'pending' && r;
      },
      'the row delivered again once the lease ran out',
      { timeoutMs: LEASE_WAIT_MS, intervalMs: 100 },
    );
    expect({ status: row.status, attempts: row.attempts, body: row.body?.toString('utf8') }).toEqual({
      status: 'delivered',
      attempts: 2,
      body: sent,
    });
    expect(row.history.map((a) => `${a.attempt} ${a.outcome} ${a.http_status}`)).toEqual(['2 delivered 200']);
    expect(log.filter((l) => l.includes(key))).toEqual([
      `POST /transactions ${key} → 200 applied, balance 4.40 EUR`,
      `POST /transactions ${key} → 200 repeat (first answer again)`,
    ]);
    expect(appliedBody(wallet, key)).toBe(sent);
    expect((await reconcileWithWallet(suite.db.pool, wallet)).differences).toEqual([]);
    expect(violationsOf(await verifyLedger(suite.db.url))).toEqual([]);
  }, 60_000);
});

describe('two replicas, 8 workers each, a faulty wallet: per-account order and exactly once (docs/wallet.md)', () => {
  const env = walletEnv(ORDER_WALLET_PORT, {
    WALLET_CONCURRENCY: '8',
    WALLET_TIMEOUT_MS: '1000',
    DB_POOL_SIZE: '12',
  });
  const suite = useReceivers([ORDER_PORT_A, ORDER_PORT_B], { env });
  const ACCOUNTS = ['ord-a', 'ord-b', 'ord-c', 'ord-d'];
  const COUPONS_PER_ACCOUNT = 5;
  /** realWin of each generation: a win, then three recalculations (0: lost, a debit without a credit). */
  const GENERATIONS = [
    ['3.10', '12.00', '0.01', '7.77', '150.00'],
    ['4.25', '0', '9.99', '7.77', '1.00'],
    ['0', '2.50', '9.99', '0.02', '80.00'],
    ['5.55', '3.00', '0', '11.11', '0.50'],
  ];
  /**
   * The snapshots sent, round by round (CONTRACT §6): the win; then each recalculation (15 with
   * `realWin`: the debit of the last credit and the new credit), closed by a final snapshot of the
   * same result (no money) so that the next one opens a new generation.
   */
  const ROUNDS: { status: (win: string) => number; wins: string[] }[] = GENERATIONS.flatMap((wins, g) =>
    g === 0
      ? [{ status: () => 2, wins }]
      : [
          { status: () => 15, wins },
          { status: (win: string) => (win === '0' ? 4 : 2), wins },
        ],
  );
  const rng = new Rng(4242);
  const codes = ACCOUNTS.flatMap((a, i) =>
    Array.from({ length: COUPONS_PER_ACCOUNT }, (_, c) => ({ account: a, code: `ORD${i}-${c}`, c })),
  );
  let wallet: RunningWallet;
  let deliveries = 0;

  beforeAll(async () => {
    wallet = await startWallet({
      port: ORDER_WALLET_PORT,
      secret: WALLET_SECRET,
      seed: 20251,
      failRate: 0.3,
      dropAfterApply: 0.2,
      slowMs: 3,
      allowNegative: true,
    });
    for (const [i, account] of ACCOUNTS.entries())
      await fundCoupons(
        suite.receivers.map((r) => r.url),
        { id: account, amount: '100.00', key: `ord-dep-${i}`, reason: 'order under concurrency' },
        codes.filter((x) => x.account === account).map((x) => x.code),
        '1.00',
      );
  }, 60_000);
  afterAll(() => wallet?.close());

  /** Delivers to `url` and, like SportAPI, again after a 503 or a transport error until 200. */
  async function deliverUntil200(url: string, body: unknown): Promise<DeliveryAnswer> {
    for (let i = 0; ; i++) {
      deliveries++;
      const a = await post(url, body);
      if (a.status === 200 || i >= 8 || (a.status !== 503 && a.status !== 0)) return a;
      await sleep(20 + i * 50);
    }
  }

  /** The operation keys the rounds must have pushed, coupon by coupon (CONTRACT §6, §7). */
  function expectedKeys(): string[] {
    const keys: string[] = [];
    for (const { code, c } of codes) {
      let credited = false;
      for (const [g, wins] of GENERATIONS.entries()) {
        if (g > 0 && credited) keys.push(`${code}:${g}:recalculation_debit`);
        credited = wins[c] !== '0';
        if (credited) keys.push(`${code}:${g}:final_credit`);
      }
    }
    return keys.sort();
  }

  it('concurrent batches settle and recalculate; each account reaches the wallet in ledger order, each key once', async () => {
    for (const [r, round] of ROUNDS.entries()) {
      // Coupons of every account mixed into batches of 3, each sent to both replicas at once.
      const shuffled = rng.shuffle(codes);
      const batches = Array.from({ length: Math.ceil(shuffled.length / 3) }, (_, b) => ({
        batchId: `ord-r${r}-b${b}`,
        couponCount: shuffled.slice(b * 3, b * 3 + 3).length,
        coupons: shuffled.slice(b * 3, b * 3 + 3).map(({ code, c }) => ({
          coupon_code: code,
          status: round.status(round.wins[c]),
          realWin: round.wins[c],
          events: [{ uuid: `${code}-e1`, status: round.status(round.wins[c]) }],
        })),
      }));
      const answers = await Promise.all(
        batches.flatMap((batch, b) => [
          deliverUntil200(suite.receivers[b % 2].url, batch),
          deliverUntil200(suite.receivers[(b + 1) % 2].url, batch),
        ]),
      );
      expect(answers.filter((a) => a.status !== 200)).toEqual([]);
    }

    await eventually(async () => (await pendingRows(suite.db.pool)) === 0, 'no pending outbox row', {
      timeoutMs: 120_000,
      intervalMs: 200,
    });
    const ledger = await ledgerOrder(suite.db.pool);
    expect(Object.values(ledger).flat().sort()).toEqual(expectedKeys());
    // Ledger order per account (financial_operations.id) is the order the wallet applied them in.
    expect(walletOrder(wallet)).toEqual(ledger);
    const applied = wallet.transactions().map((t) => t.transactionId);
    expect(new Set(applied).size).toBe(applied.length);
    const reconciliation = await reconcileWithWallet(suite.db.pool, wallet);
    expect(reconciliation).toEqual({
      operations: { pending: 0, delivered: applied.length, parked: 0, skipped: 0 },
      inFlight: 0,
      walletTransactions: applied.length,
      differences: [],
    });
    expect(violationsOf(await verifyLedger(suite.db.url))).toEqual([]);
    for (const r of suite.receivers) expect(r.output()).not.toMatch(/not recorded|worker step failed/);

    const stats = wallet.stats();
    const figures = await attemptFigures(suite.db.pool);
    // Faults drawn: the wallet did fail, throttle and lose answers, and the receivers retried.
    expect(stats.faults.dropped).toBeGreaterThan(0);
    expect(stats.repeats).toBeGreaterThan(0);
    expect(figures.retries).toBeGreaterThan(0);
    process.stdout.write(
      `wallet delivery: ${JSON.stringify({
        replicas: 2,
        workers: 16,
        accounts: ACCOUNTS.length,
        coupons: codes.length,
        batchDeliveries: deliveries,
        outboxRows: figures.rows,
        deliveries: figures.attempts,
        retries: figures.retries,
        unavailable: stats.faults.unavailable,
        throttled: stats.faults.throttled,
        drops: stats.faults.dropped,
        repeats: stats.repeats,
        applied: stats.applied,
        maxAttempts: figures.maxAttempts,
      })}\n`,
    );
  }, 180_000);
});
