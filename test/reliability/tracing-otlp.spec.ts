import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { STATEMENT_TEXT_CHARS } from '../../src/platform/observability/tracing.js';
import { createTestDatabase } from '../support/database.js';
import { OPS_KEY, SECRET, sign } from '../support/test-app.js';
import { eventually } from '../support/wait.js';
import { MAIN_JS, requireBuild } from './support/receiver.js';

// Issue 41, out of process: the built receiver started as `npm start` starts it (`node
// --import=./dist/src/tracing.js dist/src/main.js`) with the standard OTEL_* variables exports its
// spans over OTLP/HTTP (JSON) to a small receiver in this test: the auto-instrumented HTTP server
// span with the receiver's own spans and the pg statements under it, statement texts without their
// parameters; SIGTERM flushes what is left.

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  startTimeUnixNano: string;
  attributes?: { key: string; value: Record<string, unknown> }[];
}
interface OtlpExport {
  resourceSpans: {
    resource?: { attributes?: { key: string; value: { stringValue?: string } }[] };
    scopeSpans: { scope?: { name: string }; spans: OtlpSpan[] }[];
  }[];
}

/** A free TCP port on 127.0.0.1. */
function freePort(): Promise<number> {
  return new Promise((done) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => done(port));
    });
  });
}

describe('traces exported over OTLP/HTTP JSON by the built receiver (issue 41)', () => {
  it('exports the span tree of one callback, pg statements without parameters', async () => {
    requireBuild();
    const exports: OtlpExport[] = [];
    const collector = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.method === 'POST' && req.url === '/v1/traces')
          exports.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpExport);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
    const collectorPort = (collector.address() as AddressInfo).port;
    const database = await createTestDatabase();
    const port = await freePort();
    let out = '';
    const proc = spawn(process.execPath, ['--import=./dist/src/tracing.js', MAIN_JS], {
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        NODE_ENV: 'production',
        DATABASE_URL: database.url,
        PORT: String(port),
        HOST: '127.0.0.1',
        SPORTAPI_WEBHOOK_SECRETS: SECRET,
        OPS_API_KEYS: OPS_KEY,
        DB_POOL_SIZE: '4',
        OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${collectorPort}`,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '100',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise((r) => proc.once('exit', r));
    try {
      const url = `http://127.0.0.1:${port}`;
      await eventually(
        async () => (await fetch(`${url}/health/live`).catch(() => undefined))?.status === 200,
        'the receiver to listen',
        { timeoutMs: 30_000, intervalMs: 200 },
      ).catch((err: unknown) => {
        throw new Error(`${(err as Error).message}:\n${out}`);
      });
      const body = JSON.stringify({
        batchId: 'otlp-1',
        couponCount: 1,
        coupons: [
          { coupon_code: 'OTLP1', status: 2, realWin: '7.25', events: [{ uuid: 'otlp-ev-1', status: 2 }] },
        ],
      });
      const res = await fetch(`${url}/sportapi/callback`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-signature': sign(body) },
        body,
      });
      expect(res.status).toBe(200);
      proc.kill('SIGTERM');
      await exited;
      const spans = exports.flatMap((e) =>
        e.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)),
      );
      const service = exports[0]?.resourceSpans[0]?.resource?.attributes?.find(
        (a) => a.key === 'service.name',
      );
      expect(service?.value.stringValue).toBe('settlement-receiver');
      const own = spans.find((s) => s.name === 'callback');
      expect(own).toBeDefined();
      const traceSpans = spans.filter((s) => s.traceId === own?.traceId);
      const byId = new Map(traceSpans.map((s) => [s.spanId, s]));
      const root = traceSpans.find((s) => !s.parentSpanId || !byId.has(s.parentSpanId));
      // The HTTP server span (instrumentation-http) is the root; the receiver's spans are under it.
      expect(root?.name).toMatch(/^POST/);
      const names = new Set(traceSpans.map((s) => s.name));
      for (const name of [
        'callback',
        'callback.signature',
        'callback.parse',
        'db.transaction',
        'db.commit',
        'callback.answer',
      ])
        expect(names).toContain(name);
      const statements = traceSpans.flatMap((s) =>
        (s.attributes ?? [])
          .filter((a) => a.key === 'db.statement' || a.key === 'db.query.text')
          .map((a) => String(a.value.stringValue)),
      );
      expect(statements.length).toBeGreaterThan(0);
      // Each text at most STATEMENT_TEXT_CHARS (the posting statements are kilobytes), then `…`.
      expect(statements.filter((t) => t.length > STATEMENT_TEXT_CHARS + 1)).toEqual([]);
      expect(statements.some((t) => t.endsWith('…'))).toBe(true);
      expect(names).not.toContain('pg-pool.connect');
      // The transaction's bookkeeping (START, SET LOCAL, the timeouts, COMMIT) makes no statement
      // span: db.transaction and db.commit cover it.
      expect([...names].filter((n) => /^pg\.query:(START|SET|COMMIT|ROLLBACK|tx_settings)/.test(n))).toEqual(
        [],
      );
      expect([...names].filter((n) => n.startsWith('pg.query:')).length).toBeGreaterThan(0);
      // Statement parameters never reach a span: the amount, the coupon and the operation key.
      const text = JSON.stringify(traceSpans);
      expect(text).not.toMatch(/7\.25|OTLP1:0|"OTLP1"/);
      expect(text).not.toContain('db.statement.parameters');
      // The tree as exported (printed once for docs/operating.md).
      const lines: string[] = [];
      const walk = (s: OtlpSpan, depth: number) => {
        lines.push(`${'  '.repeat(depth)}${s.name}`);
        traceSpans
          .filter((c) => c.parentSpanId === s.spanId)
          .sort((a, b) => Number(BigInt(a.startTimeUnixNano) - BigInt(b.startTimeUnixNano)))
          .forEach((c) => walk(c, depth + 1));
      };
      if (root) walk(root, 0);
      if (process.env.PRINT_SPAN_TREE) console.log(lines.join('\n'));
    } finally {
      proc.kill('SIGKILL');
      await new Promise((r) => collector.close(r));
      await database.drop();
    }
  }, 90_000);
});
