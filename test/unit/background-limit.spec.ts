import { getEventListeners } from 'node:events';
import { WorkGate, TRICKLE_MS } from '../../src/platform/background/background-governor.js';
import {
  IntakeSignals,
  LimitPolicy,
  LimitState,
  nextLimit,
  percentile,
  pressureOf,
} from '../../src/platform/background/limit-rule.js';

// docs/background-work.md: the governor's rule, pure, with the clock given.

const POLICY: LimitPolicy = {
  targetMs: 500,
  eventLoopDelayMs: 200,
  poolBusyShare: 0.5,
  decrease: 0.5,
  cooldownMs: 500,
  windowMs: 2000,
  growEveryMs: 500,
};
const BOUNDS = { min: 1, max: 8 };
const quiet: IntakeSignals = { intakeP99Ms: 40, oldestInFlightMs: 0, poolBusyShare: 0, eventLoopP99Ms: 12 };
const slow: IntakeSignals = { intakeP99Ms: 900, oldestInFlightMs: 0, poolBusyShare: 0, eventLoopP99Ms: 12 };
const idle: IntakeSignals = { intakeP99Ms: null, oldestInFlightMs: 0, poolBusyShare: 0, eventLoopP99Ms: 12 };
const full: LimitState = { limit: 8, lastDecreaseAt: null, lastIncreaseAt: null };
const at = (limit: number, lastDecreaseAt: number | null = null): LimitState => ({
  limit,
  lastDecreaseAt,
  lastIncreaseAt: null,
});

describe('pressureOf', () => {
  it.each<[string, IntakeSignals, string | null]>([
    ['quiet intake', quiet, null],
    [
      'no answer in the window and none in flight, even with a busy pool',
      { ...idle, poolBusyShare: 1 },
      null,
    ],
    [
      'no answer yet, one in flight past the target (a burst begins)',
      { ...idle, oldestInFlightMs: 501 },
      'intake_slow',
    ],
    [
      'no answer yet, one in flight and a busy pool',
      { ...idle, oldestInFlightMs: 20, poolBusyShare: 1 },
      'pool_busy',
    ],
    ['quick answers, but one in flight past the target', { ...quiet, oldestInFlightMs: 800 }, 'intake_slow'],
    ['answers above the target', slow, 'intake_slow'],
    ['answers at the target exactly', { ...quiet, intakeP99Ms: 500 }, null],
    ['a pool busy in half the samples', { ...quiet, poolBusyShare: 0.5 }, 'pool_busy'],
    ['a pool busy now and then', { ...quiet, poolBusyShare: 0.4 }, null],
    ['a delayed event loop', { ...quiet, eventLoopP99Ms: 201 }, 'event_loop_delay'],
    [
      'slow answers first, whatever else',
      { intakeP99Ms: 600, oldestInFlightMs: 0, poolBusyShare: 1, eventLoopP99Ms: 900 },
      'intake_slow',
    ],
  ])('%s', (_name, signals, reason) => {
    expect(pressureOf(signals, POLICY)).toBe(reason);
  });
});

describe('nextLimit', () => {
  it('halves under pressure, at most once per cooldown, never below the floor', () => {
    let state = full;
    const limits: number[] = [];
    for (const t of [0, 250, 500, 750, 1000, 1250, 1500, 2000]) {
      state = nextLimit(state, BOUNDS, slow, POLICY, t).state;
      limits.push(state.limit);
    }
    expect(limits).toEqual([4, 4, 2, 2, 1, 1, 1, 1]);
    expect(state).toEqual({ limit: 1, lastDecreaseAt: 1000, lastIncreaseAt: null });
    expect(nextLimit(full, BOUNDS, slow, POLICY, 0).reason).toBe('intake_slow');
    expect(nextLimit(at(4, 0), BOUNDS, slow, POLICY, 250).reason).toBeUndefined();
  });

  it('goes down to 0 for a floor of 0 (the gate still trickles)', () => {
    const next = nextLimit(at(1), { min: 0, max: 1 }, slow, POLICY, 0);
    expect(next).toEqual({ state: at(0, 0), reason: 'intake_slow' });
  });

  it('grows by one every 500 ms once a whole window has passed since the back-off', () => {
    const down = at(1, 10_000);
    expect(nextLimit(down, BOUNDS, quiet, POLICY, 11_999)).toEqual({ state: down });
    let state = down;
    const limits: number[] = [];
    for (let t = 12_000; t <= 16_000; t += 250) {
      const next = nextLimit(state, BOUNDS, quiet, POLICY, t);
      if (next.state.limit !== state.limit) expect(next.reason).toBe('intake_quiet');
      state = next.state;
      limits.push(state.limit);
    }
    expect(limits).toEqual([2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 8, 8, 8]);
  });

  it('grows with no answer at all (intake_idle) and holds between half the target and the target', () => {
    const half = at(3);
    expect(nextLimit(half, BOUNDS, { ...quiet, intakeP99Ms: null }, POLICY, 0)).toEqual({
      state: { limit: 4, lastDecreaseAt: null, lastIncreaseAt: 0 },
      reason: 'intake_idle',
    });
    expect(nextLimit(half, BOUNDS, { ...quiet, intakeP99Ms: 251 }, POLICY, 0)).toEqual({ state: half });
    expect(nextLimit(half, BOUNDS, { ...quiet, intakeP99Ms: 250 }, POLICY, 0).state.limit).toBe(4);
    // A callback in flight counts as the intake's slowest: it holds the limit, or grows it (quiet).
    expect(nextLimit(half, BOUNDS, { ...idle, oldestInFlightMs: 251 }, POLICY, 0)).toEqual({ state: half });
    expect(nextLimit(half, BOUNDS, { ...idle, oldestInFlightMs: 250 }, POLICY, 0)).toEqual({
      state: { limit: 4, lastDecreaseAt: null, lastIncreaseAt: 0 },
      reason: 'intake_quiet',
    });
  });

  it('brings a limit above a lowered maximum down at once', () => {
    expect(nextLimit(at(8), { min: 1, max: 4 }, slow, POLICY, 0).state.limit).toBe(4);
    expect(nextLimit(at(8), { min: 1, max: 4 }, quiet, POLICY, 0).state.limit).toBe(4);
  });
});

describe('percentile', () => {
  it('nearest rank, null when empty', () => {
    expect(percentile([], 99)).toBeNull();
    expect(percentile([5], 99)).toBe(5);
    const hundred = Array.from({ length: 100 }, (_, i) => 100 - i);
    expect(percentile(hundred, 99)).toBe(99);
    expect(percentile(hundred, 50)).toBe(50);
  });
});

describe('WorkGate', () => {
  const gate = (limit: number, min = 1) => {
    let now = 0;
    const g = new WorkGate(
      'wallet',
      { min, max: 8 },
      () => now,
      () => undefined,
    );
    g.state = at(limit);
    return { g, advance: (ms: number) => (now += ms) };
  };

  it('holds at most `limit` permits; a release hands one to the oldest waiter', async () => {
    const { g } = gate(2);
    const a = await g.acquire();
    const b = await g.acquire();
    let third: (() => void) | undefined;
    const waiting = g.acquire().then((r) => (third = r));
    await Promise.resolve();
    expect(g.inFlight).toBe(2);
    expect(third).toBeUndefined();
    a?.();
    a?.(); // a release counts once
    await waiting;
    expect(third).toBeInstanceOf(Function);
    expect(g.inFlight).toBe(2);
    b?.();
    third?.();
    expect(g.inFlight).toBe(0);
  });

  it('a raised limit lets waiters in when the governor pumps; an aborted wait gets nothing', async () => {
    const { g } = gate(1);
    await g.acquire();
    const waits = [g.acquire(), g.acquire()];
    const stop = new AbortController();
    const aborted = g.acquire(stop.signal);
    stop.abort();
    expect(await aborted).toBeUndefined();
    g.state = at(3);
    g.pump();
    expect((await Promise.all(waits)).every((r) => typeof r === 'function')).toBe(true);
    expect(g.inFlight).toBe(3);
  });

  it("a granted wait leaves no listener on the loop's signal (none piles up over a loop's life)", async () => {
    const { g } = gate(1);
    const stop = new AbortController();
    for (let i = 0; i < 20; i++) {
      const held = await g.acquire(stop.signal);
      const waiting = g.acquire(stop.signal); // waits: the limit is held
      held?.();
      (await waiting)?.();
    }
    expect(getEventListeners(stop.signal, 'abort')).toHaveLength(0);
    const held = await g.acquire(stop.signal);
    const aborted = g.acquire(stop.signal);
    stop.abort();
    expect(await aborted).toBeUndefined();
    held?.();
    expect(g.inFlight).toBe(0);
  });

  it(`at a limit of 0: one permit every ${TRICKLE_MS} ms while none is held (the minimum trickle)`, async () => {
    const { g, advance } = gate(0, 0);
    const first = await g.acquire(); // never granted before: at once
    let second: (() => void) | undefined;
    const waiting = g.acquire().then((r) => (second = r));
    first?.();
    advance(TRICKLE_MS - 1);
    g.pump();
    await Promise.resolve();
    expect(second).toBeUndefined();
    advance(1);
    g.pump();
    await waiting;
    expect(second).toBeInstanceOf(Function);
  });
});
