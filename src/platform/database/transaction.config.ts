import Joi from 'joi';
import { configFragment } from '../config/config-fragment.js';

/**
 * The time budget of a transaction (docs/configuration.md#http-and-the-callback): the callback's
 * deadline, which is also every other transaction's and request's, and the in-process re-runs.
 */
export interface TransactionConfig {
  /** Milliseconds the callback may take end to end before it is rolled back and answered 503. */
  callbackDeadlineMs: number;
  /** In-process re-runs of a whole transaction after 40001/40P01. */
  transientRetries: number;
}

/** `CALLBACK_DEADLINE_MS`, `CALLBACK_TRANSIENT_RETRIES`. */
export const transactionConfig = configFragment('transaction', {
  schema: {
    CALLBACK_DEADLINE_MS: Joi.number().integer().min(500).max(9500).default(8000),
    CALLBACK_TRANSIENT_RETRIES: Joi.number().integer().min(0).max(10).default(3),
  },
  build: (v): TransactionConfig => ({
    callbackDeadlineMs: v.CALLBACK_DEADLINE_MS as number,
    transientRetries: v.CALLBACK_TRANSIENT_RETRIES as number,
  }),
});

/** Injection token of the {@link TransactionConfig} slice. */
export const TRANSACTION_CONFIG = transactionConfig.token;
