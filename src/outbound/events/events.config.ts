import Joi from 'joi';
import { configFragment, csv, duration } from '../../platform/config/config-fragment.js';
import { OperationType } from '../../core/ledger/ledger.types.js';
import type { OutboxSettings } from '../outbox/outbox.types.js';
import { operationTypesRule } from '../wallet/wallet.config.js';

/** The settlement events sent to the bookmaker's message broker (docs/events.md). */
export interface EventsConfig extends OutboxSettings {
  /**
   * Names of the event publishers in force (`EVENT_PUBLISHERS`): `rabbitmq`, `nats`, or any
   * registered `EventPublisher` (docs/extending.md); empty: no event is written.
   */
  publishers: string[];
  /** Operation types an event is written for (none when no publisher is named). */
  operationTypes: OperationType[];
  /** The RabbitMQ publisher: broker URL and the exchange events are published to (topic, durable). */
  rabbitmq: { url: string; exchange: string };
  /** The NATS JetStream publisher: servers, the stream and its subjects' prefix, its duplicate window (ms). */
  nats: { servers: string[]; stream: string; subjectPrefix: string; duplicateWindowMs: number };
}

/** The publishers of the receiver itself (docs/events.md). */
export const BUILT_IN_EVENT_PUBLISHERS = ['rabbitmq', 'nats'] as const;

/**
 * The error of `EVENT_PUBLISHERS` names (`missing`) that name no publisher (`known`: the names
 * found), refused before the database when no extension module is given, else at start-up.
 */
export function unknownEventPublishers(missing: readonly string[], known: readonly string[]): Error {
  const names = [...new Set([...BUILT_IN_EVENT_PUBLISHERS, ...known])];
  return new Error(
    `Invalid configuration:\n  - EVENT_PUBLISHERS: no publisher ${missing.map((m) => `'${m}'`).join(', ')} (known: ${names.join(', ')})`,
  );
}

/** `EVENT_OPERATION_TYPES` when unset: every financial operation of a coupon. */
export const DEFAULT_EVENT_OPERATION_TYPES = 'stake_debit,final_credit,recalculation_debit';

/** A publisher's name (lower case, digits, dashes). */
const NAME = /^[a-z][a-z0-9-]{0,31}$/;

/** `EVENT_*`, `RABBITMQ_*`, `NATS_*` (docs/events.md, "Settings"). */
export const eventsConfig = configFragment('events', {
  schema: {
    EVENT_PUBLISHERS: Joi.string()
      .custom((v: string, helpers) => {
        const bad = csv(v).filter((n) => !NAME.test(n));
        const twice = csv(v).filter((n, i, all) => all.indexOf(n) !== i);
        return bad.length || twice.length
          ? helpers.message({
              custom: `EVENT_PUBLISHERS must be comma-separated publisher names such as rabbitmq,nats (each once): ${[...bad, ...twice].join(', ')}`,
            })
          : v;
      })
      .optional(),
    EVENT_OPERATION_TYPES: operationTypesRule('EVENT_OPERATION_TYPES').default(DEFAULT_EVENT_OPERATION_TYPES),
    EVENT_TIMEOUT_MS: Joi.number().integer().min(100).max(60_000).default(5000),
    EVENT_RETRY_FOR: duration()
      .custom((v: number, helpers) =>
        v >= 1000 ? v : helpers.message({ custom: 'EVENT_RETRY_FOR must be at least 1s' }),
      )
      .default(24 * 3_600_000),
    EVENT_RETRY_BASE_MS: Joi.number().integer().min(10).max(3_600_000).default(1000),
    EVENT_RETRY_MAX_MS: Joi.number()
      .integer()
      .min(Joi.ref('EVENT_RETRY_BASE_MS'))
      .max(86_400_000)
      .default(60_000)
      .messages({ 'number.min': 'EVENT_RETRY_MAX_MS must not be below EVENT_RETRY_BASE_MS' }),
    EVENT_CONCURRENCY: Joi.number().integer().min(1).max(64).default(4),
    EVENT_CLAIM_SIZE: Joi.number().integer().min(1).max(256).default(32),
    EVENT_BATCH_SIZE: Joi.number().integer().min(1).max(256).default(32),
    EVENT_POLL_INTERVAL_MS: Joi.number().integer().min(10).max(60_000).default(250),
    RABBITMQ_URL: Joi.string()
      .uri({ scheme: ['amqp', 'amqps'] })
      .default('amqp://guest:guest@127.0.0.1:5672'),
    RABBITMQ_EXCHANGE: Joi.string()
      .pattern(/^[A-Za-z0-9_.:-]{1,127}$/)
      .default('settlement'),
    NATS_SERVERS: Joi.string().default('127.0.0.1:4222'),
    NATS_STREAM: Joi.string()
      .pattern(/^[A-Za-z0-9_-]{1,64}$/)
      .default('SETTLEMENT'),
    NATS_SUBJECT_PREFIX: Joi.string()
      .pattern(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/)
      .default('settlement'),
    NATS_DUPLICATE_WINDOW: duration()
      .custom((v: number, helpers) =>
        v >= 1000 ? v : helpers.message({ custom: 'NATS_DUPLICATE_WINDOW must be at least 1s' }),
      )
      .default(24 * 3_600_000),
  },
  build: (v): EventsConfig => {
    const publishers = csv(v.EVENT_PUBLISHERS as string | undefined);
    return {
      publishers,
      operationTypes: publishers.length ? (csv(v.EVENT_OPERATION_TYPES as string) as OperationType[]) : [],
      timeoutMs: v.EVENT_TIMEOUT_MS as number,
      retryForMs: v.EVENT_RETRY_FOR as number,
      retryBaseMs: v.EVENT_RETRY_BASE_MS as number,
      retryMaxMs: v.EVENT_RETRY_MAX_MS as number,
      concurrency: v.EVENT_CONCURRENCY as number,
      claimSize: v.EVENT_CLAIM_SIZE as number,
      batchSize: v.EVENT_BATCH_SIZE as number,
      pollIntervalMs: v.EVENT_POLL_INTERVAL_MS as number,
      rabbitmq: { url: v.RABBITMQ_URL as string, exchange: v.RABBITMQ_EXCHANGE as string },
      nats: {
        servers: csv(v.NATS_SERVERS as string),
        stream: v.NATS_STREAM as string,
        subjectPrefix: v.NATS_SUBJECT_PREFIX as string,
        duplicateWindowMs: v.NATS_DUPLICATE_WINDOW as number,
      },
    };
  },
});

/** Injection token of the {@link EventsConfig} slice. */
export const EVENTS_CONFIG = eventsConfig.token;
