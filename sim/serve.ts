import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { latestCouponStates } from './batch-files.js';
import { listen } from './http-server.js';
import type { CouponSnapshot } from './model.js';
import { Rng } from './random.js';

/**
 * `serve`: a stand-in SportAPI. `GET /coupons/{coupon_code}` (CONTRACT §9) answers the coupon's
 * latest state in the batch files of `data` in a callback coupon's shape (404 when unknown; with
 * `apiKey`, a bearer key is required). With `proxyTo`, every POST is forwarded to the receiver and
 * its answer relayed, or, with probability `dropAfterResponse` (seeded), the connection is dropped
 * after the receiver answered: the lost-200 case. docs/simulator.md has the details.
 */

export interface ServeOptions {
  port?: number;
  host?: string;
  /** FILE|DIR of batch files (e.g. the output of `generate`). */
  data?: string;
  apiKey?: string;
  /** Base URL of the receiver; POSTs keep their path. */
  proxyTo?: string;
  /** 0..1, default 0. */
  dropAfterResponse?: number;
  seed?: number;
  /** Timeout of a forwarded request (default 10 s, the sender's limit). */
  upstreamTimeoutMs?: number;
  log?: (line: string) => void;
}

export interface ServeStats {
  reads: number;
  forwarded: number;
  dropped: number;
  upstreamErrors: number;
}

export interface RunningServe {
  url: string;
  port: number;
  coupons: number;
  stats: ServeStats;
  close: () => Promise<void>;
}

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'te',
  'trailer',
  'host',
  'content-length',
]);

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

export async function startServe(options: ServeOptions = {}): Promise<RunningServe> {
  const rate = options.dropAfterResponse ?? 0;
  if (!(rate >= 0 && rate <= 1)) throw new Error('drop-after-response must be between 0 and 1');
  if (rate > 0 && !options.proxyTo) throw new Error('drop-after-response needs proxy-to');
  const proxyTo = options.proxyTo ? new URL(options.proxyTo) : null;
  const coupons: Map<string, CouponSnapshot> = options.data
    ? await latestCouponStates(options.data)
    : new Map();
  const rng = new Rng(options.seed ?? 1);
  const stats: ServeStats = { reads: 0, forwarded: 0, dropped: 0, upstreamErrors: 0 };
  const log = options.log ?? (() => undefined);

  async function forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (!HOP_BY_HOP.has(name) && value !== undefined)
        headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    const target = new URL(req.url ?? '/', proxyTo as URL);
    let upstream: Response;
    let answer: Buffer;
    try {
      upstream = await fetch(target, {
        method: 'POST',
        headers,
        body,
        redirect: 'manual',
        signal: AbortSignal.timeout(options.upstreamTimeoutMs ?? 10_000),
      });
      answer = Buffer.from(await upstream.arrayBuffer());
    } catch (error) {
      stats.upstreamErrors++;
      log(`POST ${req.url} → upstream error ${(error as Error).message}: 502`);
      json(res, 502, { success: false, error: { code: 'bad_gateway' } });
      return;
    }
    stats.forwarded++;
    if (rng.chance(rate)) {
      stats.dropped++;
      log(`POST ${req.url} → ${upstream.status} from the receiver, connection dropped (lost response)`);
      req.socket.destroy();
      return;
    }
    log(`POST ${req.url} → ${upstream.status}`);
    const out: Record<string, string> = { 'content-length': String(answer.length) };
    const type = upstream.headers.get('content-type');
    if (type) out['content-type'] = type;
    res.writeHead(upstream.status, out);
    res.end(answer);
  }

  function read(req: IncomingMessage, res: ServerResponse, path: string): void {
    if (options.apiKey !== undefined && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      json(res, 401, { error: 'unauthorized' });
      return;
    }
    stats.reads++;
    let code: string;
    try {
      code = decodeURIComponent(path.slice('/coupons/'.length));
    } catch {
      json(res, 400, { error: 'bad_coupon_code' });
      return;
    }
    const coupon = coupons.get(code);
    log(`GET ${path} → ${coupon ? 200 : 404}`);
    if (coupon) json(res, 200, coupon);
    else json(res, 404, { error: 'coupon_not_found' });
  }

  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (req.method === 'POST' && proxyTo) {
      forward(req, res).catch((error: unknown) => {
        log(`POST ${req.url} failed: ${(error as Error).message}`);
        if (!res.headersSent) json(res, 502, { success: false, error: { code: 'bad_gateway' } });
        else res.destroy();
      });
    } else if (req.method === 'GET' && path.startsWith('/coupons/') && path.length > '/coupons/'.length) {
      read(req, res, path);
    } else {
      json(res, 404, { error: 'not_found' });
    }
  });
  const listening = await listen(server, options.port, options.host);
  return {
    url: listening.url,
    port: listening.port,
    coupons: coupons.size,
    stats,
    close: listening.close,
  };
}
