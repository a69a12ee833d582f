import { request as httpRequest, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import {
  BACKGROUND_PROBES,
  BackgroundGovernor,
  GovernorProbes,
} from '../../src/platform/background/background-governor.js';
import {
  WalletConnector,
  WalletDelivery,
  WalletDeliveryRequest,
} from '../../src/outbound/wallet/wallet-connector.js';
import { scrape, sample } from '../support/metrics.js';
import { batchOf, createTestApp, deliver, deposit, ops, register, TestContext } from '../support/test-app.js';
import { eventually, sleep } from '../support/wait.js';

// docs/background-work.md: under a synthetic intake (answer times fed to the real provider, its
// clock, pool and event-loop probes driven by hand) the background limits drop and recover, the
// wallet workers keep to the limit, and each change is counted by reason and logged.

/** The governor's clock, pool and event loop, moved by the test. */
class ManualProbes implements GovernorProbes {
  t = 1_000_000;
  waiting = 0;
  loopP99 = 5;
  private timers: { ms: number; next: number; fn: () => void }[] = [];

  now(): number {
    return this.t;
  }

  every(ms: number, fn: () => void): () => void {
    const timer = { ms, next: this.t + ms, fn };
    this.timers.push(timer);
    return () => (this.timers = this.timers.filter((x) => x !== timer));
  }

  poolWaiting(): number {
    return this.waiting;
  }

  eventLoopP99Ms(): number {
    return this.loopP99;
  }

  /** Moves the clock `ms` ahead, firing the timers due on the way in time order. */
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      const due = this.timers.filter((x) => x.next <= end).sort((a, b) => a.next - b.next)[0];
      if (!due) break;
      this.t = due.next;
      due.next += due.ms;
      due.fn();
    }
    this.t = end;
  }
}

/** Applies every transaction after 30 ms, noting the most deliveries it held at once. */
class CountingConnector extends WalletConnector {
  readonly name = 'counting';
  readonly applied: string[] = [];
  inFlight = 0;
  mostInFlight = 0;

  async deliver(r: WalletDeliveryRequest): Promise<WalletDelivery> {
    this.mostInFlight = Math.max(this.mostInFlight, ++this.inFlight);
    await sleep(30);
    this.inFlight--;
    this.applied.push(r.transaction.transactionId);
    return { outcome: 'delivered', answer: 'applied' };
  }
}

describe('the background-work governor under a synthetic intake (docs/background-work.md)', () => {
  const probes = new ManualProbes();
  const connector = new CountingConnector();
  const lines: { msg: string; level: number }[] = [];
  let t: TestContext;
  let governor: BackgroundGovernor;

  beforeAll(async () => {
    t = await createTestApp(
      {
        WALLET_URL: 'http://127.0.0.1:9',
        WALLET_SECRET: 'wallet-secret-0123456789',
        WALLET_CONCURRENCY: '4',
        WALLET_CLAIM_SIZE: '1',
        WALLET_POLL_INTERVAL_MS: '20',
        INBOX_CONCURRENCY: '8',
        // Far above what the real callbacks of this test take, even on a loaded machine: only the
        // synthetic answers below are slow (5 s) or quiet (20 ms).
        BACKGROUND_TARGET_MS: '4000',
        LOG_LEVEL: 'info',
      },
      {
        override: (b) =>
          b
            .overrideProvider(WalletConnector)
            .useValue(connector)
            .overrideProvider(BACKGROUND_PROBES)
            .useValue(probes),
        logDestination: new Writable({
          write(chunk: Buffer, _enc, done) {
            for (const line of chunk.toString('utf8').split('\n').filter(Boolean))
              lines.push(JSON.parse(line) as { msg: string; level: number });
            done();
          },
        }),
      },
    );
    governor = t.app.get(BackgroundGovernor);
  }, 60_000);
  afterAll(() => t?.close());

  const limits = async () => {
    const text = await scrape(t.app);
    return Object.fromEntries(
      ['wallet', 'inbox', 'reconciliation'].map((kind) => [
        kind,
        sample(text, `settlement_background_limit{kind="${kind}"}`),
      ]),
    );
  };
  const changes = async (kind: string, reason: string) =>
    sample(
      await scrape(t.app),
      `settlement_background_limit_changes_total{kind="${kind}",reason="${reason}"}`,
    );
  /** Answers of `ms` each, then one evaluation period (250 ms). */
  const tick = (answerMs: number | null) => {
    if (answerMs !== null) for (let i = 0; i < 10; i++) governor.intakeAnswered(answerMs);
    probes.advance(250);
  };

  it('starts every kind at its configured maximum', async () => {
    expect(await limits()).toEqual({ wallet: 4, inbox: 8, reconciliation: 1 });
    const text = await scrape(t.app);
    expect(
      ['wallet', 'inbox', 'reconciliation'].map((k) =>
        sample(text, `settlement_background_limit_max{kind="${k}"}`),
      ),
    ).toEqual([4, 8, 1]);
  });

  it("counts the callback's real answers in its window (four win credits, delivery paused)", async () => {
    expect((await ops(t.app, 'operator').post('/wallet/pause', { reason: 'collect rows' })).status).toBe(200);
    for (let i = 0; i < 4; i++) {
      await deposit(t.app, `bg-${i}`, '10.00');
      await register(t.app, `BG${i}`, `bg-${i}`, '1.00');
      const batch = batchOf(`bg-b-${i}`, { code: `BG${i}`, status: 2, realWin: '2.50' });
      expect((await deliver(t.app, batch)).status).toBe(200);
    }
    probes.advance(250);
    expect(governor.signals.intakeP99Ms).toEqual(expect.any(Number));
    expect(sample(await scrape(t.app), 'settlement_background_intake_p99_seconds')).toBeGreaterThan(0);
    probes.advance(2500); // out of the window again (the limits were at their maxima: they stay)
    expect(await limits()).toEqual({ wallet: 4, inbox: 8, reconciliation: 1 });
  });

  it('slow answers halve every limit, once per cooldown, down to each floor', async () => {
    tick(5000);
    expect(await limits()).toEqual({ wallet: 2, inbox: 4, reconciliation: 0 });
    tick(5000); // within the cooldown: the window still holds answers from before the back-off
    expect(await limits()).toEqual({ wallet: 2, inbox: 4, reconciliation: 0 });
    tick(5000);
    expect(await limits()).toEqual({ wallet: 1, inbox: 2, reconciliation: 0 });
    tick(5000);
    tick(5000);
    expect(await limits()).toEqual({ wallet: 1, inbox: 1, reconciliation: 0 });
    expect(await changes('wallet', 'intake_slow')).toBe(2);
    expect(await changes('inbox', 'intake_slow')).toBe(3);
    expect(await changes('reconciliation', 'intake_slow')).toBe(1);
    const warned = lines.filter((l) => l.level === 40 && l.msg.startsWith('wallet: background limit'));
    expect(warned.map((l) => l.msg.replace(/ \(.*$/, ''))).toEqual([
      'wallet: background limit 4 → 2',
      'wallet: background limit 2 → 1',
    ]);
    expect(warned[0].msg).toContain('(intake_slow: answers p99 5000 ms');
  });

  it('at a limit of 1 the wallet workers deliver one claim at a time, and everything still goes out', async () => {
    expect((await ops(t.app, 'operator').post('/wallet/resume', {})).status).toBe(200);
    await eventually(async () => connector.applied.length === 4, 'four deliveries');
    expect(connector.applied.sort()).toEqual([0, 1, 2, 3].map((i) => `BG${i}:0:final_credit`));
    expect(connector.mostInFlight).toBe(1);
    expect(sample(await scrape(t.app), 'settlement_background_in_flight{kind="wallet"}')).toBeLessThanOrEqual(
      1,
    );
  });

  it('quiet answers grow every limit by one per 500 ms after a whole window, back to the maximum', async () => {
    // The slow answers leave the window first (seven evaluations: held at the floors), then a whole
    // window has passed since the last back-off: growth starts, one every other evaluation.
    for (let i = 0; i < 7; i++) tick(20);
    expect(await limits()).toEqual({ wallet: 1, inbox: 1, reconciliation: 0 });
    tick(20);
    expect(await limits()).toEqual({ wallet: 2, inbox: 2, reconciliation: 1 });
    tick(20);
    expect(await limits()).toEqual({ wallet: 2, inbox: 2, reconciliation: 1 });
    for (let i = 0; i < 11; i++) tick(20);
    expect(await limits()).toEqual({ wallet: 4, inbox: 8, reconciliation: 1 });
    expect(await changes('wallet', 'intake_quiet')).toBe(3);
    expect(await changes('inbox', 'intake_quiet')).toBe(7);
    expect(
      lines.some((l) => l.level === 30 && l.msg.startsWith('wallet: background limit back at its maximum 4')),
    ).toBe(true);
  });

  it('a pool whose requests wait, then a delayed event loop, back off too; no answer lets it grow', async () => {
    probes.waiting = 2;
    tick(20);
    expect((await limits()).wallet).toBe(2);
    expect(await changes('wallet', 'pool_busy')).toBe(1);
    probes.waiting = 0;
    probes.loopP99 = 450;
    tick(20);
    tick(20);
    expect((await limits()).wallet).toBe(1);
    expect(await changes('wallet', 'event_loop_delay')).toBe(1);
    probes.loopP99 = 5;
    for (let i = 0; i < 20; i++) tick(null); // no answer at all: nothing to protect
    expect(await limits()).toEqual({ wallet: 4, inbox: 8, reconciliation: 1 });
    expect(await changes('wallet', 'intake_idle')).toBeGreaterThanOrEqual(1);
  });

  it('a callback in flight past the target backs off before any answer (a burst begins)', async () => {
    const server = t.app.getHttpServer() as Server;
    if (!server.listening) await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    // Headers and half a body: the delivery is received, and not answered until the rest comes.
    const req = httpRequest({
      host: '127.0.0.1',
      port: (server.address() as AddressInfo).port,
      method: 'POST',
      path: '/sportapi/callback',
      headers: { 'content-type': 'application/json', 'content-length': '64' },
    });
    req.on('error', () => undefined);
    req.write('{"batchId":');
    await eventually(async () => {
      probes.advance(250);
      return governor.signals.oldestInFlightMs > 0;
    }, 'the delivery in flight');
    expect(governor.signals.intakeP99Ms).toBeNull();
    const before = Number(await changes('wallet', 'intake_slow'));
    probes.advance(4000); // older than BACKGROUND_TARGET_MS, and still no answer
    expect(await limits()).toEqual({ wallet: 2, inbox: 4, reconciliation: 0 });
    expect(await changes('wallet', 'intake_slow')).toBe(before + 1);
    expect(
      sample(await scrape(t.app), 'settlement_background_intake_oldest_in_flight_seconds'),
    ).toBeGreaterThan(4);
    const warned = lines.filter((l) => l.level === 40 && l.msg.startsWith('wallet: background limit 4 → 2'));
    expect(warned.at(-1)?.msg).toMatch(/\(intake_slow: no answers, oldest in flight \d+ ms,/);
    // The connection goes: the delivery is no longer in flight, and the intake is idle again.
    req.destroy();
    await eventually(async () => {
      probes.advance(250);
      return governor.signals.oldestInFlightMs === 0;
    }, 'no delivery in flight');
    for (let i = 0; i < 20; i++) tick(null);
    expect(await limits()).toEqual({ wallet: 4, inbox: 8, reconciliation: 1 });
  });
});
