import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Logger as PinoNestLogger, PinoLogger } from 'nestjs-pino';
import pg from 'pg';
import { pathToFileURL } from 'node:url';
import { AppModule, appLogging } from './app.module.js';
import type { AppOptions } from './app.module.js';
import { configureApp } from './app.setup.js';
import { checkBuiltInNames, loadConfig } from './app.config.js';
import { EmbeddedPostgresServer } from './platform/database/embedded-postgres.js';
import { describeExtensions } from './extension.js';
import { ShutdownState } from './platform/health/shutdown-state.js';
import { loggerParams } from './platform/observability/logging.js';
import { shutdownTracing } from './platform/observability/tracing.js';
import { describeWalletConnector } from './outbound/wallet/wallet-connectors.js';

/**
 * Starts the receiver (`npm start`; a bookmaker's own entry point calls it with its modules:
 * `startReceiver({ extensions: [AcmeModule] })`, docs/extending.md): validated configuration (a bad variable stops the start with its name),
 * an embedded PostgreSQL under `./.data/` when `DATABASE_URL` is unset, migrations under an
 * advisory lock, then HTTP. SIGTERM/SIGINT: readiness and new requests 503 at once, requests in
 * flight finish (commit and answer, or roll back at their deadline), then HTTP (keep-alive
 * connections included), the pool and the embedded server close; the process exits within 10 s.
 */
export async function startReceiver(options: Pick<AppOptions, 'extensions'> = {}): Promise<void> {
  const logger = new Logger('Bootstrap');
  if (existsSync('.env')) process.loadEnvFile('.env');
  let config;
  try {
    config = loadConfig(process.env, options.extensions);
    checkBuiltInNames(config, options.extensions ?? []);
  } catch (err) {
    console.error((err as Error).message);
    process.exit(1);
  }
  // Every line is the app's own nestjs-pino format (the embedded PostgreSQL's and the migrations'
  // included; only a configuration error is a plain line on stderr): nestjs-pino builds its one
  // pino-http instance on first use, so this logger and the app's share it.
  const logParams = loggerParams(appLogging(config));
  Logger.overrideLogger(new PinoNestLogger(new PinoLogger(logParams), logParams));
  for (const warning of config.money.warnings) logger.warn(warning);
  // Memory: V8 lets the old generation grow to up to 4× the live heap before a full GC; under
  // concurrent load most of that is promoted request garbage. HEAP_GROWING_PERCENT (default 100)
  // bounds it; V8 reads the flag each time it sets the next limit, so it applies from here on.
  if (config.runtime.heapGrowingPercent > 0)
    setFlagsFromString(`--heap-growing-percent=${config.runtime.heapGrowingPercent}`);
  const { host, port } = config.http;
  const portProblem = await httpPortProblem(host, port);
  if (portProblem) {
    console.error(`start-up failed: PORT ${port} on ${host} ${portProblem}; set PORT`);
    process.exit(1);
  }
  if (config.database.databaseUrl) {
    const problem = await databaseProblem(config.database.databaseUrl);
    if (problem) {
      console.error(`start-up failed: ${describeStartupError(problem)}`);
      process.exit(1);
    }
  }
  let embedded: EmbeddedPostgresServer | undefined;
  if (!config.database.databaseUrl) {
    embedded = new EmbeddedPostgresServer(
      {
        dataDir: config.database.embeddedDataDir,
        clustersDir: config.database.embeddedClustersDir,
        port: config.database.embeddedPort,
        database: 'settlement',
      },
      new Logger('EmbeddedPostgres'),
    );
    config = { ...config, database: { ...config.database, databaseUrl: await embedded.start() } };
  }
  const app = await NestFactory.create(AppModule.forRoot(config, options), {
    bodyParser: false,
    abortOnError: false,
    bufferLogs: true,
  });
  configureApp(app, config);
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    app.get(ShutdownState).begin(signal);
    const force = setTimeout(() => {
      logger.error('shutdown took over 10 s: exiting now');
      process.exit(1);
    }, 10_000);
    force.unref();
    // Nest's lifecycle: ShutdownState drains requests in flight (beforeApplicationShutdown), then
    // HTTP closes and TypeORM ends the pool (onApplicationShutdown).
    await app.close().catch((e: unknown) => logger.error(String(e)));
    await embedded?.stop().catch((e: unknown) => logger.error(String(e)));
    await shutdownTracing(); // the spans not yet exported, when tracing is on
    logger.log(`${signal}: stopped`);
    process.exit(0);
  };
  // `on`, not `once`: a second signal (npm forwards the one its process group already got, as
  // `docker stop` or a terminal's Ctrl-C send it) must not kill the process mid-drain.
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  await app.listen(port, host);
  logger.log(
    `listening on http://${host}:${port} (callback POST ${config.http.callbackPath}, Swagger UI /docs)` +
      (embedded ? ` on the embedded PostgreSQL (data ${embedded.dataDirectory})` : '') +
      (config.inbox.callbackMode === 'inbox'
        ? `; CALLBACK_MODE=inbox: batches stored, then applied by ${config.inbox.inboxConcurrency} inbox workers`
        : '; CALLBACK_MODE=inline: batches applied before the answer') +
      `; ${describeWalletConnector(config.wallet)}` +
      (config.extensions.settings.length ? `; ${describeExtensions(config.extensions.settings)}` : ''),
  );
}

/**
 * Why HTTP could not listen on `host:port`, checked before anything is started (an embedded
 * PostgreSQL, migrations), or undefined when it can. The real listen comes later; this only makes
 * the common case (a second copy on the same port) fail at once with a clear message.
 */
function httpPortProblem(host: string, port: number): Promise<string | undefined> {
  return new Promise((done) => {
    const probe = createServer();
    probe.once('error', (err: NodeJS.ErrnoException) =>
      done(
        err.code === 'EADDRINUSE'
          ? 'is in use by another process'
          : `cannot be used (${err.code ?? err.message})`,
      ),
    );
    probe.listen(port, host, () => probe.close(() => done(undefined)));
  });
}

/**
 * Why `DATABASE_URL` cannot be used (the connection error after three tries one second apart), or
 * undefined once `SELECT 1` answers: a wrong URL fails at once with one clear line, before the
 * framework starts (and logs its own retries with stacks).
 */
async function databaseProblem(url: string): Promise<unknown> {
  let last: unknown;
  for (let attempt = 1; attempt <= 3; attempt++) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('SELECT 1');
      return undefined;
    } catch (err) {
      last = err;
    } finally {
      await client.end().catch(() => undefined);
    }
    if (attempt < 3) await new Promise((r) => setTimeout(r, 1000));
  }
  return last;
}

/** A start-up failure in one line; a database that cannot be reached is named by its variable. */
function describeStartupError(err: unknown): string {
  const e = err as { code?: string; message?: string };
  const message = e?.message ?? String(err);
  const url = process.env.DATABASE_URL;
  const dbCodes = ['ECONNREFUSED', 'ENOTFOUND', 'ETIMEDOUT', 'EHOSTUNREACH', '3D000', '28P01', '28000'];
  if (
    url &&
    (dbCodes.includes(String(e?.code)) || /connect|database .* does not exist|authentication/i.test(message))
  ) {
    const where = new URL(url);
    return `cannot use DATABASE_URL (${where.hostname}:${where.port || 5432}${where.pathname}): ${message}`;
  }
  return message;
}

/** Runs {@link startReceiver}, or reports why it could not start and exits 1. */
export function main(options: Pick<AppOptions, 'extensions'> = {}): void {
  void startReceiver(options).catch((err: unknown) => {
    console.error(`start-up failed: ${describeStartupError(err)}`);
    process.exit(1);
  });
}

// `node dist/src/main.js`; imported by another entry point, it only exports.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main();
