import { createHmac } from 'node:crypto';
import { Inject, Injectable, Module, OnModuleDestroy } from '@nestjs/common';
import { Agent, request } from 'undici';
import { APP_CONFIG } from '../../config/configuration.js';
import type { AppConfig } from '../../config/configuration.js';
import { ANSWER_EXCERPT_CHARS } from '../outbox-rules.js';
import { WalletConnector, WalletDelivery, WalletDeliveryRequest } from '../wallet-connector.js';

/** Bytes of an answer read at most (the rest is dropped). */
const ANSWER_READ_LIMIT = 64 * 1024;

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
 * The HTTP wallet connector (`WALLET_CONNECTOR=http`, the default when `WALLET_URL` is set):
 * `POST {WALLET_URL}/transactions` with the exact body bytes, `Idempotency-Key` (the transaction
 * id), `X-Request-Id` and `X-Signature: sha256=<HMAC-SHA256 of the body with WALLET_SECRET>`, on
 * undici with connect, headers and body timeouts of `WALLET_TIMEOUT_MS`, ended (the connection
 * closed) when the outbox aborts the attempt. No retries of its own: the outbox retries.
 * Transport errors and timeouts are `retry`. Redirects are not followed. The secret is never logged.
 */
@Injectable()
export class HttpWalletConnector extends WalletConnector implements OnModuleDestroy {
  readonly name = 'http';
  private readonly agent: Agent;
  private readonly url: string;
  private readonly secret: string;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    super();
    const { url, secret, timeoutMs } = config.wallet;
    if (!url || !secret) throw new Error('the http wallet connector needs WALLET_URL and WALLET_SECRET');
    this.url = `${url}/transactions`;
    this.secret = secret;
    this.agent = new Agent({ connectTimeout: timeoutMs, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  }

  async deliver({ transaction, body, requestId, signal }: WalletDeliveryRequest): Promise<WalletDelivery> {
    const signature = createHmac('sha256', this.secret).update(body).digest('hex');
    try {
      const res = await request(this.url, {
        method: 'POST',
        dispatcher: this.agent,
        headers: {
          'content-type': 'application/json',
          'idempotency-key': transaction.transactionId,
          'x-request-id': requestId,
          'x-signature': `sha256=${signature}`,
        },
        body,
        signal,
      });
      const answer = await readExcerpt(res.body);
      const status = res.statusCode;
      const outcome = outcomeOfStatus(status);
      if (outcome === 'delivered') return { outcome, status, answer };
      const reason = `HTTP ${status}`;
      if (outcome === 'retry')
        return { outcome, status, answer, reason, afterMs: retryAfterMs(res.headers['retry-after']) };
      return { outcome, status, answer, reason };
    } catch (err) {
      const e = err as Error & { code?: string };
      return { outcome: 'retry', reason: `${e.code ?? e.name}: ${e.message}`.slice(0, ANSWER_EXCERPT_CHARS) };
    }
  }

  async onModuleDestroy(): Promise<void> {
    await this.agent.close();
  }
}

/** The first {@link ANSWER_EXCERPT_CHARS} characters of a response body (read up to a limit). */
async function readExcerpt(body: AsyncIterable<Buffer> & { destroy?: () => void }): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= ANSWER_READ_LIMIT) {
      body.destroy?.();
      break;
    }
  }
  return Buffer.concat(chunks).toString('utf8').slice(0, ANSWER_EXCERPT_CHARS);
}

/** Provides the HTTP connector as the {@link WalletConnector}. */
@Module({
  providers: [{ provide: WalletConnector, useClass: HttpWalletConnector }],
  exports: [WalletConnector],
})
export class HttpWalletConnectorModule {}
