import { createHmac } from 'node:crypto';
import { createServer, IncomingMessage } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { request } from 'undici';
import { listen } from '../../sim/http-server.js';
import { RunningWallet, startWallet, WalletOptions } from '../../sim/wallet.js';

/**
 * Deliberately broken wallets for the certification kit's tests (npm run wallet:certify): the
 * stand-in wallet (sim/wallet.ts) behind a proxy that breaks one rule of
 * docs/wallet-http-contract.md each, so that the kit must catch it.
 */
export type Broken =
  /** A byte-identical repeat is applied again (re-sent to the stand-in under another id). */
  | 'applies-repeat-twice'
  /** The same transactionId with another body gets 200 instead of 409. */
  | 'answers-200-to-changed-body'
  /** Every request is re-signed before the stand-in checks it: the signature is not verified. */
  | 'ignores-signature'
  /** The batch call's results come back reversed. */
  | 'loses-batch-order'
  /** Every definite refusal (400, 402, 404, 422) is answered 500 instead. */
  | 'refuses-with-500'
  /** Every eighth POST waits `slowMs` before it is handled. */
  | 'slow'
  /** Not broken, only opaque: answers without `balance`, and no export (GET /transactions 404). */
  | 'opaque';

export const BROKEN: readonly Broken[] = [
  'applies-repeat-twice',
  'answers-200-to-changed-body',
  'ignores-signature',
  'loses-batch-order',
  'refuses-with-500',
  'slow',
];

export interface RunningBrokenWallet {
  url: string;
  wallet: RunningWallet;
  close: () => Promise<void>;
}

const sign = (body: Buffer, secret: string) =>
  `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;

async function readAll(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** Starts the stand-in with `options` behind a proxy breaking `broken` (`slowMs`: of `slow`). */
export async function startBrokenWallet(
  broken: Broken,
  options: WalletOptions & { slowMs?: number },
): Promise<RunningBrokenWallet> {
  const { slowMs = 0, ...standIn } = options;
  const wallet = await startWallet({ ...standIn, port: 0 });
  const seen = new Set<string>();
  let posts = 0;
  const server = createServer((req, res) => {
    void (async () => {
      let body = await readAll(req);
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers))
        if (v !== undefined && !['host', 'content-length', 'connection'].includes(k))
          headers[k] = Array.isArray(v) ? v.join(', ') : v;
      const isPost = req.method === 'POST';
      const isArray = body.subarray(0, 1).toString() === '[';
      if (isPost && broken === 'slow' && ++posts % 8 === 0) await delay(slowMs);
      if (isPost && broken === 'ignores-signature') headers['x-signature'] = sign(body, options.secret);
      if (isPost && broken === 'applies-repeat-twice' && !isArray) {
        const key = body.toString('utf8');
        if (seen.has(key)) {
          // Applied again: the stand-in sees a new transaction id.
          const tx = JSON.parse(key) as { transactionId: string };
          tx.transactionId = `${tx.transactionId}#again${posts++}`;
          body = Buffer.from(JSON.stringify(tx));
          headers['idempotency-key'] = encodeURIComponent(tx.transactionId);
          headers['x-signature'] = sign(body, options.secret);
        } else seen.add(key);
      }
      if (broken === 'opaque' && !isPost) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end('{"error":"not_found"}');
        return;
      }
      const answer = await request(`${wallet.url}${req.url ?? '/'}`, {
        method: req.method as 'GET' | 'POST',
        headers,
        body: isPost ? body : undefined,
      });
      let status = answer.statusCode;
      let text = await answer.body.text();
      if (isPost && broken === 'answers-200-to-changed-body' && status === 409) {
        status = 200;
        text = JSON.stringify({ status: 'applied' });
      }
      if (isPost && broken === 'refuses-with-500' && [400, 402, 404, 422].includes(status)) {
        status = 500;
        text = JSON.stringify({ error: 'internal_error' });
      }
      if (isPost && broken === 'loses-batch-order' && isArray && status === 200) {
        const parsed = JSON.parse(text) as { results: unknown[] };
        text = JSON.stringify({ results: parsed.results.reverse() });
      }
      if (broken === 'opaque' && status === 200 && !isArray) {
        const { balance: _balance, ...rest } = JSON.parse(text) as Record<string, unknown>;
        text = JSON.stringify(rest);
      }
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(text);
    })().catch(() => res.destroy());
  });
  const listening = await listen(server, 0);
  return {
    url: listening.url,
    wallet,
    close: async () => {
      await listening.close();
      await wallet.close();
    },
  };
}
