/**
 * The background-work governor's rule (docs/background-work.md): one pure function from a kind of
 * work's current concurrency limit and the intake's signals to its next limit. AIMD: under
 * pressure the limit is multiplied by {@link LimitPolicy.decrease} (rounded down, never below the
 * kind's floor), at most once per {@link LimitPolicy.cooldownMs}; once the intake has been quiet
 * for a whole window since the last back-off it grows by one per evaluation, up to the kind's
 * maximum. No clock, no I/O: `now` is given.
 */

/** Why a limit changed: the signal that was over its bound, or the quiet that let it grow. */
export type LimitReason =
  /** The callback's answers in the window: p99 above the target. */
  | 'intake_slow'
  /** Requests waited for a pool connection in most samples of the last evaluation period. */
  | 'pool_busy'
  /** Node's event loop was delayed (p99) beyond its bound. */
  | 'event_loop_delay'
  /** Answers in the window at most half the target, nothing else over its bound: grow. */
  | 'intake_quiet'
  /** No answer in the window: nothing to protect, grow. */
  | 'intake_idle';

/** Reasons that lower a limit. */
export const PRESSURE_REASONS: readonly LimitReason[] = ['intake_slow', 'pool_busy', 'event_loop_delay'];
/** Reasons that raise one. */
export const QUIET_REASONS: readonly LimitReason[] = ['intake_quiet', 'intake_idle'];

/** What the governor saw of the intake, over its window. */
export interface IntakeSignals {
  /** 99th percentile of the callback's answer times in the window, ms; null when none was answered. */
  intakeP99Ms: number | null;
  /**
   * Age of the oldest callback received and not answered yet, ms; 0 when none is in flight. A
   * burst after a quiet spell shows here before any of its answers does.
   */
  oldestInFlightMs: number;
  /** Share (0..1) of the pool samples since the last evaluation that had a request waiting for a connection. */
  poolBusyShare: number;
  /** 99th percentile of the event loop's delay since the last evaluation, ms. */
  eventLoopP99Ms: number;
}

/** The bounds of the rule (configuration, docs/configuration.md#background-work). */
export interface LimitPolicy {
  /** Answers' p99 above which background work backs off; it grows only at or below half of it. */
  targetMs: number;
  /** Event-loop delay p99 above which background work backs off. */
  eventLoopDelayMs: number;
  /** Share of busy pool samples at or above which background work backs off. */
  poolBusyShare: number;
  /** Factor of a back-off (0..1). */
  decrease: number;
  /** Least milliseconds between two back-offs: the next one waits for answers given after the first. */
  cooldownMs: number;
  /** Milliseconds of quiet after a back-off before the limit grows again (the signals' window). */
  windowMs: number;
  /** Least milliseconds between two increases. */
  growEveryMs: number;
}

/** A kind of work's bounds: its floor (0 allowed, see the gate's trickle) and its maximum. */
export interface LimitBounds {
  min: number;
  max: number;
}

/** A kind of work's state between evaluations. */
export interface LimitState {
  limit: number;
  /** When the limit was last lowered (epoch ms); null: never. */
  lastDecreaseAt: number | null;
  /** When it was last raised (epoch ms); null: never. */
  lastIncreaseAt: number | null;
}

/**
 * The slowest the intake is seen to be, ms: its answers' p99 or the oldest callback still in
 * flight, whichever is longer; null when the window had no answer and none is in flight (idle).
 */
export function intakeSlowestMs(signals: IntakeSignals): number | null {
  if (signals.intakeP99Ms === null && signals.oldestInFlightMs <= 0) return null;
  return Math.max(signals.intakeP99Ms ?? 0, signals.oldestInFlightMs);
}

/** The signal over its bound, in this order; null when none is. An idle intake has none. */
export function pressureOf(signals: IntakeSignals, policy: LimitPolicy): LimitReason | null {
  const slowest = intakeSlowestMs(signals);
  // Nothing to protect without an intake: background work takes what the machine has.
  if (slowest === null) return null;
  if (slowest > policy.targetMs) return 'intake_slow';
  if (signals.poolBusyShare >= policy.poolBusyShare) return 'pool_busy';
  if (signals.eventLoopP99Ms > policy.eventLoopDelayMs) return 'event_loop_delay';
  return null;
}

/**
 * The next state of a kind at `now`, and the reason when its limit changed (undefined: unchanged).
 * Under pressure: `floor(limit × decrease)`, at least `min`, unless a back-off happened less than
 * `cooldownMs` ago (the window still holds answers given before it). Quiet (an idle intake, or
 * its slowest ({@link intakeSlowestMs}) at most half the target, and nothing over its bound): one more, at most `max`,
 * once a whole window has passed since the last back-off and `growEveryMs` since the last
 * increase. Otherwise (between half the target and the target) it holds.
 */
export function nextLimit(
  state: LimitState,
  bounds: LimitBounds,
  signals: IntakeSignals,
  policy: LimitPolicy,
  now: number,
): { state: LimitState; reason?: LimitReason } {
  const since = (at: number | null) => (at === null ? Infinity : now - at);
  const pressure = pressureOf(signals, policy);
  if (pressure) {
    const lowered = Math.max(bounds.min, Math.floor(state.limit * policy.decrease));
    if (lowered >= state.limit || since(state.lastDecreaseAt) < policy.cooldownMs) return { state };
    return { state: { ...state, limit: lowered, lastDecreaseAt: now }, reason: pressure };
  }
  const slowest = intakeSlowestMs(signals);
  const quiet = slowest === null || slowest <= policy.targetMs / 2;
  if (
    !quiet ||
    state.limit >= bounds.max ||
    since(state.lastDecreaseAt) < policy.windowMs ||
    since(state.lastIncreaseAt) < policy.growEveryMs
  ) {
    // A maximum lowered by configuration (or a limit above it) comes down at once.
    return state.limit > bounds.max ? { state: { ...state, limit: bounds.max } } : { state };
  }
  return {
    state: { ...state, limit: Math.min(bounds.max, state.limit + 1), lastIncreaseAt: now },
    reason: slowest === null ? 'intake_idle' : 'intake_quiet',
  };
}

/** The `p`th percentile (0..100, nearest rank) of `values`; null when empty. Sorts a copy. */
export function percentile(values: readonly number[], p: number): number | null {
  if (!values.length) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
