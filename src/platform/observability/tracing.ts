import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Attributes, Context, Link, Span } from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';

/**
 * The receiver's own spans (docs/operating.md, "Traces"). Tracing is off unless the preload
 * (`dist/src/tracing.js`, standard `OTEL_*` variables) or a test called {@link enableTracing}:
 * while off, every helper here runs the work directly and creates no span object, so the hot
 * path pays one boolean test. Attributes never carry statement parameters, amounts or keys.
 */
let enabled = false;

/** The tracer of the receiver's own spans (instrumentation scope `settlement-receiver`). */
const TRACER = 'settlement-receiver';

/** Characters of a statement's text a pg span keeps (`db.query.text`); longer ones end in `…`. */
export const STATEMENT_TEXT_CHARS = 200;

/** Turns the receiver's own spans on (the SDK's provider must be registered first). */
export function enableTracing(on = true): void {
  enabled = on;
}

/** True when spans are recorded ({@link enableTracing}). */
export function tracingEnabled(): boolean {
  return enabled;
}

/**
 * Runs `work` inside a span `name` (a child of the active span; none without one), ended when it settles; a throw
 * marks the span ERROR with the error's name only (messages may quote a body). Tracing off: runs
 * `work` alone.
 */
export function traced<T>(name: string, work: () => Promise<T>, attributes?: Attributes): Promise<T> {
  // Only inside a trace: a background loop's transactions (claims, records) start none of their own.
  if (!enabled || !trace.getActiveSpan()) return work();
  return trace.getTracer(TRACER).startActiveSpan(name, { attributes }, (span) => asSpan(span, work));
}

/** Runs `work` as `span`'s body: the span ends when it settles, marked ERROR on a throw ({@link failSpan}). */
async function asSpan<T>(span: Span, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    failSpan(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/** Synchronous {@link traced}. */
export function tracedSync<T>(name: string, work: () => T, attributes?: Attributes): T {
  if (!enabled || !trace.getActiveSpan()) return work();
  return trace.getTracer(TRACER).startActiveSpan(name, { attributes }, (span) => {
    try {
      return work();
    } catch (err) {
      failSpan(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Marks `span` failed with the error's name (and `code` when it has one), never its message. */
export function failSpan(span: Span, err: unknown): void {
  const e = err as { name?: string; code?: unknown };
  span.setStatus({ code: SpanStatusCode.ERROR, message: e?.name ?? 'Error' });
  if (typeof e?.code === 'string') span.setAttribute('error.type', e.code);
}

/**
 * Starts the span of one incoming delivery: a child of the active span (the HTTP server span when
 * the instrumentations run), else of the `traceparent` header the sender sent, else a new trace.
 * Undefined when tracing is off. The caller ends it and runs the rest inside {@link contextOf}.
 */
export function startServerSpan(
  name: string,
  headers: Record<string, string | string[] | undefined>,
  attributes?: Attributes,
): Span | undefined {
  if (!enabled) return undefined;
  const active = context.active();
  const parent = trace.getSpan(active) ? active : propagation.extract(active, headers);
  return trace
    .getTracer(TRACER)
    .startSpan(
      name,
      { kind: trace.getSpan(active) ? SpanKind.INTERNAL : SpanKind.SERVER, attributes },
      parent,
    );
}

/**
 * Starts a span `name` that ends later (e.g. when the answer is written), a child of the active
 * span; undefined when tracing is off.
 */
export function startSpan(name: string, attributes?: Attributes, links?: Link[]): Span | undefined {
  if (!enabled) return undefined;
  return trace.getTracer(TRACER).startSpan(name, { attributes, links });
}

/** The context with `span` active, to run the work of a span started by {@link startServerSpan}. */
export function contextOf(span: Span): Context {
  return trace.setSpan(context.active(), span);
}

/** Runs `work` with `span` active (directly when there is none). */
export function withSpan<T>(span: Span | undefined, work: () => T): T {
  return span ? context.with(contextOf(span), work) : work();
}

/** The 32-hex trace id of the active span, or null (tracing off, or no span). */
export function activeTraceId(): string | null {
  if (!enabled) return null;
  const span = trace.getActiveSpan();
  return span ? span.spanContext().traceId : null;
}

/** The W3C `traceparent` of the active span, or null (tracing off, or no span). */
export function activeTraceparent(): string | null {
  if (!enabled) return null;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ?? null;
}

/**
 * Adds the active trace context (`traceparent`, `tracestate`) to `headers` (an outgoing HTTP
 * request's or a broker message's); nothing when tracing is off.
 */
export function injectTraceContext(headers: Record<string, unknown>): void {
  if (!enabled) return;
  propagation.inject(context.active(), headers);
}

/**
 * Span links to the traces whose W3C `traceparent` values are given (the batches behind the rows
 * of one wallet push or broker publish: the messaging conventions' links); invalid ones skipped.
 */
export function linksTo(traceparents: readonly (string | null | undefined)[]): Link[] {
  const links: Link[] = [];
  for (const value of traceparents) {
    if (!value) continue;
    const span = trace.getSpan(propagation.extract(context.active(), { traceparent: value }));
    if (span) links.push({ context: span.spanContext() });
  }
  return links;
}

let shutdown: (() => Promise<void>) | undefined;

/** Registers how the SDK flushes and stops (the preload does, when tracing is on). */
export function setTracingShutdown(stop: () => Promise<void>): void {
  shutdown = stop;
}

/**
 * Milliseconds the shutdown waits for the last spans to be exported: a collector that does not
 * answer held a SIGTERM for the exporter's own timeout (10 s), up to the process's 10 s limit.
 */
export const TRACING_FLUSH_MS = 2000;

/**
 * Flushes the spans not yet exported and stops the SDK (at shutdown), waiting at most `limitMs`
 * (spans still unexported then are lost); nothing when off. Never throws.
 */
export async function shutdownTracing(limitMs = TRACING_FLUSH_MS): Promise<void> {
  const stop = shutdown;
  shutdown = undefined;
  if (!stop) return;
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<void>((done) => (timer = setTimeout(done, limitMs)));
  await Promise.race([stop().catch(() => undefined), limit]);
  clearTimeout(timer);
}

/**
 * Runs `work` (one delivery of outbox rows: a wallet push, a broker publish) in a span `name` that
 * joins the trace of the transaction that wrote the rows (their stored `traceparent`s): a child of
 * it when the delivery carries one row, else a new trace linking to each row's (the messaging
 * conventions' span links). Tracing off: runs `work` alone.
 */
export function tracedDelivery<T>(
  name: string,
  traceparents: readonly (string | null | undefined)[],
  work: () => Promise<T>,
  attributes?: Attributes,
  kind: SpanKind = SpanKind.PRODUCER,
): Promise<T> {
  if (!enabled) return work();
  const single = traceparents.length === 1 ? traceparents[0] : undefined;
  const parent = single ? propagation.extract(ROOT_CONTEXT, { traceparent: single }) : ROOT_CONTEXT;
  const links = single ? undefined : linksTo(traceparents);
  return trace
    .getTracer(TRACER)
    .startActiveSpan(name, { kind, attributes, links }, parent, (span) => asSpan(span, work));
}

/**
 * The active trace context as message or request headers (`traceparent`, `tracestate`), or
 * undefined when tracing is off or no span is active.
 */
export function traceContextHeaders(): Record<string, string> | undefined {
  if (!enabled) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ? carrier : undefined;
}

/**
 * Runs `work` outside any trace (background work started from a request, e.g. the writer of
 * several deliveries' attempts, belongs to none of them); directly when tracing is off.
 */
export function detached<T>(work: () => T): T {
  return enabled ? context.with(ROOT_CONTEXT, work) : work();
}

/**
 * Runs `work` with span creation suppressed (the pg instrumentation's statement spans among them):
 * a transaction's bookkeeping statements (START, SET LOCAL, SAVEPOINT, COMMIT, ROLLBACK), which
 * its own `db.transaction` and `db.commit` spans cover; directly when tracing is off.
 */
export function untraced<T>(work: () => T): T {
  return enabled ? context.with(suppressTracing(context.active()), work) : work();
}
