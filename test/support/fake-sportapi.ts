import { createServer, IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One programmed answer of the stand-in coupon read method. */
export interface FakeAnswer {
  status: number;
  /** Sent as is when a string, else as JSON. */
  body: unknown;
  /** Milliseconds to wait before answering. */
  delayMs?: number;
}

/**
 * A programmable stand-in for SportAPI's coupon read method (CONTRACT §9) on node:http:
 * `GET /coupons/{coupon_code}` answers what `answers` holds for the code (404 otherwise) and
 * records every request (path and headers), so tests can change SportAPI's answer between calls
 * and make it fail. (The simulator's `serve` command answers fixed batch files instead.)
 */
export async function startFakeSportApi() {
  const answers = new Map<string, FakeAnswer>();
  const requests: { path: string; headers: IncomingHttpHeaders }[] = [];
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    requests.push({ path, headers: req.headers });
    const code = path.startsWith('/coupons/') ? decodeURIComponent(path.slice('/coupons/'.length)) : '';
    const answer = answers.get(code) ?? { status: 404, body: { error: 'coupon_not_found' } };
    setTimeout(() => {
      const text = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(text);
    }, answer.delayMs ?? 0);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    answers,
    requests,
    /** Answers `coupon` (200) for its code. */
    serve(coupon: { coupon_code: string } & Record<string, unknown>, delayMs = 0) {
      answers.set(coupon.coupon_code, { status: 200, body: coupon, delayMs });
    },
    reads(code: string): number {
      return requests.filter((r) => r.path === `/coupons/${encodeURIComponent(code)}`).length;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((e) => (e ? reject(e) : resolve()));
        server.closeAllConnections();
      }),
  };
}

export type FakeSportApi = Awaited<ReturnType<typeof startFakeSportApi>>;
