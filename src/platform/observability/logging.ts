import type { IncomingMessage, ServerResponse } from 'node:http';
import type { LoggerService } from '@nestjs/common';
import type { Params } from 'nestjs-pino';
import { stdSerializers } from 'pino';
import type { DestinationStream } from 'pino';
import { clientAddressOf } from './client-address.js';
import { logContextMixin } from './log-context.js';
import { requestIdOf } from './request-id.js';

/** Probe and scrape paths: answered often, not worth a line each. */
const PROBES = /^\/(health|metrics)(\/|\?|$)/i;

/**
 * What the log set-up needs to know of the features (given by the app, which composes them):
 * the level, the paths whose requests write their own summary line instead of the access log
 * (the callback's), the headers that carry secrets (the callback's signature), and the fields a
 * request adds to every line written while it is handled (the callback's batch id).
 */
export interface LoggingOptions {
  level: string;
  /** Lower-case paths without a trailing slash, e.g. `/sportapi/callback`. */
  ownSummaryPaths: string[];
  secretHeaders: string[];
  requestFields?: (req: IncomingMessage) => Record<string, unknown>;
}

/** A request the partner API authenticated: the key's name only (set by the auth guard). */
interface NamedKeyRequest {
  apiKey?: { name?: string };
}

/**
 * `nestjs-pino` settings: one JSON line per entry on stdout (or `destination`) at `LOG_LEVEL`;
 * every line of a request carries `requestId` (and the callback's `batchId`); requests are logged
 * by method, URL and client address only, secret-bearing headers redacted; the callback's summary line is
 * {@link DeliveryObserver}'s, other requests get "request completed", with `actor`: the name of
 * the partner API key that authenticated it, never its secret (docs/operating.md#logs).
 */
export function loggerParams(logging: LoggingOptions, destination?: DestinationStream): Params {
  const own = new Set(logging.ownSummaryPaths);
  const isCallback = (req: IncomingMessage) =>
    own.has((req.url ?? '').split('?')[0].replace(/\/+$/, '').toLowerCase());
  const secretHeaders = [
    'authorization',
    'cookie',
    'x-api-key',
    ...logging.secretHeaders.map((h) => h.toLowerCase()),
  ];
  const options = {
    level: logging.level,
    base: { service: 'settlement-receiver' },
    messageKey: 'msg',
    mixin: () => logContextMixin(logging.requestFields),
    quietReqLogger: true,
    customAttributeKeys: { reqId: 'requestId' },
    // Read when the request completes (the guard has run by then); the key's name only.
    customProps: (req: IncomingMessage) => {
      const name = (req as NamedKeyRequest).apiKey?.name;
      return name === undefined ? {} : { actor: name };
    },
    genReqId: (req: IncomingMessage, res: ServerResponse) => {
      const id = requestIdOf(req);
      if (!res.headersSent) res.setHeader('X-Request-Id', id);
      return id;
    },
    autoLogging: { ignore: (req: IncomingMessage) => isCallback(req) || PROBES.test(req.url ?? '') },
    // 500 is a fault; 501/502/503/504 are designed answers (polling off, SportAPI unreachable,
    // transient trouble), so they are warnings like the 4xx.
    customLogLevel: (_req: IncomingMessage, res: ServerResponse, err?: Error) =>
      res.statusCode === 500 || (err && res.statusCode < 400)
        ? 'error'
        : res.statusCode >= 400
          ? 'warn'
          : 'info',
    serializers: {
      // pino-http makes up an Error for every 5xx answer; its stack points into pino-http itself.
      err: (err: Error) =>
        /^failed with status code \d+$/.test(err.message)
          ? { message: err.message }
          : stdSerializers.err(err),
      // The client address (clientAddressOf), not the balancer's, under pino's usual name.
      req: (req: { method?: string; url?: string; remoteAddress?: string; raw?: IncomingMessage }) => ({
        method: req.method,
        url: req.url,
        remoteAddress: req.raw ? clientAddressOf(req.raw) : req.remoteAddress,
      }),
      res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
    },
    redact: {
      paths: secretHeaders.flatMap((h) => [`req.headers["${h}"]`, `headers["${h}"]`]),
      censor: '[redacted]',
    },
  };
  return { pinoHttp: destination ? [options, destination] : options };
}

/**
 * Contexts of Nest's own start-up lines: a module's dependencies initialised, a controller's and
 * each route's mapping, "Starting Nest application", "successfully started" (the receiver's
 * `listening on` line says it).
 */
const FRAMEWORK_DETAIL = new Set([
  'InstanceLoader',
  'RoutesResolver',
  'RouterExplorer',
  'NestFactory',
  'NestApplication',
]);

/**
 * `logger` with the info lines of {@link FRAMEWORK_DETAIL} written at debug (`LOG_LEVEL=debug`
 * shows them); everything else as it was (docs/operating.md#logs).
 */
export function frameworkDetailAtDebug(logger: LoggerService): LoggerService {
  const debug = logger.debug?.bind(logger) ?? (() => undefined);
  return {
    log: (message: unknown, ...params: unknown[]) =>
      FRAMEWORK_DETAIL.has(params.at(-1) as string)
        ? debug(message, ...params)
        : logger.log(message, ...params),
    error: (message: unknown, ...params: unknown[]) => logger.error(message, ...params),
    warn: (message: unknown, ...params: unknown[]) => logger.warn(message, ...params),
    debug: (message: unknown, ...params: unknown[]) => debug(message, ...params),
    verbose: (message: unknown, ...params: unknown[]) => logger.verbose?.(message, ...params),
    fatal: (message: unknown, ...params: unknown[]) => logger.fatal?.(message, ...params),
  };
}
