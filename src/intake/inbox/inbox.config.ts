import Joi from 'joi';
import { configFragment } from '../../platform/config/config-fragment.js';

/** Inbox mode (docs/inbox-mode.md): whether the callback stores batches, and the workers applying them. */
export interface InboxConfig {
  /**
   * `inline`: the callback applies the batch before answering (CONTRACT §4). `inbox`: it commits
   * the verified, validated batch to `callback_inbox` and answers 200; workers apply it later.
   */
  callbackMode: 'inline' | 'inbox';
  /** Milliseconds an idle inbox worker waits before looking for work again. */
  inboxPollIntervalMs: number;
  /** Inbox workers per process (each applies one batch at a time). */
  inboxConcurrency: number;
  /** Failed applications of an inbox row before it goes to the quarantine. */
  inboxMaxAttempts: number;
  /** Milliseconds; retry delay after the first failure, doubled per attempt up to the maximum. */
  inboxRetryBaseMs: number;
  inboxRetryMaxMs: number;
}

/** `CALLBACK_MODE`, `INBOX_*` (docs/configuration.md#inbox-mode). */
export const inboxConfig = configFragment('inbox', {
  schema: {
    CALLBACK_MODE: Joi.string().valid('inline', 'inbox').default('inline'),
    INBOX_POLL_INTERVAL_MS: Joi.number().integer().min(10).max(60_000).default(500),
    INBOX_CONCURRENCY: Joi.number().integer().min(1).max(32).default(8),
    INBOX_MAX_ATTEMPTS: Joi.number().integer().min(1).max(1000).default(10),
    INBOX_RETRY_BASE_MS: Joi.number().integer().min(10).max(3_600_000).default(1000),
    INBOX_RETRY_MAX_MS: Joi.number()
      .integer()
      .min(Joi.ref('INBOX_RETRY_BASE_MS'))
      .max(86_400_000)
      .default(300_000)
      .messages({ 'number.min': 'INBOX_RETRY_MAX_MS must not be below INBOX_RETRY_BASE_MS' }),
  },
  build: (v): InboxConfig => ({
    callbackMode: v.CALLBACK_MODE as 'inline' | 'inbox',
    inboxPollIntervalMs: v.INBOX_POLL_INTERVAL_MS as number,
    inboxConcurrency: v.INBOX_CONCURRENCY as number,
    inboxMaxAttempts: v.INBOX_MAX_ATTEMPTS as number,
    inboxRetryBaseMs: v.INBOX_RETRY_BASE_MS as number,
    inboxRetryMaxMs: v.INBOX_RETRY_MAX_MS as number,
  }),
});

/** Injection token of the {@link InboxConfig} slice. */
export const INBOX_CONFIG = inboxConfig.token;
