import Joi from 'joi';
import { configFragment, duration } from '../../platform/config/config-fragment.js';

/** The operator console: its built pages and its API's background work; durations in milliseconds, 0: off. */
export interface ConsoleConfig {
  /** Folder of the built operator console served at `/ops` (docs/console.md). */
  consoleDir: string;
  /** How often the overview's rollup job counts closed minutes of delivery attempts. */
  rollupIntervalMs: number;
  /** How often an idle bulk action worker looks for running bulk actions (also woken on a new one). */
  bulkPollIntervalMs: number;
}

/** `CONSOLE_DIR`, `DELIVERY_ROLLUP_INTERVAL`, `BULK_ACTION_POLL_INTERVAL` (docs/api.md#operator-console-api). */
export const consoleConfig = configFragment('console', {
  schema: {
    CONSOLE_DIR: Joi.string().default('dist/console'),
    DELIVERY_ROLLUP_INTERVAL: duration(true).default(30_000),
    BULK_ACTION_POLL_INTERVAL: duration(true).default(1000),
  },
  build: (v): ConsoleConfig => ({
    consoleDir: v.CONSOLE_DIR as string,
    rollupIntervalMs: v.DELIVERY_ROLLUP_INTERVAL as number,
    bulkPollIntervalMs: v.BULK_ACTION_POLL_INTERVAL as number,
  }),
});

/** Injection token of the {@link ConsoleConfig} slice. */
export const CONSOLE_CONFIG = consoleConfig.token;
