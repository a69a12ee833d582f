import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { listen, Listening } from '../../sim/http-server.js';
import { batchOf } from '../support/test-app.js';
import { eventually } from '../support/wait.js';
import { fundCoupons, partner, portRange, post, useReceivers } from './support/receiver.js';

// docs/wallet.md, docs/wallet-http-contract.md: a wallet that misbehaves must never stop the
// outbox for good, make it deliver twice, nor stall a worker or leak its connections. A real
// receiver process delivers to a hostile HTTP wallet scripted per test: 10 MB answers, an answer
// that never ends, a redirect loop, garbage and huge Retry-After values, a 2xx that is not JSON
// (NUL bytes, invalid UTF-8), the connection closed mid-request. Every row ends delivered after
// the wallet behaves again, with each attempt recorded.

const [PORT, WALLET_PORT] = portRange(80, 2);
const WALLET_SECRET = 'adversarial-wallet-secret';
const ENV = {
  WALLET_URL: `http://127.0.0.1:${WALLET_PORT}`,
  WALLET_SECRET,
  WALLET_TIMEOUT_MS: '500',
  WALLET_RETRY_BASE_MS: '50',
  WALLET_RETRY_MAX_MS: '200',
  WALLET_POLL_INTERVAL_MS: '20',
  LOG_LEVEL: 'warn',
};
/** Jest's limit for one test: the waits inside are bounded by `eventually`. */
const TEST_TIMEOUT_MS = 30_000;
/** The attempt limit of the outbox worker: WALLET_TIMEOUT_MS + 1 s. */
const ATTEMPT_LIMIT_MS = 1500;

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** Reads the request body, then answers 200 as a wallet that applied it. */
const applies: Handler = (req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"status":"applied"}');
  });
};

/** Reads the request body, then answers `status` with `body` and `headers`. */
const answers =
  (status: number, body: string | Buffer, headers: Record<string, string> = {}): Handler =>
  (req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(body);
    });
  };

interface AttemptRow {
  attempt: number;
  outcome: string;
  http_status: number | null;
  answer: string | null;
}

describe('a hostile wallet (docs/wallet-http-contract.md)', () => {
  const suite = useReceivers([PORT], { env: ENV });
  /** Handlers of the next requests, in order; then {@link applies}. */
  const script: Handler[] = [];
  /** Transaction ids of the requests received, in order. */
  const received: string[] = [];
  let wallet: Listening;
  let next = 0;

  beforeAll(async () => {
    wallet = await listen(
      createServer((req, res) => {
        received.push(String(req.headers['idempotency-key']));
        (script.shift() ?? applies)(req, res);
      }),
      WALLET_PORT,
    );
  });
  afterAll(() => wallet?.close());
  afterEach(() => {
    script.length = 0;
  });

  /** A new account with a coupon settled as a win of 2.50: its final_credit's operation key. */
  async function settledCoupon(): Promise<string> {
    const n = next++;
    const code = `ADV${n}`;
    await fundCoupons(
      suite.receiver.url,
      { id: `adv-${n}`, amount: '10.00', key: `adv-dep-${n}`, reason: 'adversarial wallet' },
      [code],
      '1.00',
    );
    expect(
      (await post(suite.receiver.url, batchOf(`adv-b-${n}`, { code, status: 2, realWin: '2.50' }))).status,
    ).toBe(200);
    return `${code}:0:final_credit`;
  }

  async function outboxRow(key: string) {
    const { rows } = await suite.db.pool.query<{ id: string; status: string; attempts: number }>(
      `SELECT id::text, status, attempts FROM wallet_outbox WHERE operation_key = $1`,
      [key],
    );
    return rows[0];
  }

  /** Waits until the row of `key` is no longer pending; its state and every recorded attempt. */
  async function settled(key: string, timeoutMs = 10_000) {
    const row = await eventually(
      async () => {
        const r = await outboxRow(key);
        return r && r.status !== 'pending' && r;
      },
      `outbox row ${key} settled`,
      { timeoutMs },
    );
    const { rows } = await suite.db.pool.query<AttemptRow>(
      `SELECT attempt, outcome, http_status, answer FROM wallet_delivery_attempts WHERE outbox_id = $1 ORDER BY id`,
      [row.id],
    );
    return { status: row.status, attempts: row.attempts, history: rows };
  }

  it(
    'a 10 MB answer: the receiver reads 64 KiB of it and keeps 500 characters (503 retried, 2xx delivered)',
    async () => {
      const huge = 'x'.repeat(10 * 1024 * 1024);
      script.push(answers(503, huge), answers(200, huge));
      const key = await settledCoupon();
      expect(await settled(key)).toEqual({
        status: 'delivered',
        attempts: 2,
        history: [
          { attempt: 1, outcome: 'retry', http_status: 503, answer: `HTTP 503: ${'x'.repeat(490)}` },
          { attempt: 2, outcome: 'delivered', http_status: 200, answer: 'x'.repeat(500) },
        ],
      });
      expect(received.filter((k) => k === key)).toHaveLength(2);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'an answer that never ends: the attempt gives up after WALLET_TIMEOUT_MS + 1 s and closes the connection',
    async () => {
      let closed = false;
      let timer: NodeJS.Timeout | undefined;
      script.push((req, res) => {
        req.resume();
        req.on('end', () => {
          res.writeHead(200, { 'content-type': 'application/json' });
          // One byte every 100 ms, for ever: never idle long enough for a body timeout.
          timer = setInterval(() => res.write(' '), 100);
        });
        res.on('close', () => {
          clearInterval(timer);
          closed = true;
        });
      });
      try {
        const key = await settledCoupon();
        expect(await settled(key)).toEqual({
          status: 'delivered',
          attempts: 2,
          history: [
            {
              attempt: 1,
              outcome: 'retry',
              http_status: null,
              answer: `no answer from the connector in ${ATTEMPT_LIMIT_MS} ms`,
            },
            { attempt: 2, outcome: 'delivered', http_status: 200, answer: '{"status":"applied"}' },
          ],
        });
        // The receiver hung up on the endless answer: no socket left reading it in the background.
        await eventually(async () => closed, 'the endless answer closed by the receiver');
      } finally {
        clearInterval(timer);
      }
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'a redirect loop is not followed: 3xx pauses all delivery until an operator resumes it',
    async () => {
      script.push(answers(302, '', { location: `http://127.0.0.1:${WALLET_PORT}/transactions` }));
      const key = await settledCoupon();
      const status = await eventually(async () => {
        const res = await partner(suite.receiver.url, 'GET', '/wallet/status');
        return res.body.paused === true && res.body;
      }, 'delivery paused');
      expect(status).toMatchObject({
        paused: true,
        changedBy: null,
        reason: 'wallet answered 302: HTTP 302',
      });
      expect(await outboxRow(key)).toMatchObject({ status: 'pending', attempts: 1 });
      expect(received.filter((k) => k === key)).toHaveLength(1);
      expect((await partner(suite.receiver.url, 'POST', '/wallet/resume', {})).status).toBe(200);
      expect((await settled(key)).history.map((a) => `${a.outcome} ${a.http_status}`)).toEqual([
        'unauthorized 302',
        'delivered 200',
      ]);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'Retry-After: garbage is ignored, a huge or far-off one waits at most WALLET_RETRY_MAX_MS',
    async () => {
      script.push(
        answers(429, '{"error":"throttled"}', { 'retry-after': 'soon' }),
        answers(429, '{"error":"throttled"}', { 'retry-after': '-1' }),
        // 3170 years; then more seconds than a PostgreSQL timestamp can hold.
        answers(429, '{"error":"throttled"}', { 'retry-after': '99999999999' }),
        answers(503, '{"error":"unavailable"}', { 'retry-after': '9'.repeat(30) }),
        answers(503, '{"error":"unavailable"}', { 'retry-after': 'Fri, 31 Dec 9999 23:59:59 GMT' }),
      );
      const key = await settledCoupon();
      expect((await settled(key)).history.map((a) => `${a.attempt} ${a.outcome} ${a.http_status}`)).toEqual([
        '1 retry 429',
        '2 retry 429',
        '3 retry 429',
        '4 retry 503',
        '5 retry 503',
        '6 delivered 200',
      ]);
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'a 2xx that is not JSON, with NUL bytes and invalid UTF-8: delivered, its excerpt recorded',
    async () => {
      script.push(
        answers(
          200,
          Buffer.concat([Buffer.from('{"'), Buffer.from([0x00, 0xff, 0xfe]), Buffer.from('" not json')]),
        ),
      );
      const key = await settledCoupon();
      expect(await settled(key)).toEqual({
        status: 'delivered',
        attempts: 1,
        history: [
          { attempt: 1, outcome: 'delivered', http_status: 200, answer: '{"\uFFFD\uFFFD\uFFFD" not json' },
        ],
      });
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'the wallet closes the connection mid-request, before or after reading the body: retried, then delivered',
    async () => {
      script.push(
        (req) => req.socket.destroy(),
        (req) => {
          req.resume();
          req.on('end', () => req.socket.destroy());
        },
      );
      const key = await settledCoupon();
      const { status, attempts, history } = await settled(key);
      expect({ status, attempts }).toEqual({ status: 'delivered', attempts: 3 });
      expect(history.map((a) => `${a.outcome} ${a.http_status}`)).toEqual([
        'retry null',
        'retry null',
        'delivered 200',
      ]);
      for (const a of history.slice(0, 2)) expect(a.answer).toMatch(/^(UND_ERR_SOCKET|ECONNRESET|EPIPE)\b/);
      expect(received.filter((k) => k === key)).toHaveLength(3);
    },
    TEST_TIMEOUT_MS,
  );

  it('the receiver logged no unhandled error', () => {
    expect(suite.receiver.output()).not.toMatch(/UnhandledPromiseRejection|worker step failed|not recorded/);
  });
});
