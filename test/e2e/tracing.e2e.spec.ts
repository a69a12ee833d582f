import { Module } from '@nestjs/common';
import { context, propagation, SpanKind, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { startWallet } from '../../sim/wallet.js';
import type { RunningWallet } from '../../sim/wallet.js';
import { EventPublisher } from '../../src/extensions.js';
import type { OutboxDelivery, PublishRequest } from '../../src/extensions.js';
import { enableTracing, traceContextHeaders } from '../../src/platform/observability/tracing.js';
import { injectTrigger } from '../support/database-faults.js';
import {
  attemptsWritten,
  batchOf,
  createTestApp,
  deliver,
  deposit,
  ops,
  register,
  TestContext,
} from '../support/test-app.js';
import { eventually } from '../support/wait.js';

// Issue 41: OpenTelemetry traces, collected in-process by the SDK's in-memory exporter. One trace
// per callback delivery (signature, parse, each transaction attempt, commit, answer), its id
// stored with the delivery attempt; a wallet push and a broker publish join the trace of the
// batch that wrote their row (one row: a child; a batch call: links to each row's trace), and
// `traceparent` reaches the wallet's request and the broker's message (docs/operating.md, "Traces").

const WALLET_SECRET = 'test-wallet-secret-traces';
/** The sender's own trace context, as SportAPI would send it. */
const SENDER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SENDER_TRACEPARENT = `00-${SENDER_TRACE}-00f067aa0ba902b7-01`;

/** A broker for tests: delivers every event and keeps the trace context each was published with. */
class TracedPublisher extends EventPublisher {
  readonly name = 'traced';
  readonly headers: (Record<string, string> | undefined)[] = [];

  publish({ events }: PublishRequest): Promise<OutboxDelivery[]> {
    for (const _ of events) this.headers.push(traceContextHeaders());
    return Promise.resolve(events.map((): OutboxDelivery => ({ outcome: 'delivered' })));
  }
}
const publisher = new TracedPublisher();
@Module({ providers: [{ provide: 'traced-publisher', useValue: publisher }] })
class TracedPublisherModule {}

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });

/** The span tree under `root` as indented names (children by start time), attributes picked. */
function tree(spans: ReadableSpan[], root: ReadableSpan, depth = 0): string[] {
  const attempt = root.attributes['db.transaction.attempt'];
  const status = root.attributes['http.response.status_code'];
  const label =
    root.name +
    (attempt !== undefined ? ` #${String(attempt)}` : '') +
    (status !== undefined ? ` ${String(status)}` : '') +
    (root.status.code === 2 ? ' (error)' : '');
  const children = spans
    .filter((s) => s.parentSpanContext?.spanId === root.spanContext().spanId)
    .sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1]);
  return [`${'  '.repeat(depth)}${label}`, ...children.flatMap((c) => tree(spans, c, depth + 1))];
}

/** The finished `callback` span whose delivery had request id `requestId`… found by its trace. */
function callbackSpans(traceId: string): ReadableSpan[] {
  return exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
}

function rootOf(spans: ReadableSpan[], name: string): ReadableSpan {
  const root = spans.find((s) => s.name === name);
  if (!root) throw new Error(`no ${name} span among ${spans.map((s) => s.name).join(', ')}`);
  return root;
}

beforeAll(() => {
  provider.register();
  enableTracing();
});
afterAll(async () => {
  enableTracing(false);
  await provider.shutdown();
  trace.disable();
  context.disable();
  propagation.disable();
});

describe('OpenTelemetry traces (issue 41)', () => {
  let wallet: RunningWallet;
  let t: TestContext;

  beforeAll(async () => {
    wallet = await startWallet({ port: 0, secret: WALLET_SECRET, seed: 41 });
    t = await createTestApp(
      {
        WALLET_URL: wallet.url,
        WALLET_SECRET,
        WALLET_BATCH_SIZE: '16',
        WALLET_CLAIM_SIZE: '16',
        WALLET_CONCURRENCY: '1',
        WALLET_POLL_INTERVAL_MS: '20',
        EVENT_PUBLISHERS: 'traced',
        EVENT_POLL_INTERVAL_MS: '20',
        EVENT_CONCURRENCY: '1',
        CALLBACK_TRANSIENT_RETRIES: '1',
      },
      { extensions: [TracedPublisherModule] },
    );
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await wallet?.close();
  });

  const delivered = (table: string, key: string) =>
    eventually(
      async () =>
        (await t.db.query<{ status: string }>(`SELECT status FROM ${table} WHERE operation_key = $1`, [key]))
          .rows[0]?.status === 'delivered',
      `${key} delivered to ${table}`,
    );

  it("one trace per callback: the sender's trace, signature, parse, transaction, commit, answer", async () => {
    await deposit(t.app, 'tr-a', '10.00');
    await register(t.app, 'TRA', 'tr-a', '1.00');
    exporter.reset();
    const res = await deliver(t.app, batchOf('tr-a-1', { code: 'TRA', status: 2, realWin: '5.00' }), {
      headers: { traceparent: SENDER_TRACEPARENT },
    });
    expect(res.status).toBe(200);
    // The credit's wallet push and broker publish join this trace too (one row each: children of
    // the transaction that wrote it), so the tree is read once both have finished.
    await delivered('wallet_outbox', 'TRA:0:final_credit');
    await delivered('event_outbox', 'TRA:0:final_credit');
    const spans = await eventually(async () => {
      const found = callbackSpans(SENDER_TRACE);
      const names = new Set(found.map((s) => s.name));
      return ['callback', 'wallet.push', 'events.publish'].every((n) => names.has(n)) ? found : undefined;
    }, 'the callback, wallet.push and events.publish spans');
    const root = rootOf(spans, 'callback');
    expect(root.parentSpanContext?.spanId).toBe('00f067aa0ba902b7');
    expect(root.attributes['settlement.batch_id']).toBe('tr-a-1');
    const transactionChildren = spans
      .filter((s) => s.parentSpanContext?.spanId === rootOf(spans, 'db.transaction').spanContext().spanId)
      .map((s) => s.name)
      .sort();
    expect(transactionChildren).toEqual(['db.commit', 'events.publish', 'wallet.push']);
    expect(
      tree(
        spans.filter((s) => s.kind !== SpanKind.PRODUCER),
        root,
      ),
    ).toEqual([
      'callback 200',
      '  callback.signature',
      '  callback.parse',
      '  db.transaction #1',
      '    db.commit',
      '  callback.answer 200',
    ]);
    // No statement parameter, amount or key in any span.
    for (const s of spans) expect(JSON.stringify(s.attributes)).not.toMatch(/5\.00|TRA:0|"tr-a"/);
    const { rows } = await t.db.query<{ outcome: string; trace_id: string }>(
      `SELECT outcome, trace_id FROM delivery_attempts WHERE batch_id = 'tr-a-1'`,
    );
    expect(rows).toEqual([{ outcome: 'processed', trace_id: SENDER_TRACE }]);
    // The delivery audit shows it.
    const audit = await ops(t.app).get('/callbacks/deliveries?batchId=tr-a-1');
    expect((audit.body.items as { traceId: string }[]).map((a) => a.traceId)).toEqual([SENDER_TRACE]);
  });

  it('a 503 the sender retries: two traces, the retried transaction attempts visible', async () => {
    await deposit(t.app, 'tr-b', '10.00');
    await register(t.app, 'TRB', 'tr-b', '1.00');
    const remove = await injectTrigger(
      t.db,
      'traces_serialization_failure',
      'financial_operations',
      `RAISE EXCEPTION 'injected' USING ERRCODE = '40001';`,
      { when: `NEW.coupon_code = 'TRB'` },
    );
    exporter.reset();
    const batch = batchOf('tr-b-1', { code: 'TRB', status: 2, realWin: '3.00' });
    let first;
    try {
      first = await deliver(t.app, batch);
    } finally {
      await remove();
    }
    expect(first.status).toBe(503);
    const second = await deliver(t.app, batch);
    expect(second.status).toBe(200);
    await attemptsWritten(t);
    const roots = await eventually(async () => {
      const r = exporter.getFinishedSpans().filter((s) => s.name === 'callback');
      return r.length === 2 ? r : undefined;
    }, 'two callback spans');
    const [failed, retried] = roots.sort(
      (a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1],
    );
    // The credit's wallet push and publish (children of the retried transaction) may not have
    // finished yet; test 1 and 3 cover them.
    const all = exporter.getFinishedSpans().filter((s) => s.kind !== SpanKind.PRODUCER);
    expect(tree(all, failed)).toEqual([
      'callback 503',
      '  callback.signature',
      '  callback.parse',
      '  db.transaction #1 (error)',
      '    db.commit (error)',
      '  db.transaction #2 (error)',
      '    db.commit (error)',
      '  callback.answer 503',
    ]);
    expect(tree(all, retried)).toEqual([
      'callback 200',
      '  callback.signature',
      '  callback.parse',
      '  db.transaction #1',
      '    db.commit',
      '  callback.answer 200',
    ]);
    const { rows } = await t.db.query<{ outcome: string; http_status: number; trace_id: string }>(
      `SELECT outcome, http_status, trace_id FROM delivery_attempts WHERE batch_id = 'tr-b-1' ORDER BY received_at`,
    );
    expect(rows).toEqual([
      { outcome: 'failed', http_status: 503, trace_id: failed.spanContext().traceId },
      { outcome: 'processed', http_status: 200, trace_id: retried.spanContext().traceId },
    ]);
  });

  it("a wallet push and a broker publish join the batch's trace; traceparent reaches the wallet", async () => {
    await deposit(t.app, 'tr-c', '10.00');
    await register(t.app, 'TRC', 'tr-c', '1.00');
    exporter.reset();
    expect(
      (await deliver(t.app, batchOf('tr-c-1', { code: 'TRC', status: 2, realWin: '4.00' }))).status,
    ).toBe(200);
    await delivered('wallet_outbox', 'TRC:0:final_credit');
    await delivered('event_outbox', 'TRC:0:final_credit');
    const spans = exporter.getFinishedSpans();
    const root = rootOf(spans, 'callback');
    const traceId = root.spanContext().traceId;
    const transaction = spans.find((s) => s.name === 'db.transaction' && s.spanContext().traceId === traceId);
    const stored = await t.db.query<{ traceparent: string }>(
      `SELECT traceparent FROM wallet_outbox WHERE operation_key = 'TRC:0:final_credit'
       UNION ALL SELECT traceparent FROM event_outbox WHERE operation_key = 'TRC:0:final_credit'`,
    );
    // Both rows keep the trace context of the transaction that wrote them.
    expect(stored.rows).toEqual([
      { traceparent: `00-${traceId}-${transaction?.spanContext().spanId}-01` },
      { traceparent: `00-${traceId}-${transaction?.spanContext().spanId}-01` },
    ]);
    const inTrace = (name: string) =>
      eventually(
        async () =>
          exporter.getFinishedSpans().find((s) => s.name === name && s.spanContext().traceId === traceId),
        `the ${name} span`,
      );
    const push = await inTrace('wallet.push');
    const publish = await inTrace('events.publish');
    for (const s of [push, publish]) {
      expect(s.spanContext().traceId).toBe(traceId);
      expect(s.parentSpanContext?.spanId).toBe(transaction?.spanContext().spanId);
      expect(s.links).toEqual([]);
    }
    expect(publish.attributes['messaging.system']).toBe('traced');
    // The wallet got the push span's context; the broker's message the publish span's.
    expect(wallet.traceparents().filter((p) => p?.includes(traceId))).toEqual([
      `00-${traceId}-${push.spanContext().spanId}-01`,
    ]);
    expect(publisher.headers.filter((h) => h?.traceparent.includes(traceId))).toEqual([
      { traceparent: `00-${traceId}-${publish.spanContext().spanId}-01` },
    ]);
    const attempts = await t.db.query<{ trace_id: string }>(
      `SELECT a.trace_id FROM wallet_delivery_attempts a JOIN wallet_outbox o ON o.id = a.outbox_id
        WHERE o.operation_key = 'TRC:0:final_credit'
       UNION ALL
       SELECT a.trace_id FROM event_delivery_attempts a JOIN event_outbox o ON o.id = a.outbox_id
        WHERE o.operation_key = 'TRC:0:final_credit'`,
    );
    expect(attempts.rows).toEqual([{ trace_id: traceId }, { trace_id: traceId }]);
    // The console's row screens show each attempt's trace id.
    for (const destination of ['wallet', 'events/traced']) {
      const page = await ops(t.app).get(`/${destination}/outbox`);
      const row = (page.body.items as { id: string; operationKey: string }[]).find(
        (r) => r.operationKey === 'TRC:0:final_credit',
      );
      const detail = await ops(t.app).get(`/${destination}/outbox/${row?.id}`);
      expect((detail.body.deliveryAttempts as { traceId: string }[]).map((a) => a.traceId)).toEqual([
        traceId,
      ]);
    }
  });

  it("a wallet batch call links to each row's trace", async () => {
    for (const a of ['tr-d', 'tr-e']) {
      await deposit(t.app, a, '10.00');
      await register(t.app, a.toUpperCase(), a, '1.00');
    }
    expect((await ops(t.app, 'operator').post('/wallet/pause', { reason: 'collect' })).status).toBe(200);
    exporter.reset();
    for (const a of ['tr-d', 'tr-e'])
      expect(
        (await deliver(t.app, batchOf(`${a}-1`, { code: a.toUpperCase(), status: 2, realWin: '2.00' })))
          .status,
      ).toBe(200);
    const traces = exporter
      .getFinishedSpans()
      .filter((s) => s.name === 'db.transaction')
      .map((s) => s.spanContext());
    expect(traces).toHaveLength(2);
    const pushedBefore = wallet.traceparents().length;
    expect((await ops(t.app, 'operator').post('/wallet/resume', { reason: 'collect' })).status).toBe(200);
    await delivered('wallet_outbox', 'TR-D:0:final_credit');
    await delivered('wallet_outbox', 'TR-E:0:final_credit');
    const push = await eventually(
      async () => exporter.getFinishedSpans().find((s) => s.name === 'wallet.push'),
      'the wallet.push span',
    );
    expect(push.attributes['messaging.batch.message_count']).toBe(2);
    expect(push.parentSpanContext).toBeUndefined();
    expect(push.links.map((l) => [l.context.traceId, l.context.spanId])).toEqual(
      traces.map((c) => [c.traceId, c.spanId]),
    );
    expect(wallet.traceparents().slice(pushedBefore)).toEqual([
      `00-${push.spanContext().traceId}-${push.spanContext().spanId}-01`,
    ]);
  });
});

describe('OpenTelemetry traces in inbox mode (issue 41)', () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestApp({ CALLBACK_MODE: 'inbox', INBOX_POLL_INTERVAL_MS: '20' });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  it("the inbox apply joins the accepting delivery's trace", async () => {
    exporter.reset();
    const res = await deliver(t.app, batchOf('tr-i-1', { code: 'TRI', status: 1 }), {
      headers: { traceparent: SENDER_TRACEPARENT },
    });
    expect(res.status).toBe(200);
    const apply = await eventually(
      async () => exporter.getFinishedSpans().find((s) => s.name === 'inbox.apply'),
      'the inbox.apply span',
    );
    const spans = callbackSpans(SENDER_TRACE);
    const transaction = spans.find((s) => s.name === 'db.transaction');
    expect(apply.spanContext().traceId).toBe(SENDER_TRACE);
    expect(apply.parentSpanContext?.spanId).toBe(transaction?.spanContext().spanId);
    const { rows } = await t.db.query<{ status: string; traceparent: string }>(
      `SELECT status, traceparent FROM callback_inbox WHERE batch_id = 'tr-i-1'`,
    );
    expect(rows).toEqual([
      { status: 'done', traceparent: `00-${SENDER_TRACE}-${transaction?.spanContext().spanId}-01` },
    ]);
  });
});
