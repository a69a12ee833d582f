import Joi from 'joi';
import { configFragment } from '../config/config-fragment.js';

/** The background-work governor: the callback comes first (docs/background-work.md). */
export interface BackgroundConfig {
  /** false: every kind of background work keeps its configured concurrency. */
  enabled: boolean;
  /** Milliseconds; the callback's answer p99 above which background work backs off. */
  targetMs: number;
  /** Milliseconds; the event loop's delay p99 above which background work backs off. */
  eventLoopDelayMs: number;
  /** Milliseconds of answers the p99 is taken over; also the quiet needed before growing again. */
  windowMs: number;
}

/**
 * `BACKGROUND_*`. `BACKGROUND_TARGET_MS` is checked against `CALLBACK_DEADLINE_MS` (the transaction
 * slice's), which the app's list validates before it.
 */
export const backgroundConfig = configFragment('background', {
  schema: {
    BACKGROUND_GOVERNOR: Joi.boolean().truthy('1').falsy('0').default(true),
    BACKGROUND_TARGET_MS: Joi.number()
      .integer()
      .min(10)
      .max(4750)
      .default(500)
      .custom((v: number, helpers) => {
        const deadline = (helpers.state.ancestors[0] as Record<string, unknown>).CALLBACK_DEADLINE_MS;
        return typeof deadline === 'number' && v > deadline / 2
          ? helpers.message({ custom: 'BACKGROUND_TARGET_MS must be at most half of CALLBACK_DEADLINE_MS' })
          : v;
      }),
    BACKGROUND_EVENT_LOOP_DELAY_MS: Joi.number().integer().min(10).max(5000).default(200),
    BACKGROUND_WINDOW_MS: Joi.number().integer().min(1000).max(60_000).default(2000),
  },
  build: (v): BackgroundConfig => ({
    enabled: v.BACKGROUND_GOVERNOR as boolean,
    targetMs: v.BACKGROUND_TARGET_MS as number,
    eventLoopDelayMs: v.BACKGROUND_EVENT_LOOP_DELAY_MS as number,
    windowMs: v.BACKGROUND_WINDOW_MS as number,
  }),
});

/** Injection token of the {@link BackgroundConfig} slice. */
export const BACKGROUND_CONFIG = backgroundConfig.token;
