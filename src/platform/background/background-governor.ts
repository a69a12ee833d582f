import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { Counter, Gauge } from 'prom-client';
import { DataSource } from 'typeorm';
import { BACKGROUND_CONFIG } from './background.config.js';
import type { BackgroundConfig } from './background.config.js';
import { DeliveryObserver } from '../deliveries/delivery-observer.js';
import { MetricsRegistry } from '../observability/metrics-registry.js';
import {
  IntakeSignals,
  LimitBounds,
  LimitPolicy,
  LimitState,
  nextLimit,
  percentile,
  PRESSURE_REASONS,
  QUIET_REASONS,
} from './limit-rule.js';

/** Metric names of the governor (docs/operating.md#metrics). */
export const BACKGROUND_METRIC = {
  limit: 'settlement_background_limit',
  max: 'settlement_background_limit_max',
  inFlight: 'settlement_background_in_flight',
  changes: 'settlement_background_limit_changes_total',
  intakeP99: 'settlement_background_intake_p99_seconds',
  oldestInFlight: 'settlement_background_intake_oldest_in_flight_seconds',
  poolWaiting: 'settlement_background_pool_waiting',
  eventLoopP99: 'settlement_background_event_loop_delay_p99_seconds',
} as const;

/**
 * What the governor reads of the machine, and its clock: an injection token so that tests drive
 * it by hand ({@link BACKGROUND_PROBES}). The real ones read pg's pool and perf_hooks.
 */
export interface GovernorProbes {
  now(): number;
  /** Calls `fn` every `ms` until the returned function is called. */
  every(ms: number, fn: () => void): () => void;
  /** Requests waiting for a pool connection now. */
  poolWaiting(): number;
  /** p99 of the event loop's delay since the last call, ms (and starts a new period). */
  eventLoopP99Ms(): number;
}

/** Injection token of {@link GovernorProbes} ({@link realProbes} in the app). */
export const BACKGROUND_PROBES = Symbol('BACKGROUND_PROBES');

/** The kinds of background work (a future one, e.g. a broker publisher, adds its name). */
export type WorkKind = 'wallet' | 'inbox' | 'reconciliation' | (string & NonNullable<unknown>);

/** Milliseconds between evaluations of the rule. */
export const EVALUATE_EVERY_MS = 250;
/** Milliseconds between two samples of the pool's waiting requests. */
export const POOL_SAMPLE_MS = 100;
/** At a limit of 0, one permit is still given this often (the minimum trickle). */
export const TRICKLE_MS = 1000;
/** Answer times kept at most (the window is also bounded in time). */
const MAX_SAMPLES = 20_000;

/**
 * A kind of work's permits: {@link acquire} before taking work (a claim, an apply, a coupon read),
 * the returned release when done. At most `limit` are held at once; the governor moves `limit`.
 */
export class WorkGate {
  private held = 0;
  private lastGrantAt = -Infinity;
  private readonly waiters: { grant: () => void; signal?: AbortSignal }[] = [];
  /** @internal */
  state: LimitState;

  constructor(
    readonly kind: WorkKind,
    readonly bounds: LimitBounds,
    private readonly now: () => number,
    private readonly onChange: () => void,
  ) {
    this.state = { limit: bounds.max, lastDecreaseAt: null, lastIncreaseAt: null };
  }

  /** The current limit. */
  get limit(): number {
    return this.state.limit;
  }

  /** Permits held now. */
  get inFlight(): number {
    return this.held;
  }

  /**
   * Waits for a permit (at once while fewer than `limit` are held; at a limit of 0, one every
   * {@link TRICKLE_MS} when none is held). @returns its release (idempotent); undefined when
   * `signal` was aborted first (the caller stops).
   */
  acquire(signal?: AbortSignal): Promise<(() => void) | undefined> {
    if (signal?.aborted) return Promise.resolve(undefined);
    if (this.mayGrant()) return Promise.resolve(this.grant());
    return new Promise((resolve) => {
      // A loop waits on its one signal over and over: a granted wait takes its listener off.
      const abort = () => {
        const at = this.waiters.indexOf(waiter);
        if (at >= 0) this.waiters.splice(at, 1);
        resolve(undefined);
      };
      const waiter = {
        signal,
        grant: () => {
          signal?.removeEventListener('abort', abort);
          resolve(this.grant());
        },
      };
      this.waiters.push(waiter);
      signal?.addEventListener('abort', abort, { once: true });
    });
  }

  /** @internal Gives permits to waiters while the limit (or the trickle) allows. */
  pump(): void {
    while (this.waiters.length && this.mayGrant()) (this.waiters.shift() as { grant: () => void }).grant();
  }

  private mayGrant(): boolean {
    if (this.held < this.state.limit) return true;
    return this.state.limit === 0 && this.held === 0 && this.now() - this.lastGrantAt >= TRICKLE_MS;
  }

  private grant(): () => void {
    this.held++;
    this.lastGrantAt = this.now();
    this.onChange();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held--;
      this.onChange();
      this.pump();
    };
  }
}

/** The real probes: wall clock, timers that do not hold the process, pg's pool, perf_hooks. */
export function realProbes(dataSource: DataSource | undefined): GovernorProbes {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  const pool = (dataSource?.driver as { master?: { waitingCount?: number } } | undefined)?.master;
  return {
    now: () => Date.now(),
    every: (ms, fn) => {
      const timer = setInterval(fn, ms);
      timer.unref();
      return () => {
        clearInterval(timer);
        histogram.disable();
      };
    },
    poolWaiting: () => pool?.waitingCount ?? 0,
    eventLoopP99Ms: () => {
      const p99 = histogram.count ? histogram.percentile(99) / 1e6 : 0;
      histogram.reset();
      return p99;
    },
  };
}

/**
 * The callback comes first (docs/background-work.md): one governor per process that every
 * background loop asks for a permit before it takes work ({@link register} a kind, then
 * {@link WorkGate.acquire}). Every {@link EVALUATE_EVERY_MS} it reads the intake's signals (the
 * callback's answer times over `BACKGROUND_WINDOW_MS`, requests waiting for a pool connection,
 * the event loop's delay) and moves each kind's limit by {@link nextLimit} between its floor and
 * its configured maximum. Exposes the limits, permits held, changes by reason and the signals as
 * metrics; logs each back-off and each return to the maximum. With `BACKGROUND_GOVERNOR=0` the
 * limits stay at their maxima.
 */
@Injectable()
export class BackgroundGovernor implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('BackgroundGovernor');
  private readonly gates = new Map<WorkKind, WorkGate>();
  private readonly policy: LimitPolicy;
  /** Answer times (ms) with when they were answered, oldest first. */
  private readonly answers: { at: number; ms: number }[] = [];
  /** Callbacks received and not answered yet, with when they were received, oldest first. */
  private readonly inFlight = new Set<{ at: number }>();
  private poolSamples = 0;
  private poolBusySamples = 0;
  private lastPoolWaiting = 0;
  private lastSignals: IntakeSignals = {
    intakeP99Ms: null,
    oldestInFlightMs: 0,
    poolBusyShare: 0,
    eventLoopP99Ms: 0,
  };
  private stops: (() => void)[] = [];
  private readonly limitGauge: Gauge<'kind'>;
  private readonly maxGauge: Gauge<'kind'>;
  private readonly inFlightGauge: Gauge<'kind'>;
  private readonly changes: Counter<'kind' | 'reason'>;

  constructor(
    @Inject(BACKGROUND_CONFIG) private readonly config: BackgroundConfig,
    private readonly metrics: MetricsRegistry,
    private readonly observer: DeliveryObserver,
    @Inject(BACKGROUND_PROBES) private readonly probes: GovernorProbes,
  ) {
    const { targetMs, eventLoopDelayMs, windowMs } = config;
    this.policy = {
      targetMs,
      eventLoopDelayMs,
      windowMs,
      poolBusyShare: 0.5,
      decrease: 0.5,
      cooldownMs: 2 * EVALUATE_EVERY_MS,
      growEveryMs: 2 * EVALUATE_EVERY_MS,
    };
    const registers = [metrics.registry];
    this.limitGauge = new Gauge({
      name: BACKGROUND_METRIC.limit,
      help: 'Concurrency a kind of background work may use now (the governor moves it between its floor and maximum)',
      labelNames: ['kind'],
      registers,
    });
    this.maxGauge = new Gauge({
      name: BACKGROUND_METRIC.max,
      help: 'Configured concurrency of a kind of background work (its limit when the intake is quiet)',
      labelNames: ['kind'],
      registers,
    });
    this.inFlightGauge = new Gauge({
      name: BACKGROUND_METRIC.inFlight,
      help: 'Permits of a kind of background work held now (claims, applies, reads in progress)',
      labelNames: ['kind'],
      registers,
    });
    this.changes = new Counter({
      name: BACKGROUND_METRIC.changes,
      help: 'Changes of a background limit, by kind and reason (intake_slow, pool_busy, event_loop_delay lower it; intake_quiet, intake_idle raise it)',
      labelNames: ['kind', 'reason'],
      registers,
    });
    const signal = (name: string, help: string, value: () => number) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(value());
        },
      });
    signal(
      BACKGROUND_METRIC.intakeP99,
      "p99 of the callback's answer times over BACKGROUND_WINDOW_MS, as the governor last saw it (0: no answer)",
      () => (this.lastSignals.intakeP99Ms ?? 0) / 1000,
    );
    signal(
      BACKGROUND_METRIC.oldestInFlight,
      'Age of the oldest callback received and not answered yet, as the governor last saw it (0: none)',
      () => this.lastSignals.oldestInFlightMs / 1000,
    );
    signal(
      BACKGROUND_METRIC.poolWaiting,
      'Requests waiting for a database pool connection at the last sample',
      () => this.lastPoolWaiting,
    );
    signal(
      BACKGROUND_METRIC.eventLoopP99,
      "p99 of the event loop's delay over the governor's last evaluation period",
      () => this.lastSignals.eventLoopP99Ms / 1000,
    );
  }

  onModuleInit(): void {
    this.observer.onAnswered((durationMs) => this.intakeAnswered(durationMs));
    this.observer.onReceived(() => this.intakeReceived());
    if (!this.config.enabled) return;
    this.stops.push(this.probes.every(POOL_SAMPLE_MS, () => this.samplePool()));
    this.stops.push(this.probes.every(EVALUATE_EVERY_MS, () => this.evaluate()));
  }

  onApplicationShutdown(): void {
    for (const stop of this.stops.splice(0)) stop();
  }

  /**
   * The gate of a kind of work with `max` permits (its configured concurrency) and a floor `min`
   * (default 1; 0 for pure catch-up work, which then still gets one permit every
   * {@link TRICKLE_MS}). Registering a kind again returns its gate.
   */
  register(kind: WorkKind, max: number, min = 1): WorkGate {
    const known = this.gates.get(kind);
    if (known) return known;
    const bounds = { min: Math.min(Math.max(0, min), max), max };
    const gate: WorkGate = new WorkGate(
      kind,
      bounds,
      () => this.probes.now(),
      () => this.inFlightGauge.set({ kind }, gate.inFlight),
    );
    this.gates.set(kind, gate);
    this.limitGauge.set({ kind }, gate.limit);
    this.maxGauge.set({ kind }, bounds.max);
    this.inFlightGauge.set({ kind }, 0);
    for (const reason of [...PRESSURE_REASONS, ...QUIET_REASONS]) this.changes.inc({ kind, reason }, 0);
    return gate;
  }

  /** One answer of the callback, `durationMs` from receipt (the {@link DeliveryObserver} calls it). */
  intakeAnswered(durationMs: number): void {
    this.answers.push({ at: this.probes.now(), ms: durationMs });
    if (this.answers.length > MAX_SAMPLES) this.answers.splice(0, this.answers.length - MAX_SAMPLES);
  }

  /** One callback received; @returns the function to call once it is answered. */
  intakeReceived(): () => void {
    const entry = { at: this.probes.now() };
    this.inFlight.add(entry);
    return () => this.inFlight.delete(entry);
  }

  /** The signals as of the last evaluation. */
  get signals(): IntakeSignals {
    return { ...this.lastSignals };
  }

  /** Samples the pool's waiting requests (every {@link POOL_SAMPLE_MS}). */
  samplePool(): void {
    this.lastPoolWaiting = this.probes.poolWaiting();
    this.poolSamples++;
    if (this.lastPoolWaiting > 0) this.poolBusySamples++;
  }

  /** Age of the oldest callback in flight at `now`, ms; 0 when none (a Set keeps insertion order). */
  private oldestInFlightMs(now: number): number {
    const oldest = this.inFlight.values().next().value;
    return oldest ? Math.max(0, now - oldest.at) : 0;
  }

  /** Reads the signals and moves every kind's limit (every {@link EVALUATE_EVERY_MS}). */
  evaluate(): void {
    const now = this.probes.now();
    const from = now - this.policy.windowMs;
    let drop = 0;
    while (drop < this.answers.length && this.answers[drop].at < from) drop++;
    if (drop) this.answers.splice(0, drop);
    const signals: IntakeSignals = {
      intakeP99Ms: percentile(
        this.answers.map((a) => a.ms),
        99,
      ),
      oldestInFlightMs: this.oldestInFlightMs(now),
      poolBusyShare: this.poolSamples ? this.poolBusySamples / this.poolSamples : 0,
      eventLoopP99Ms: this.probes.eventLoopP99Ms(),
    };
    this.poolSamples = 0;
    this.poolBusySamples = 0;
    this.lastSignals = signals;
    for (const gate of this.gates.values()) {
      const before = gate.state.limit;
      const { state, reason } = nextLimit(gate.state, gate.bounds, signals, this.policy, now);
      gate.state = state;
      if (state.limit === before) {
        gate.pump(); // at a limit of 0, the trickle's permit
        continue;
      }
      this.limitGauge.set({ kind: gate.kind }, state.limit);
      if (reason) this.changes.inc({ kind: gate.kind, reason });
      if (state.limit < before)
        this.logger.warn(
          `${gate.kind}: background limit ${before} → ${state.limit} (${reason ?? 'maximum lowered'}: ${describe(signals)})`,
        );
      else if (state.limit === gate.bounds.max)
        this.logger.log(
          `${gate.kind}: background limit back at its maximum ${state.limit} (${describe(signals)})`,
        );
      gate.pump();
    }
  }
}

/** The signals in a log line. */
function describe(s: IntakeSignals): string {
  const p99 = s.intakeP99Ms === null ? 'no answers' : `answers p99 ${Math.round(s.intakeP99Ms)} ms`;
  const open = s.oldestInFlightMs > 0 ? `, oldest in flight ${Math.round(s.oldestInFlightMs)} ms` : '';
  return `${p99}${open}, pool busy in ${Math.round(100 * s.poolBusyShare)} % of samples, event loop p99 ${Math.round(s.eventLoopP99Ms)} ms`;
}
