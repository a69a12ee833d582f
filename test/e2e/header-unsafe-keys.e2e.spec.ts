import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { jetstreamManager } from '@nats-io/jetstream';
import type { JetStreamManager } from '@nats-io/jetstream';
import { connect as natsConnect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import { startWallet } from '../../sim/wallet.js';
import type { RunningWallet } from '../../sim/wallet.js';
import { batchOf, createTestApp, deliver, deposit, register, TestContext } from '../support/test-app.js';
import { eventually } from '../support/wait.js';

// Hostile report 2, finding 1: a coupon_code is kept exactly as sent (CONTRACT §3), CR, LF, '%'
// and any Unicode included, so its operation key `<coupon_code>:<g>:<type>` (§7) may hold
// characters a header cannot carry. The wallet's Idempotency-Key and NATS's Nats-Msg-Id carry it
// as its header token (percent-encoded UTF-8 of the unsafe characters and of '%',
// docs/wallet-http-contract.md); the bodies carry the key as it is. Each such operation reaches
// the stand-in wallet and the stream exactly once, at the first attempt.

const RUN = `${process.pid}${Date.now() % 100_000}`;
const WALLET_SECRET = 'test-wallet-secret-hx';

/** The coupons, in the order they are registered and settled, and their header tokens. */
const COUPONS = [
  { code: '\r\n=1+2', token: '%0D%0A=1+2', win: '7.00' },
  { code: 'Zürich€ 1', token: 'Z%C3%BCrich%E2%82%AC%201', win: '8.00' },
  { code: '50%', token: '50%25', win: '9.00' },
];

/**
 * A pass-through in front of the stand-in wallet that records each `POST /transactions` call's
 * `Idempotency-Key` exactly as it arrived.
 */
async function recordingProxy(target: string): Promise<{ server: Server; url: string; keys: string[] }> {
  const keys: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const key = req.headers['idempotency-key'];
      if (typeof key === 'string') keys.push(key);
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers))
        if (typeof v === 'string' && !['host', 'connection', 'content-length'].includes(k)) headers[k] = v;
      void fetch(`${target}${req.url}`, { method: req.method, headers, body: Buffer.concat(chunks) }).then(
        async (answer) => {
          res.writeHead(answer.status, {
            'content-type': answer.headers.get('content-type') ?? 'text/plain',
          });
          res.end(Buffer.from(await answer.arrayBuffer()));
        },
        () => res.destroy(),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, keys };
}

describe('operation keys with characters a header cannot carry (CONTRACT §3, §7)', () => {
  const stream = `SETTLEMENT_HX${RUN}`;
  const prefix = `settlement_hx${RUN}`;
  let wallet: RunningWallet;
  let proxy: Awaited<ReturnType<typeof recordingProxy>>;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let t: TestContext;

  /** The stream's messages in order: each one's Nats-Msg-Id and its event's account and key. */
  async function stored(): Promise<{ id: string; accountId: string; operationKey: string }[]> {
    const info = await jsm.streams.info(stream).catch(() => undefined);
    const out: { id: string; accountId: string; operationKey: string }[] = [];
    for (let seq = 1; info && seq <= info.state.last_seq; seq++) {
      const m = await jsm.streams.getMessage(stream, { seq }).catch(() => null);
      if (!m) continue;
      const event = m.json<{ accountId: string; operationKey: string }>();
      out.push({
        id: m.header.get('Nats-Msg-Id'),
        accountId: event.accountId,
        operationKey: event.operationKey,
      });
    }
    return out;
  }

  beforeAll(async () => {
    wallet = await startWallet({ port: 0, secret: WALLET_SECRET, seed: 11 });
    proxy = await recordingProxy(wallet.url);
    nc = await natsConnect({ servers: '127.0.0.1:4222' });
    jsm = await jetstreamManager(nc);
    t = await createTestApp({
      WALLET_URL: proxy.url,
      WALLET_SECRET,
      WALLET_TIMEOUT_MS: '1000',
      WALLET_RETRY_BASE_MS: '20',
      WALLET_RETRY_MAX_MS: '100',
      WALLET_POLL_INTERVAL_MS: '20',
      EVENT_PUBLISHERS: 'nats',
      NATS_SERVERS: '127.0.0.1:4222',
      NATS_STREAM: stream,
      NATS_SUBJECT_PREFIX: prefix,
      EVENT_POLL_INTERVAL_MS: '20',
      EVENT_RETRY_BASE_MS: '50',
      EVENT_RETRY_MAX_MS: '300',
      EVENT_TIMEOUT_MS: '1000',
    });
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    await jsm?.streams.delete(stream).catch(() => undefined);
    await nc?.close();
    await new Promise((resolve) => proxy?.server.close(resolve));
    await wallet?.close();
  });

  it('CR/LF, Unicode and "%" coupons settle; the wallet and the stream get each operation once, at the first attempt', async () => {
    await deposit(t.app, 'hx-a', '50.00');
    for (const c of COUPONS) await register(t.app, c.code, 'hx-a', '1.00');
    for (const [i, c] of COUPONS.entries())
      expect(
        (await deliver(t.app, batchOf(`hx-b${i}`, { code: c.code, status: 2, realWin: c.win }))).status,
      ).toBe(200);

    // The wallet: the three credits, in order, each applied once; the key raw in the body, encoded in the header.
    const walletRows = await eventually(async () => {
      const { rows } = await t.db.query<{ key: string; status: string; attempts: number }>(
        `SELECT operation_key AS key, status, attempts FROM wallet_outbox WHERE account_id = 'hx-a' ORDER BY id`,
      );
      return rows.length === 3 && rows.every((r) => r.status !== 'pending') && rows;
    }, 'the wallet rows of hx-a settled');
    expect(walletRows).toEqual(
      COUPONS.map((c) => ({ key: `${c.code}:0:final_credit`, status: 'delivered', attempts: 1 })),
    );
    expect(
      wallet
        .transactions()
        .filter((x) => x.accountId === 'hx-a')
        .map((x) => `${JSON.stringify(x.transactionId)} ${JSON.stringify(x.couponCode)} ${x.amount}`),
    ).toEqual([
      '"\\r\\n=1+2:0:final_credit" "\\r\\n=1+2" 7.00',
      '"Zürich€ 1:0:final_credit" "Zürich€ 1" 8.00',
      '"50%:0:final_credit" "50%" 9.00',
    ]);
    expect(proxy.keys).toEqual([
      '%0D%0A=1+2:0:final_credit',
      'Z%C3%BCrich%E2%82%AC%201:0:final_credit',
      '50%25:0:final_credit',
    ]);
    expect(wallet.stats()).toMatchObject({ invalid: 0, conflicts: 0 });
    expect(wallet.balances().find((b) => b.accountId === 'hx-a')?.balance).toBe('24.00');

    // The stream: three stakes and three credits, each stored once under its token.
    const expected = [
      ...COUPONS.map((c) => ({ token: `${c.token}:0:stake_debit`, key: `${c.code}:0:stake_debit` })),
      ...COUPONS.map((c) => ({ token: `${c.token}:0:final_credit`, key: `${c.code}:0:final_credit` })),
    ];
    const eventRows = await eventually(async () => {
      const { rows } = await t.db.query<{ status: string; attempts: number }>(
        `SELECT status, attempts FROM event_outbox WHERE account_id = 'hx-a' ORDER BY id`,
      );
      return rows.length === 6 && rows.every((r) => r.status !== 'pending') && rows;
    }, 'the event rows of hx-a settled');
    expect(eventRows).toEqual(expected.map(() => ({ status: 'delivered', attempts: 1 })));
    expect((await stored()).filter((m) => m.accountId === 'hx-a')).toEqual(
      expected.map((e) => ({ id: e.token, accountId: 'hx-a', operationKey: e.key })),
    );
  });
});
