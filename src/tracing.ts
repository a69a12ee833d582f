/**
 * OpenTelemetry traces, preloaded before the app's modules (`node --import ./dist/src/tracing.js
 * dist/src/main.js`, as `npm start` does): does nothing unless the standard variables ask for
 * traces (docs/operating.md, "Traces"). On: registers the ESM loader hook (auto-instrumentation of
 * ES modules needs it before they load), starts the SDK (`@opentelemetry/sdk-node`: OTLP over
 * HTTP as `OTEL_EXPORTER_OTLP_*` say, W3C trace context) with the http, express, Nest, pg, undici
 * and amqplib instrumentations, and turns on the receiver's own spans. pg never reports statement
 * parameters (amounts, keys), and keeps {@link STATEMENT_TEXT_CHARS} of a statement's text.
 */
import { existsSync } from 'node:fs';
import { register } from 'node:module';
import { enableTracing, setTracingShutdown, STATEMENT_TEXT_CHARS } from './platform/observability/tracing.js';

/**
 * True when `env` asks for traces: `OTEL_TRACES_EXPORTER` (other than `none`), an OTLP endpoint
 * (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), or
 * `OTEL_SDK_DISABLED=false`; never with `OTEL_SDK_DISABLED=true`.
 */
export function tracesRequested(env: NodeJS.ProcessEnv): boolean {
  const disabled = env.OTEL_SDK_DISABLED?.trim().toLowerCase();
  if (disabled === 'true') return false;
  const exporter = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  if (exporter === 'none') return false;
  return (
    disabled === 'false' ||
    !!exporter ||
    !!env.OTEL_EXPORTER_OTLP_ENDPOINT ||
    !!env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
  );
}

async function startTracing(): Promise<void> {
  // Only the ES modules an instrumentation patches go through the hook (each wrapped module costs).
  register('@opentelemetry/instrumentation/hook.mjs', import.meta.url, {
    data: { include: ['@nestjs/core', 'express', 'pg', 'pg-pool', 'undici', 'amqplib'] },
  });
  const [{ NodeSDK }, http, express, nest, pgi, undici, amqp] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/instrumentation-http'),
    import('@opentelemetry/instrumentation-express'),
    import('@opentelemetry/instrumentation-nestjs-core'),
    import('@opentelemetry/instrumentation-pg'),
    import('@opentelemetry/instrumentation-undici'),
    import('@opentelemetry/instrumentation-amqplib'),
  ]);
  const sdk = new NodeSDK({
    serviceName: process.env.OTEL_SERVICE_NAME ? undefined : 'settlement-receiver',
    // Traces only, unless asked: the SDK would otherwise also export OTLP metrics (what /metrics
    // already serves, recorded twice on every request) and set up an OTLP log pipeline.
    ...(process.env.OTEL_METRICS_EXPORTER ? {} : { metricReaders: [] }),
    ...(process.env.OTEL_LOGS_EXPORTER ? {} : { logRecordProcessors: [] }),
    instrumentations: [
      new http.HttpInstrumentation({
        // Probes and scrapes are not deliveries: no trace of their own.
        ignoreIncomingRequestHook: (req) => /^\/(health|metrics)(\/|\?|$)/.test(req.url ?? ''),
      }),
      // Not a span per middleware and router layer (a dozen per request): the HTTP span, Nest's
      // and the receiver's own say where the time went.
      new express.ExpressInstrumentation({
        ignoreLayersType: [
          express.ExpressLayerType.MIDDLEWARE,
          express.ExpressLayerType.ROUTER,
          express.ExpressLayerType.REQUEST_HANDLER,
        ],
      }),
      new nest.NestInstrumentation(),
      // Statement texts only, never their parameters; no spans for the pool's own queries, nor for
      // taking a connection (the transaction's span covers it).
      new pgi.PgInstrumentation({
        enhancedDatabaseReporting: false,
        requireParentSpan: true,
        ignoreConnectSpans: true,
        requestHook: (span, { query }) => {
          // The posting statements are kilobytes of generated SQL, sent with every batch: the span
          // keeps their first STATEMENT_TEXT_CHARS (the name is in the span's name), so exporting
          // costs a fraction of what it did (issue 41's overhead figure, bench/RESULTS.md).
          if (query.text.length > STATEMENT_TEXT_CHARS)
            span.setAttribute('db.query.text', `${query.text.slice(0, STATEMENT_TEXT_CHARS)}…`);
        },
      }),
      new undici.UndiciInstrumentation(),
      new amqp.AmqplibInstrumentation(),
    ],
  });
  sdk.start();
  setTracingShutdown(() => sdk.shutdown());
  enableTracing();
}

if (existsSync('.env')) process.loadEnvFile('.env');
if (tracesRequested(process.env)) await startTracing();
