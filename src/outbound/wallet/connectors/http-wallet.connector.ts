import { traceContextHeaders } from '../../../platform/observability/tracing.js';
import { createHmac } from 'node:crypto';
import { Inject, Injectable, Module, OnModuleDestroy } from '@nestjs/common';
import { Agent, request } from 'undici';
import { WALLET_CONFIG } from '../wallet.config.js';
import type { WalletConfig } from '../wallet.config.js';
import { ANSWER_EXCERPT_CHARS, excerpt, headerToken, permanentFailure } from '../../outbox/outbox-rules.js';
import {
  WalletBatchRequest,
  WalletConnector,
  WalletDelivery,
  WalletDeliveryRequest,
} from '../wallet-connector.js';

/** Bytes of an answer read at most (the rest is dropped). */
const ANSWER_READ_LIMIT = 64 * 1024;
/** Bytes of a batch call's answer read at most: one result per element. */
const BATCH_ANSWER_READ_LIMIT = 4 * 1024 * 1024;
/** Milliseconds an idle keep-alive connection to the wallet is kept (below common servers' 5 s). */
const KEEP_ALIVE_MS = 4000;

/**
 * Milliseconds to wait from a `Retry-After` header (delay-seconds or an HTTP-date, RFC 9110
 * §10.2.3) at `now`; undefined when absent or unreadable.
 */
export function retryAfterMs(header: string | string[] | undefined, now = Date.now()): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || value.trim() === '') return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * The outcome of a wallet's HTTP status (docs/wallet-http-contract.md): 2xx delivered; 408, 429
 * and 5xx retry; 401, 403 and any 3xx (a wrong URL or credentials) unauthorized, which pauses
 * delivery; 409 conflict; any other 4xx refused.
 */
export function outcomeOfStatus(status: number): WalletDelivery['outcome'] {
  if (status >= 200 && status < 300) return 'delivered';
  if (status === 408 || status === 429 || status >= 500) return 'retry';
  if (status === 401 || status === 403 || (status >= 300 && status < 400)) return 'unauthorized';
  if (status === 409) return 'conflict';
  return 'refused';
}

/**
 * Each element's outcome of a batch call's answer (docs/wallet-http-contract.md#the-batch-call):
 * on a 2xx, `{"results": [...]}` with one result per element in the request's order
 * (`applied`/`duplicate` delivered, `refused`, `conflict`, `transient` retry after its
 * `retryAfterSeconds`; anything else, a missing result or another `transactionId` retry). Any
 * other status applies to every element: 408, 429, 5xx retry (after `Retry-After`); 401, 403, 3xx
 * and every other 4xx pause delivery (`unauthorized`): the wallet does not take the array as sent.
 */
export function outcomesOfBatchAnswer(
  status: number,
  text: string,
  transactionIds: readonly string[],
  retryAfter?: string | string[],
): WalletDelivery[] {
  const all = (d: WalletDelivery) => transactionIds.map(() => d);
  const answer = excerpt(text);
  const single = outcomeOfStatus(status);
  if (single === 'retry')
    return all({
      outcome: 'retry',
      status,
      answer,
      reason: `HTTP ${status}`,
      afterMs: retryAfterMs(retryAfter),
    });
  if (single === 'unauthorized')
    return all({ outcome: 'unauthorized', status, answer, reason: `HTTP ${status}` });
  if (single !== 'delivered')
    return all({
      outcome: 'unauthorized',
      status,
      answer,
      reason: `HTTP ${status} to the batch call as a whole: does the wallet take arrays? (WALLET_BATCH_SIZE)`,
    });
  let results: unknown;
  try {
    results = (JSON.parse(text) as { results?: unknown }).results;
  } catch {
    results = undefined;
  }
  if (!Array.isArray(results) || results.length !== transactionIds.length)
    return all({
      outcome: 'retry',
      status,
      answer,
      reason: `HTTP ${status} without one result per element ({"results": [...]} of ${transactionIds.length})`,
    });
  return transactionIds.map((id, i): WalletDelivery => {
    const r = (typeof results[i] === 'object' && results[i] !== null ? results[i] : {}) as Record<
      string,
      unknown
    >;
    const shown = excerpt(JSON.stringify(results[i]) ?? 'null');
    if (r.transactionId !== id)
      return { outcome: 'retry', status, answer: shown, reason: `result ${i} does not name ${id}` };
    const detail = [r.code, r.detail].filter((x) => typeof x === 'string').join(': ');
    switch (r.status) {
      case 'applied':
      case 'duplicate':
        return { outcome: 'delivered', status, answer: shown };
      case 'refused':
        return { outcome: 'refused', status, answer: shown, reason: `refused${detail ? `: ${detail}` : ''}` };
      case 'conflict':
        return {
          outcome: 'conflict',
          status,
          answer: shown,
          reason: `conflict${detail ? `: ${detail}` : ''}`,
        };
      case 'transient': {
        const seconds = r.retryAfterSeconds;
        const afterMs =
          typeof seconds === 'number' && Number.isFinite(seconds) && seconds >= 0
            ? seconds * 1000
            : undefined;
        return {
          outcome: 'retry',
          status,
          answer: shown,
          reason: `transient${detail ? `: ${detail}` : ''}`,
          afterMs,
        };
      }
      default:
        return { outcome: 'retry', status, answer: shown, reason: `result ${i} has no known status` };
    }
  });
}

/**
 * The headers of `POST {WALLET_URL}/transactions` (docs/wallet-http-contract.md, "The request"):
 * `Content-Type`, `Idempotency-Key` for a single transaction (its id as a {@link headerToken}: the
 * id itself unless it holds characters a header cannot carry; none for the batch call),
 * `X-Request-Id`, and `X-Signature: sha256=<lowercase hex HMAC-SHA256 of body with secret>`. The
 * connector and `npm run wallet:certify` both send these.
 */
export function walletRequestHeaders(
  body: Buffer,
  secret: string,
  requestId: string,
  idempotencyKey?: string,
): Record<string, string> {
  const signature = createHmac('sha256', secret).update(body).digest('hex');
  return {
    'content-type': 'application/json',
    ...(idempotencyKey ? { 'idempotency-key': headerToken(idempotencyKey) } : {}),
    'x-request-id': requestId,
    'x-signature': `sha256=${signature}`,
  };
}

/**
 * The batch call's body (docs/wallet-http-contract.md#the-batch-call): `[`, each transaction's
 * exact single-call bytes joined by `,`, `]`.
 */
export function batchCallBody(bodies: readonly Buffer[]): Buffer {
  const parts: Buffer[] = [OPEN];
  bodies.forEach((body, i) => parts.push(...(i ? [COMMA] : []), body));
  parts.push(CLOSE);
  return Buffer.concat(parts);
}

/**
 * The HTTP wallet connector (`WALLET_CONNECTOR=http`, the default when `WALLET_URL` is set):
 * `POST {WALLET_URL}/transactions` with the exact body bytes, `Idempotency-Key` (the transaction
 * id as a {@link headerToken}), `X-Request-Id` and `X-Signature: sha256=<HMAC-SHA256 of the body with WALLET_SECRET>`, on
 * undici with connect, headers and body timeouts of `WALLET_TIMEOUT_MS`, ended (the connection
 * closed) when the outbox aborts the attempt. Connections are kept alive between calls (one request
 * at a time on each: no pipelining, so a slow answer never holds another up). With
 * `WALLET_BATCH_SIZE` above 1 the outbox uses {@link deliverMany}, the batch call. No retries of
 * its own: the outbox retries. Transport errors and timeouts are `retry`; a request undici refuses
 * to send (an invalid header: {@link permanentFailure}) is `refused`, parked at once. Redirects are not
 * followed. The secret is never logged.
 */
@Injectable()
export class HttpWalletConnector extends WalletConnector implements OnModuleDestroy {
  readonly name = 'http';
  private readonly agent: Agent;
  private readonly url: string;
  private readonly secret: string;

  constructor(@Inject(WALLET_CONFIG) config: WalletConfig) {
    super();
    const { url, secret, timeoutMs } = config;
    if (!url || !secret) throw new Error('the http wallet connector needs WALLET_URL and WALLET_SECRET');
    this.url = `${url}/transactions`;
    this.secret = secret;
    this.agent = new Agent({
      connectTimeout: timeoutMs,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      keepAliveTimeout: KEEP_ALIVE_MS,
      // One request at a time per connection (undici's 1; 0 would close each after its answer).
      pipelining: 1,
    });
  }

  /** A single call: the transaction's exact bytes, signed; its outcome by {@link outcomeOfStatus}. */
  async deliver({ transaction, body, requestId, signal }: WalletDeliveryRequest): Promise<WalletDelivery> {
    try {
      const res = await this.post(body, requestId, signal, transaction.transactionId);
      const answer = await readExcerpt(res.body);
      const status = res.statusCode;
      const outcome = outcomeOfStatus(status);
      if (outcome === 'delivered') return { outcome, status, answer };
      const reason = `HTTP ${status}`;
      if (outcome === 'retry')
        return { outcome, status, answer, reason, afterMs: retryAfterMs(res.headers['retry-after']) };
      return { outcome, status, answer, reason };
    } catch (err) {
      const permanent = permanentFailure(err);
      if (permanent) return { outcome: 'refused', reason: permanent };
      return { outcome: 'retry', reason: transportReason(err) };
    }
  }

  /** The batch call: the elements' exact bytes as one signed array; one outcome per element. */
  async deliverMany({ items, requestId, signal }: WalletBatchRequest): Promise<WalletDelivery[]> {
    const ids = items.map((i) => i.transaction.transactionId);
    try {
      const res = await this.post(batchCallBody(items.map((i) => i.body)), requestId, signal);
      const text = await readText(res.body, BATCH_ANSWER_READ_LIMIT);
      return outcomesOfBatchAnswer(res.statusCode, text, ids, res.headers['retry-after']);
    } catch (err) {
      const permanent = permanentFailure(err);
      if (permanent) return ids.map(() => ({ outcome: 'refused', reason: permanent }));
      const reason = transportReason(err);
      return ids.map(() => ({ outcome: 'retry', reason }));
    }
  }

  /** `POST /transactions` of `body` with {@link walletRequestHeaders}. */
  private post(body: Buffer, requestId: string, signal: AbortSignal, idempotencyKey?: string) {
    return request(this.url, {
      method: 'POST',
      dispatcher: this.agent,
      headers: {
        ...walletRequestHeaders(body, this.secret, requestId, idempotencyKey),
        // The push's span (docs/operating.md, "Traces"), when tracing is on.
        ...traceContextHeaders(),
      },
      body,
      signal,
    });
  }

  async onModuleDestroy(): Promise<void> {
    await this.agent.close();
  }
}

/** A transport error or timeout as the reason of a `retry`. */
function transportReason(err: unknown): string {
  const e = err as Error & { code?: string };
  return `${e.code ?? e.name}: ${e.message}`.slice(0, ANSWER_EXCERPT_CHARS);
}

const OPEN = Buffer.from('[');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from(']');

/** A response body as text, read up to `limit` bytes (the rest is dropped). */
async function readText(
  body: AsyncIterable<Buffer> & { destroy?: () => void },
  limit: number,
): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= limit) {
      body.destroy?.();
      break;
    }
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The first {@link ANSWER_EXCERPT_CHARS} characters of a response body (read up to a limit). */
async function readExcerpt(body: AsyncIterable<Buffer> & { destroy?: () => void }): Promise<string> {
  return (await readText(body, ANSWER_READ_LIMIT)).slice(0, ANSWER_EXCERPT_CHARS);
}

/** Provides the HTTP connector as the {@link WalletConnector}. */
@Module({
  providers: [{ provide: WalletConnector, useClass: HttpWalletConnector }],
  exports: [WalletConnector],
})
export class HttpWalletConnectorModule {}
