import { headers as natsHeaders } from '@nats-io/transport-node';
import { request } from 'undici';
import type { WalletConfig } from '../../src/outbound/wallet/wallet.config.js';
import {
  HttpWalletConnector,
  outcomeOfStatus,
  outcomesOfBatchAnswer,
  retryAfterMs,
} from '../../src/outbound/wallet/connectors/http-wallet.connector.js';
import { OperationType } from '../../src/core/ledger/ledger.types.js';
import {
  checkedDelivery,
  excerpt,
  headerToken,
  nextStep,
  permanentFailure,
} from '../../src/outbound/outbox/outbox-rules.js';
import { walletTransactionOf } from '../../src/outbound/wallet/wallet-transaction.js';
import type { WalletDelivery } from '../../src/outbound/wallet/wallet-connector.js';

// docs/wallet.md: what the outbox does with each answer, and the body it sends.

const POLICY = { retryForMs: 3_600_000, retryBaseMs: 1000, retryMaxMs: 60_000 };
const T0 = new Date('2026-12-01T12:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);

describe('nextStep', () => {
  const cases: [string, WalletDelivery, number, number, ReturnType<typeof nextStep>][] = [
    ['delivered', { outcome: 'delivered', status: 200 }, 1, 0, { kind: 'delivered' }],
    [
      'first retry: the base delay',
      { outcome: 'retry', reason: 'HTTP 503' },
      1,
      0,
      { kind: 'retry', delayMs: 1000 },
    ],
    [
      'third retry: doubled twice',
      { outcome: 'retry', reason: 'HTTP 503' },
      3,
      0,
      { kind: 'retry', delayMs: 4000 },
    ],
    [
      'capped at the maximum',
      { outcome: 'retry', reason: 'timeout' },
      12,
      0,
      { kind: 'retry', delayMs: 60_000 },
    ],
    [
      'a huge attempt count stays capped',
      { outcome: 'retry', reason: 'x' },
      5000,
      0,
      { kind: 'retry', delayMs: 60_000 },
    ],
    [
      'Retry-After above the backoff wins',
      { outcome: 'retry', reason: 'HTTP 429', afterMs: 30_000 },
      1,
      0,
      { kind: 'retry', delayMs: 30_000 },
    ],
    [
      'Retry-After below the backoff does not shorten it',
      { outcome: 'retry', reason: 'HTTP 429', afterMs: 10 },
      4,
      0,
      { kind: 'retry', delayMs: 8000 },
    ],
    [
      'Retry-After above WALLET_RETRY_MAX_MS (3170 years): the maximum, within the retry budget',
      { outcome: 'retry', reason: 'HTTP 429', afterMs: 99_999_999_999_000 },
      1,
      0,
      { kind: 'retry', delayMs: 60_000 },
    ],
    [
      'Retry-After of more digits than a number holds (Infinity): the backoff',
      { outcome: 'retry', reason: 'HTTP 503', afterMs: Infinity },
      2,
      0,
      { kind: 'retry', delayMs: 2000 },
    ],
    [
      'an afterMs that is not a number (a connector bug): the backoff',
      { outcome: 'retry', reason: 'x', afterMs: NaN },
      1,
      0,
      { kind: 'retry', delayMs: 1000 },
    ],
    [
      'retry budget spent: parked',
      { outcome: 'retry', reason: 'HTTP 503' },
      40,
      3_600_000,
      { kind: 'park', reason: 'retry_budget_exhausted' },
    ],
    [
      'one millisecond before the end of the budget: retried',
      { outcome: 'retry', reason: 'HTTP 503' },
      40,
      3_599_999,
      { kind: 'retry', delayMs: 60_000 },
    ],
    [
      'refused: parked at once',
      { outcome: 'refused', reason: 'HTTP 402', status: 402 },
      1,
      0,
      { kind: 'park', reason: 'refused' },
    ],
    [
      'conflict: parked at once',
      { outcome: 'conflict', reason: 'HTTP 409', status: 409 },
      1,
      0,
      { kind: 'park', reason: 'conflict' },
    ],
    [
      'unauthorized: pause',
      { outcome: 'unauthorized', reason: 'HTTP 401', status: 401 },
      1,
      0,
      { kind: 'pause', reason: 'wallet answered 401: HTTP 401' },
    ],
  ];
  it.each(cases)('%s', (_, delivery, attempt, elapsed, step) => {
    expect(nextStep(delivery, { attempt, retryFrom: T0, now: at(elapsed) }, POLICY)).toEqual(step);
  });
});

describe('checkedDelivery: a connector answer made safe to act on and to store', () => {
  const circular: Record<string, unknown> = {};
  circular.self = circular;
  it.each([
    [
      'nothing',
      undefined,
      { outcome: 'retry', reason: 'the acme connector answered no known outcome: undefined' },
    ],
    [
      'an unknown outcome',
      { outcome: 'ok', status: 200 },
      {
        outcome: 'retry',
        reason: 'the acme connector answered no known outcome: {"outcome":"ok","status":200}',
      },
    ],
    [
      'an object JSON cannot show',
      circular,
      { outcome: 'retry', reason: 'the acme connector answered no known outcome: object' },
    ],
    [
      'delivered, with a NUL in its answer (PostgreSQL text refuses it)',
      { outcome: 'delivered', status: 200, answer: 'ok\u0000!' },
      { outcome: 'delivered', status: 200, answer: 'ok\uFFFD!' },
    ],
    [
      'retry with a negative afterMs and a status that is no HTTP status',
      { outcome: 'retry', reason: 'busy', afterMs: -5, status: 1000 },
      { outcome: 'retry', reason: 'busy' },
    ],
    [
      'retry with a usable afterMs',
      { outcome: 'retry', reason: 'busy', afterMs: 250 },
      { outcome: 'retry', reason: 'busy', afterMs: 250 },
    ],
    [
      'refused without a reason',
      { outcome: 'refused', status: 402 },
      { outcome: 'refused', status: 402, reason: 'the acme connector gave no reason' },
    ],
    [
      'a reason of 10 000 characters',
      { outcome: 'conflict', reason: 'y'.repeat(10_000) },
      { outcome: 'conflict', reason: 'y'.repeat(500) },
    ],
  ])('%s', (_, answered, delivery) => {
    expect(checkedDelivery(answered, 'acme')).toEqual(delivery);
  });

  it('excerpt keeps 500 characters and replaces NUL', () => {
    expect(excerpt(`\u0000${'z'.repeat(600)}`)).toBe(`\uFFFD${'z'.repeat(499)}`);
  });
});

describe('the HTTP connector reads the wallet answer', () => {
  it.each([
    [200, 'delivered'],
    [201, 'delivered'],
    [204, 'delivered'],
    [408, 'retry'],
    [429, 'retry'],
    [500, 'retry'],
    [502, 'retry'],
    [503, 'retry'],
    [504, 'retry'],
    [401, 'unauthorized'],
    [403, 'unauthorized'],
    [301, 'unauthorized'],
    [307, 'unauthorized'],
    [409, 'conflict'],
    [400, 'refused'],
    [402, 'refused'],
    [404, 'refused'],
    [422, 'refused'],
  ])('HTTP %i: %s', (status, outcome) => {
    expect(outcomeOfStatus(status)).toBe(outcome);
  });

  it('Retry-After in seconds or as an HTTP date; absent or unreadable: none', () => {
    const now = Date.parse('Tue, 01 Dec 2026 12:00:00 GMT');
    expect(retryAfterMs('120', now)).toBe(120_000);
    expect(retryAfterMs(' 0 ', now)).toBe(0);
    expect(retryAfterMs('Tue, 01 Dec 2026 12:00:30 GMT', now)).toBe(30_000);
    expect(retryAfterMs('Tue, 01 Dec 2026 11:59:00 GMT', now)).toBe(0);
    expect(retryAfterMs(['5', '9'], now)).toBe(5000);
    expect(retryAfterMs(undefined, now)).toBeUndefined();
    expect(retryAfterMs('soon', now)).toBeUndefined();
    expect(retryAfterMs('', now)).toBeUndefined();
  });
});

describe('walletTransactionOf', () => {
  const format = (amount: string, currency: string) =>
    currency === 'JPY' ? String(Number(amount)) : Number(amount).toFixed(2);
  const op = {
    operationKey: '000000000272:1:recalculation_debit',
    type: OperationType.RECALCULATION_DEBIT,
    accountId: 'player-42',
    amount: '185.50000000',
    currency: 'EUR',
    couponCode: '000000000272',
    generation: 1,
    batchId: 'b-7',
    createdAt: T0,
  };

  it('a recalculation debit names the credit of the generation before it', () => {
    expect(JSON.stringify(walletTransactionOf(op, format))).toBe(
      '{"transactionId":"000000000272:1:recalculation_debit","direction":"debit","type":"recalculation_debit",' +
        '"accountId":"player-42","amount":"185.50","currency":"EUR","couponCode":"000000000272","generation":1,' +
        '"batchId":"b-7","reversesTransactionId":"000000000272:0:final_credit","createdAt":"2026-12-01T12:00:00.000Z"}',
    );
  });

  it('credits and adjustments reverse nothing; direction from the type', () => {
    const credit = walletTransactionOf(
      { ...op, operationKey: '000000000272:0:final_credit', type: OperationType.FINAL_CREDIT, generation: 0 },
      format,
    );
    expect([credit.direction, credit.reversesTransactionId]).toEqual(['credit', null]);
    const deposit = walletTransactionOf(
      {
        ...op,
        operationKey: 'adjustment:k1',
        type: OperationType.DEPOSIT,
        couponCode: null,
        generation: null,
        batchId: null,
        currency: 'JPY',
        amount: '1500.00000000',
      },
      format,
    );
    expect([deposit.direction, deposit.amount, deposit.reversesTransactionId, deposit.couponCode]).toEqual([
      'credit',
      '1500',
      null,
      null,
    ]);
    const withdrawal = walletTransactionOf(
      { ...op, type: OperationType.WITHDRAWAL, couponCode: null, generation: null },
      format,
    );
    expect([withdrawal.direction, withdrawal.reversesTransactionId]).toEqual(['debit', null]);
  });
});

describe('outcomesOfBatchAnswer (docs/wallet-http-contract.md#the-batch-call)', () => {
  const ids = [
    'A:0:final_credit',
    'B:0:final_credit',
    'C:1:recalculation_debit',
    'D:0:final_credit',
    'E:0:final_credit',
  ];
  const outcomes = (status: number, body: unknown, retryAfter?: string) =>
    outcomesOfBatchAnswer(
      status,
      typeof body === 'string' ? body : JSON.stringify(body),
      ids,
      retryAfter,
    ).map((d) => [d.outcome, 'afterMs' in d ? d.afterMs : undefined]);

  it('maps each element by its status, in order; a result naming another transaction is no answer', () => {
    const results = [
      { transactionId: ids[0], status: 'applied' },
      { transactionId: ids[1], status: 'duplicate' },
      { transactionId: ids[2], status: 'refused', code: 'insufficient_funds' },
      { transactionId: ids[3], status: 'conflict' },
      { transactionId: ids[4], status: 'transient', retryAfterSeconds: 2 },
    ];
    expect(outcomes(200, { results })).toEqual([
      ['delivered', undefined],
      ['delivered', undefined],
      ['refused', undefined],
      ['conflict', undefined],
      ['retry', 2000],
    ]);
    const swapped = [
      results[1],
      results[0],
      ...results.slice(2, 4),
      { transactionId: ids[4], status: 'maybe' },
    ];
    expect(outcomes(200, { results: swapped }).map(([o]) => o)).toEqual([
      'retry',
      'retry',
      'refused',
      'conflict',
      'retry',
    ]);
    const refused = outcomesOfBatchAnswer(200, JSON.stringify({ results }), ids)[2];
    expect(refused).toMatchObject({ outcome: 'refused', status: 200, reason: 'refused: insufficient_funds' });
  });

  it('a 2xx without one result per element, a 5xx or 429: every element retries (after Retry-After)', () => {
    for (const body of ['not json', { results: [] }, { nothing: true }])
      expect(outcomes(200, body).map(([o]) => o)).toEqual(ids.map(() => 'retry'));
    expect(outcomes(503, '', '3')).toEqual(ids.map(() => ['retry', 3000]));
    expect(outcomes(429, '').map(([o]) => o)).toEqual(ids.map(() => 'retry'));
  });

  it('401, 403, 3xx and any other 4xx to the array as a whole pause delivery; nothing is parked', () => {
    for (const status of [401, 403, 302, 400, 404, 409, 413, 422])
      expect(outcomes(status, '').map(([o]) => o)).toEqual(ids.map(() => 'unauthorized'));
  });
});

describe('headerToken: an operation key as a header value (docs/wallet-http-contract.md)', () => {
  it.each([
    ['000000000272:0:final_credit', '000000000272:0:final_credit'],
    ['adjustment:=1+2@x', 'adjustment:=1+2@x'],
    ['\r\n=1+2:0:final_credit', '%0D%0A=1+2:0:final_credit'],
    ['a\tb c:1:recalculation_debit', 'a%09b%20c:1:recalculation_debit'],
    ['100%:0:stake_debit', '100%25:0:stake_debit'],
    ['%0D:0:stake_debit', '%250D:0:stake_debit'],
    ['Zürich€1:0:final_credit', 'Z%C3%BCrich%E2%82%AC1:0:final_credit'],
    ['❤️:0:final_credit', '%E2%9D%A4%EF%B8%8F:0:final_credit'],
    ['\u{1F600}\u007f\u00a0:0:final_credit', '%F0%9F%98%80%7F%C2%A0:0:final_credit'],
  ])('%j → %j, and back by decodeURIComponent', (key, token) => {
    expect(headerToken(key)).toBe(token);
    expect(decodeURIComponent(token)).toBe(key);
    expect(token).toMatch(/^[\x21-\x7e]+$/);
  });

  it('keys that differ give tokens that differ (a key shaped like a token included)', () => {
    const keys = ['\r:0:x', '%0D:0:x', '%250D:0:x', ' :0:x', '%20:0:x', '+:0:x'];
    expect(keys.map(headerToken)).toEqual([
      '%0D:0:x',
      '%250D:0:x',
      '%25250D:0:x',
      '%20:0:x',
      '%2520:0:x',
      '+:0:x',
    ]);
    expect(new Set(keys.map(headerToken)).size).toBe(keys.length);
  });
});

describe('permanentFailure: errors no retry can fix park at once', () => {
  it("undici's refusal of a header value: the reason, with its code", async () => {
    const err = await request('http://127.0.0.1:9/transactions', {
      method: 'POST',
      headers: { 'idempotency-key': 'a\r\nb' },
    }).catch((e: unknown) => e);
    expect(permanentFailure(err)).toBe(
      'undeliverable, no retry can fix it: UND_ERR_INVALID_ARG: invalid idempotency-key header',
    );
  });

  it("the NATS client's refusal of a header value", () => {
    let err: unknown;
    try {
      natsHeaders().set('Nats-Msg-Id', 'a\r\nb');
    } catch (e) {
      err = e;
    }
    expect(permanentFailure(err)).toBe(
      "undeliverable, no retry can fix it: InvalidArgumentError: 'header' values cannot contain \\r or \\n",
    );
  });

  it('transport errors and timeouts are not permanent', () => {
    expect(permanentFailure(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe(
      undefined,
    );
    expect(permanentFailure(Object.assign(new Error('timeout'), { code: 'UND_ERR_HEADERS_TIMEOUT' }))).toBe(
      undefined,
    );
    expect(permanentFailure('a string')).toBe(undefined);
  });

  it('the HTTP connector answers refused (parked at once) when undici will not send the request', async () => {
    // Only the wallet's slice is given to the connector, of which it reads these.
    const config = {
      url: 'http://127.0.0.1:9',
      secret: 'unit-wallet-secret',
      timeoutMs: 1000,
    } as unknown as WalletConfig;
    const connector = new HttpWalletConnector(config);
    try {
      const transaction = walletTransactionOf(
        {
          operationKey: 'K1:0:final_credit',
          type: OperationType.FINAL_CREDIT,
          accountId: 'a',
          amount: '1.00000000',
          currency: 'EUR',
          couponCode: 'K1',
          generation: 0,
          batchId: 'b',
          createdAt: T0,
        },
        (amount) => amount,
      );
      const delivery = await connector.deliver({
        transaction,
        body: Buffer.from('{}'),
        requestId: 'r\r\n1',
        outboxId: '1',
        attempt: 1,
        signal: new AbortController().signal,
      });
      expect(delivery).toEqual({
        outcome: 'refused',
        reason: 'undeliverable, no retry can fix it: UND_ERR_INVALID_ARG: invalid x-request-id header',
      });
      expect(nextStep(delivery, { attempt: 1, retryFrom: T0, now: T0 }, POLICY)).toEqual({
        kind: 'park',
        reason: 'refused',
      });
    } finally {
      await connector.onModuleDestroy();
    }
  });
});
