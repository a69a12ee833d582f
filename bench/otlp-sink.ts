import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the sink received. */
export interface OtlpSinkStats {
  /** POSTs to `/v1/traces` (one per exported batch of spans). */
  exports: number;
  /** Their bodies' bytes. */
  bytes: number;
}

/**
 * `--tracing` (issue 41's figure): a local OTLP/HTTP endpoint that reads every export and answers
 * 200, keeping only counts, so the receiver pays for tracing and exporting as it would against a
 * collector, and nothing else runs on the bench's cores. Sets `OTEL_EXPORTER_OTLP_ENDPOINT` in
 * this process's environment, which the receivers it starts inherit (docs/operating.md#traces).
 */
export async function startOtlpSink(): Promise<{ stats: OtlpSinkStats; close: () => Promise<void> }> {
  const stats: OtlpSinkStats = { exports: 0, bytes: 0 };
  const server = createServer((req, res) => {
    let bytes = 0;
    req.on('data', (chunk: Buffer) => (bytes += chunk.length));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') {
        stats.exports++;
        stats.bytes += bytes;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    stats,
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}
