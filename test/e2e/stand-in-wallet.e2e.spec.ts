import { request } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { CliIo, runCli } from '../../sim/main.js';
import { signatureHeader } from '../../sim/signature.js';
import { RunningWallet, startWallet, WalletOptions, WalletTransactionBody } from '../../sim/wallet.js';

// The stand-in wallet (sim/wallet.ts, `npm run sportapi -- wallet`): the far side of the wallet
// connector, implementing docs/wallet-http-contract.md. No receiver here: the tests play the
// receiver with node:http and check every answer, balance and counter exactly.

const SECRET = 'wallet-shared-secret';

/** A transaction body in the contract's field order; a final_credit of 12.50 EUR by default. */
function tx(overrides: Partial<WalletTransactionBody> = {}): WalletTransactionBody {
  return {
    transactionId: 'CPN1:0:final_credit',
    direction: 'credit',
    type: 'final_credit',
    accountId: 'p-1',
    amount: '12.50',
    currency: 'EUR',
    couponCode: 'CPN1',
    generation: 0,
    batchId: 'b-1',
    reversesTransactionId: null,
    createdAt: '2025-03-01T10:00:00.000Z',
    ...overrides,
  };
}

/** The recalculation of `coupon`'s generation 0: the debit of its final_credit, of 12.50 EUR by default. */
function recalculationDebit(
  coupon: string,
  overrides: Partial<WalletTransactionBody> = {},
): WalletTransactionBody {
  return tx({
    transactionId: `${coupon}:1:recalculation_debit`,
    direction: 'debit',
    type: 'recalculation_debit',
    couponCode: coupon,
    generation: 1,
    batchId: 'b-2',
    reversesTransactionId: `${coupon}:0:final_credit`,
    ...overrides,
  });
}

interface Reply {
  status?: number;
  headers?: Record<string, string | string[] | undefined>;
  body?: unknown;
  /** Transport error message when no answer came. */
  error?: string;
}

/** One HTTP request on a fresh connection; never rejects. */
function call(
  url: string,
  method: string,
  path: string,
  body?: string,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
): Promise<Reply> {
  return new Promise((resolve) => {
    const req = request(`${url}${path}`, { method, headers, agent: false, signal }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode, headers: res.headers, body: text ? JSON.parse(text) : undefined });
      });
    });
    req.on('error', (error) => resolve({ error: error.message }));
    req.end(body);
  });
}

/** `POST /transactions` as the receiver sends it: signed exact bytes, Idempotency-Key = transactionId. */
function post(
  w: RunningWallet,
  text: string | WalletTransactionBody,
  headers: Record<string, string | null> = {},
  signal?: AbortSignal,
): Promise<Reply> {
  const bytes = typeof text === 'string' ? text : JSON.stringify(text);
  const key = typeof text === 'string' ? undefined : text.transactionId;
  const all: Record<string, string | null | undefined> = {
    'content-type': 'application/json',
    'idempotency-key': key,
    'x-request-id': '6f1c2b9e-0d6a-4a8e-9b7c-1e2f3a4b5c6d',
    'x-signature': signatureHeader(bytes, SECRET),
    ...headers,
  };
  const sent = Object.fromEntries(
    Object.entries(all).filter((e): e is [string, string] => typeof e[1] === 'string'),
  );
  return call(w.url, 'POST', '/transactions', bytes, sent, signal);
}

const get = (w: RunningWallet, path: string) => call(w.url, 'GET', path);

/** The 200 answer of an application. */
const applied = (t: WalletTransactionBody, balance: string) => ({
  status: 200,
  body: { transactionId: t.transactionId, status: 'applied', balance, currency: t.currency },
});

const ZERO_STATS = {
  applied: 0,
  repeats: 0,
  conflicts: 0,
  refused: 0,
  invalid: 0,
  unauthorized: 0,
  batchCalls: 0,
  faults: { unavailable: 0, throttled: 0, dropped: 0, transient: 0 },
};

/** What a reply shows in assertions: status and body (or the transport error). */
const seen = (r: Reply) => (r.error !== undefined ? { error: r.error } : { status: r.status, body: r.body });

describe('stand-in wallet (sim/wallet.ts, docs/wallet-http-contract.md)', () => {
  const wallets: RunningWallet[] = [];
  async function wallet(options: Partial<WalletOptions> = {}): Promise<RunningWallet> {
    const w = await startWallet({ secret: SECRET, ...options });
    wallets.push(w);
    return w;
  }
  afterEach(async () => {
    await Promise.all(wallets.splice(0).map((w) => w.close()));
  });

  it('refuses a missing, wrong, upper-case, bare or tampered signature with 401 and applies nothing', async () => {
    const w = await wallet();
    const t = tx();
    const bytes = JSON.stringify(t);
    const good = signatureHeader(bytes, SECRET);
    const cases: Record<string, string | null>[] = [
      { 'x-signature': null },
      { 'x-signature': signatureHeader(bytes, 'another-secret') },
      { 'x-signature': `sha256=${good.slice(7).toUpperCase()}` },
      { 'x-signature': good.slice(7) },
      { 'x-signature': signatureHeader(JSON.stringify(tx({ amount: '1250.00' })), SECRET) },
      { 'x-signature': `${good}0` },
    ];
    for (const headers of cases) {
      expect(seen(await post(w, t, headers))).toEqual({ status: 401, body: { error: 'invalid_signature' } });
    }
    expect(w.stats()).toEqual({ ...ZERO_STATS, unauthorized: 6 });
    expect(w.balances()).toEqual([]);
    // The same bytes correctly signed are applied.
    expect(seen(await post(w, t))).toEqual(applied(t, '12.50'));
  });

  it.each([
    ['not JSON', '{"transactionId":', 'body is not JSON'],
    ['an empty array (a batch call of nothing)', '[]', 'a batch holds 1..1000 transactions'],
    ['an unknown field', JSON.stringify({ ...tx(), note: 'x' }), 'unknown field note'],
    [
      'a missing field',
      JSON.stringify({ ...tx(), reversesTransactionId: undefined }),
      'reversesTransactionId is missing',
    ],
    ['an empty transactionId', tx({ transactionId: '' }), 'transactionId must be a string of 1..200'],
    ['another direction', tx({ direction: 'up' as 'credit' }), 'direction must be "credit" or "debit"'],
    ['a final_credit as a debit', tx({ direction: 'debit' }), 'type final_credit is a credit'],
    ['a type in capitals', tx({ type: 'FINAL_CREDIT' }), 'type must be an operation type (a-z and _)'],
    [
      'an accountId number',
      tx({ accountId: 7 as unknown as string }),
      'accountId must be a string of 1..200',
    ],
    [
      'a number amount',
      tx({ amount: 12.5 as unknown as string }),
      'amount must be a positive decimal string (e.g. "12.50")',
    ],
    ['a zero amount', tx({ amount: '0.00' }), 'amount must be a positive decimal string (e.g. "12.50")'],
    [
      'a negative amount',
      tx({ amount: '-12.50' }),
      'amount must be a positive decimal string (e.g. "12.50")',
    ],
    ['an exponent', tx({ amount: '1e3' }), 'amount must be a positive decimal string (e.g. "12.50")'],
    ['a leading zero', tx({ amount: '012.50' }), 'amount must be a positive decimal string (e.g. "12.50")'],
    ['a currency in lower case', tx({ currency: 'eur' }), 'currency must be a code of 3..8 of A-Z 0-9'],
    [
      'a numeric couponCode',
      tx({ couponCode: 1 as unknown as string }),
      'couponCode must be a string of 1..200 or null',
    ],
    ['a negative generation', tx({ generation: -1 }), 'generation must be an integer >= 0 or null'],
    [
      'a string generation',
      tx({ generation: '0' as unknown as number }),
      'generation must be an integer >= 0 or null',
    ],
    [
      'a recalculation_debit reversing nothing',
      recalculationDebit('CPN1', { reversesTransactionId: null }),
      'a recalculation_debit needs reversesTransactionId',
    ],
    [
      'a createdAt with an offset',
      tx({ createdAt: '2025-03-01T10:00:00+01:00' }),
      'createdAt must be an ISO-8601 UTC timestamp (…Z)',
    ],
  ])('refuses %s with 400 bad_request', async (_what, body, detail) => {
    const w = await wallet();
    const headers = { 'idempotency-key': 'CPN1:0:final_credit' };
    expect(seen(await post(w, body, headers))).toEqual({
      status: 400,
      body: { error: 'bad_request', detail },
    });
    expect(w.stats()).toEqual({ ...ZERO_STATS, invalid: 1 });
    expect(w.transactions()).toEqual([]);
  });

  it('refuses an Idempotency-Key missing or other than transactionId with 400', async () => {
    const w = await wallet();
    const detail = 'Idempotency-Key header must equal transactionId (percent-decoded)';
    for (const key of [null, 'cpn1:0:final_credit', 'CPN2:0:final_credit']) {
      expect(seen(await post(w, tx(), { 'idempotency-key': key }))).toEqual({
        status: 400,
        body: { error: 'bad_request', detail },
      });
    }
    expect(w.stats()).toEqual({ ...ZERO_STATS, invalid: 3 });
  });

  it('takes the percent-decoded Idempotency-Key (the header token of a key a header cannot carry)', async () => {
    const w = await wallet();
    const detail = 'Idempotency-Key header must equal transactionId (percent-decoded)';
    const crlf = tx({ transactionId: '\r\n=1+2:0:final_credit', couponCode: '\r\n=1+2' });
    const percent = tx({ transactionId: '50%:0:final_credit', couponCode: '50%', amount: '1.00' });
    expect(seen(await post(w, crlf, { 'idempotency-key': '%0D%0A=1+2:0:final_credit' }))).toEqual(
      applied(crlf, '12.50'),
    );
    // A raw '%' is not a valid token: '%' always travels as %25.
    for (const key of ['50%:0:final_credit', '50%2:0:final_credit'])
      expect(seen(await post(w, percent, { 'idempotency-key': key }))).toEqual({
        status: 400,
        body: { error: 'bad_request', detail },
      });
    expect(seen(await post(w, percent, { 'idempotency-key': '50%25:0:final_credit' }))).toEqual(
      applied(percent, '13.50'),
    );
    expect(w.stats()).toEqual({ ...ZERO_STATS, applied: 2, invalid: 2 });
  });

  it('credits and debits each (account, currency) to the last minor unit: EUR 2, JPY 0, BTC 8 digits', async () => {
    const w = await wallet();
    const steps: [WalletTransactionBody, string][] = [
      [tx({ transactionId: 'C1:0:final_credit', amount: '12.50' }), '12.50'],
      [tx({ transactionId: 'C2:0:final_credit', amount: '0.05' }), '12.55'],
      [recalculationDebit('C1'), '0.05'],
      [tx({ transactionId: 'C1:1:final_credit', amount: '0.01', generation: 1 }), '0.06'],
      [tx({ transactionId: 'J1:0:final_credit', amount: '1500', currency: 'JPY', couponCode: 'J1' }), '1500'],
      [recalculationDebit('J1', { amount: '1', currency: 'JPY' }), '1499'],
      [
        tx({ transactionId: 'B1:0:final_credit', amount: '0.00012345', currency: 'BTC', accountId: 'p-2' }),
        '0.00012345',
      ],
      [
        tx({ transactionId: 'B2:0:final_credit', amount: '0.00000001', currency: 'BTC', accountId: 'p-2' }),
        '0.00012346',
      ],
      [
        tx({
          transactionId: 'adjustment:B3',
          type: 'deposit',
          amount: '2',
          currency: 'BTC',
          accountId: 'p-2',
        }),
        '2.00012346',
      ],
    ];
    for (const [t, balance] of steps) expect(seen(await post(w, t))).toEqual(applied(t, balance));
    const balances = [
      { accountId: 'p-1', currency: 'EUR', balance: '0.06' },
      { accountId: 'p-1', currency: 'JPY', balance: '1499' },
      { accountId: 'p-2', currency: 'BTC', balance: '2.00012346' },
    ];
    expect(w.balances()).toEqual(balances);
    expect(seen(await get(w, '/balances'))).toEqual({ status: 200, body: { balances } });
    expect(w.stats()).toEqual({ ...ZERO_STATS, applied: 9 });
  });

  it('answers a byte-identical repeat with the first answer; the same transactionId with another body is 409', async () => {
    const w = await wallet();
    const first = tx({ amount: '10.00' });
    expect(seen(await post(w, first))).toEqual(applied(first, '10.00'));
    expect(seen(await post(w, tx({ transactionId: 'CPN2:0:final_credit', amount: '5.00' })))).toEqual(
      applied(tx({ transactionId: 'CPN2:0:final_credit' }), '15.00'),
    );
    // The repeat carries the balance of its first answer (10.00), not today's 15.00.
    const repeat = await post(w, first, { 'x-request-id': 'another-attempt' });
    expect(seen(repeat)).toEqual(applied(first, '10.00'));
    expect(repeat.headers?.['x-request-id']).toBe('another-attempt');
    for (const other of [JSON.stringify(tx({ amount: '10.01' })), JSON.stringify(first, null, 2)]) {
      expect(seen(await post(w, other, { 'idempotency-key': first.transactionId }))).toEqual({
        status: 409,
        body: { error: 'transaction_conflict', detail: 'this transactionId was applied with another body' },
      });
    }
    expect(w.stats()).toEqual({ ...ZERO_STATS, applied: 2, repeats: 1, conflicts: 2 });
    expect(w.balances()).toEqual([{ accountId: 'p-1', currency: 'EUR', balance: '15.00' }]);
    expect(w.transactions().map((t) => t.transactionId)).toEqual([
      'CPN1:0:final_credit',
      'CPN2:0:final_credit',
    ]);
  });

  it('refuses a debit above the balance with 402, neither applied nor remembered: after a deposit the retry is applied', async () => {
    const w = await wallet();
    const credit = tx({ amount: '10.00' });
    const debit = recalculationDebit('CPN1', { amount: '10.00' });
    expect(seen(await post(w, credit))).toEqual(applied(credit, '10.00'));
    // The player spends 7.50 in the wallet before the recalculation arrives.
    expect(
      seen(await call(w.url, 'POST', '/accounts/p-1/withdrawals', '{"amount":"7.50","currency":"EUR"}')),
    ).toEqual({
      status: 200,
      body: { accountId: 'p-1', currency: 'EUR', balance: '2.50' },
    });
    const refusal = {
      status: 402,
      body: { error: 'insufficient_funds', detail: 'debit 10.00 EUR above the balance 2.50' },
    };
    expect(seen(await post(w, debit))).toEqual(refusal);
    expect(seen(await post(w, debit))).toEqual(refusal);
    expect(w.balances()).toEqual([{ accountId: 'p-1', currency: 'EUR', balance: '2.50' }]);
    expect(w.stats()).toEqual({ ...ZERO_STATS, applied: 1, refused: 2 });

    // An admin withdrawal above the balance is refused the same way; a deposit then lets the debit through.
    expect(
      seen(await call(w.url, 'POST', '/accounts/p-1/withdrawals', '{"amount":"3","currency":"EUR"}')),
    ).toEqual({
      status: 402,
      body: { error: 'insufficient_funds', detail: 'debit 3.00 EUR above the balance 2.50' },
    });
    expect(
      seen(await call(w.url, 'POST', '/accounts/p-1/deposits', '{"amount":"7.50","currency":"EUR"}')),
    ).toEqual({
      status: 200,
      body: { accountId: 'p-1', currency: 'EUR', balance: '10.00' },
    });
    expect(seen(await post(w, debit))).toEqual(applied(debit, '0.00'));
    expect(seen(await post(w, debit))).toEqual(applied(debit, '0.00'));
    expect(w.stats()).toEqual({ ...ZERO_STATS, applied: 2, refused: 2, repeats: 1 });
    expect(w.transactions().map((t) => t.transactionId)).toEqual([
      'CPN1:0:final_credit',
      'CPN1:1:recalculation_debit',
    ]);
    expect(
      seen(await call(w.url, 'POST', '/accounts/p-1/deposits', '{"amount":"-1","currency":"EUR"}')),
    ).toEqual({
      status: 400,
      body: { error: 'bad_request', detail: 'amount must be a positive decimal string (e.g. "12.50")' },
    });

    // allowNegative: the same debit on an account never credited takes it below zero.
    const negative = await wallet({ allowNegative: true });
    expect(seen(await post(negative, debit))).toEqual(applied(debit, '-10.00'));
    expect(negative.balances()).toEqual([{ accountId: 'p-1', currency: 'EUR', balance: '-10.00' }]);
  });

  it('accounts: a transaction of an account it does not know is 404 unknown_account, alone or in an array, not applied', async () => {
    const w = await wallet({ accounts: ['p-1'] });
    const known = tx({ amount: '1.00' });
    const stranger = tx({ transactionId: 'CPN9:0:final_credit', couponCode: 'CPN9', accountId: 'p-9' });
    expect(seen(await post(w, known))).toEqual(applied(known, '1.00'));
    const unknown = { status: 404, body: { error: 'unknown_account', detail: 'no such account' } };
    expect(seen(await post(w, stranger))).toEqual(unknown);
    const bytes = `[${JSON.stringify(stranger)}]`;
    const array = await call(w.url, 'POST', '/transactions', bytes, {
      'content-type': 'application/json',
      'x-signature': signatureHeader(bytes, SECRET),
    });
    expect(seen(array)).toEqual({
      status: 200,
      body: {
        results: [
          {
            transactionId: 'CPN9:0:final_credit',
            status: 'refused',
            code: 'unknown_account',
            detail: 'no such account',
          },
        ],
      },
    });
    expect(w.balances()).toEqual([{ accountId: 'p-1', currency: 'EUR', balance: '1.00' }]);
    expect(w.stats()).toMatchObject({ applied: 1, refused: 2 });
  });

  it('with a fixed seed, faults give the same sequence of answers; a 503 or 429 applies nothing', async () => {
    const answers = async () => {
      const w = await wallet({ failRate: 0.5, seed: 42 });
      const statuses: (number | undefined)[] = [];
      for (let i = 1; i <= 12; i++) {
        const r = await post(w, tx({ transactionId: `F${i}:0:final_credit`, amount: '1.00' }));
        statuses.push(r.status);
        if (r.status === 429)
          expect([r.headers?.['retry-after'], r.body]).toEqual(['1', { error: 'throttled' }]);
        if (r.status === 503) expect(r.body).toEqual({ error: 'unavailable' });
      }
      return { statuses, stats: w.stats(), balances: w.balances() };
    };
    const first = await answers();
    expect(first.statuses).toEqual([503, 200, 429, 200, 200, 503, 200, 200, 429, 200, 200, 429]);
    expect(first.stats).toEqual({
      ...ZERO_STATS,
      applied: 7,
      faults: { unavailable: 2, throttled: 3, dropped: 0, transient: 0 },
    });
    expect(first.balances).toEqual([{ accountId: 'p-1', currency: 'EUR', balance: '7.00' }]);
    expect(await answers()).toEqual(first);
  });

  it('drop-after-apply: the client sees a socket hang up, yet the transaction is applied and its repeat answers 200 with the first result', async () => {
    const w = await wallet({ dropAfterApply: 1 });
    const t = tx();
    expect(seen(await post(w, t))).toEqual({ error: 'socket hang up' });
    expect(w.stats()).toEqual({
      ...ZERO_STATS,
      applied: 1,
      faults: { unavailable: 0, throttled: 0, dropped: 1, transient: 0 },
    });
    expect(w.balances()).toEqual([{ accountId: 'p-1', currency: 'EUR', balance: '12.50' }]);
    w.setFaults({ dropAfterApply: 0 });
    expect(seen(await post(w, t))).toEqual(applied(t, '12.50'));
    expect(w.stats()).toEqual({
      ...ZERO_STATS,
      applied: 1,
      repeats: 1,
      faults: { unavailable: 0, throttled: 0, dropped: 1, transient: 0 },
    });
  });

  it('slow: a client that gives up before the answer still has the transaction applied; its retry is a repeat', async () => {
    const lines: string[] = [];
    const w = await wallet({ slowMs: 1_000, log: (l) => lines.push(l) });
    const t = tx();
    const giveUp = new AbortController();
    const pending = post(w, t, {}, giveUp.signal);
    while (!lines.includes('POST /transactions slow: handling in 1000 ms')) await delay(5);
    giveUp.abort();
    expect(await pending).toEqual({ error: 'The operation was aborted' });
    while (w.stats().applied === 0) await delay(20);
    w.setFaults({ slowMs: 0 });
    expect(seen(await post(w, t))).toEqual(applied(t, '12.50'));
    expect(w.stats()).toEqual({ ...ZERO_STATS, applied: 1, repeats: 1 });
    expect(lines).toEqual([
      'POST /transactions slow: handling in 1000 ms',
      'POST /transactions CPN1:0:final_credit → 200 applied, balance 12.50 EUR',
      'POST /transactions CPN1:0:final_credit → 200 repeat (first answer again)',
    ]);
  });

  it('down: answers 503 to every request until it is up again; nothing sent meanwhile is applied', async () => {
    const w = await wallet();
    w.setFaults({ down: true });
    const t = tx();
    const unavailable = { status: 503, body: { error: 'unavailable' } };
    expect(seen(await post(w, t))).toEqual(unavailable);
    expect(seen(await get(w, '/balances'))).toEqual(unavailable);
    expect(seen(await post(w, t))).toEqual(unavailable);
    expect(w.stats()).toEqual({
      ...ZERO_STATS,
      faults: { unavailable: 3, throttled: 0, dropped: 0, transient: 0 },
    });
    w.setFaults({ down: false });
    expect(seen(await post(w, t))).toEqual(applied(t, '12.50'));
    expect(w.stats().applied).toBe(1);
    expect(() => w.setFaults({ failRate: 1.5 })).toThrow('failRate must be between 0 and 1');
  });

  it('the batch call: one result per element in order, each applied once; a single-call body repeated in an array is a duplicate', async () => {
    const w = await wallet();
    const first = tx({ amount: '10.00' });
    expect(seen(await post(w, first))).toEqual(applied(first, '10.00'));
    const second = tx({
      transactionId: 'CPN2:0:final_credit',
      couponCode: 'CPN2',
      accountId: 'p-2',
      amount: '3.00',
    });
    const tooMuch = recalculationDebit('CPN3', { accountId: 'p-3' });
    const otherBody = { ...first, amount: '10.01' };
    const wrong = { ...tx({ transactionId: 'CPN4:0:final_credit', accountId: 'p-4' }), amount: 'ten' };
    const array = `[${[first, second, tooMuch, otherBody, wrong].map((t) => JSON.stringify(t)).join(',')}]`;
    const batch = (bytes: string, signature = signatureHeader(bytes, SECRET)) =>
      call(w.url, 'POST', '/transactions', bytes, {
        'content-type': 'application/json',
        'x-signature': signature,
      });
    expect(seen(await batch(array, signatureHeader(`${array} `, SECRET)))).toEqual({
      status: 401,
      body: { error: 'invalid_signature' },
    });
    expect(seen(await batch(array))).toEqual({
      status: 200,
      body: {
        results: [
          { transactionId: 'CPN1:0:final_credit', status: 'duplicate' },
          { transactionId: 'CPN2:0:final_credit', status: 'applied', balance: '3.00', currency: 'EUR' },
          {
            transactionId: 'CPN3:1:recalculation_debit',
            status: 'refused',
            code: 'insufficient_funds',
            detail: 'debit 12.50 EUR above the balance 0.00',
          },
          {
            transactionId: 'CPN1:0:final_credit',
            status: 'conflict',
            detail: 'this transactionId was applied with another body',
          },
          {
            transactionId: 'CPN4:0:final_credit',
            status: 'refused',
            code: 'bad_request',
            detail: 'amount must be a positive decimal string (e.g. "12.50")',
          },
        ],
      },
    });
    // The array's element is the single call's body: sent alone now, it is a repeat.
    expect(seen(await post(w, second))).toEqual(applied(second, '3.00'));
    expect(w.transactions().map((t) => t.transactionId)).toEqual([
      'CPN1:0:final_credit',
      'CPN2:0:final_credit',
    ]);
    expect(w.stats()).toEqual({
      ...ZERO_STATS,
      applied: 2,
      repeats: 2,
      refused: 1,
      conflicts: 1,
      invalid: 1,
      unauthorized: 1,
      batchCalls: 1,
    });
    expect(seen(await batch('[]'))).toMatchObject({ status: 400 });

    // A transient element is not applied; the same array again applies it then.
    const flaky = await wallet({ elementFailRate: 1 });
    const one = `[${JSON.stringify(second)}]`;
    const sign = (b: string) => ({
      'content-type': 'application/json',
      'x-signature': signatureHeader(b, SECRET),
    });
    expect(seen(await call(flaky.url, 'POST', '/transactions', one, sign(one)))).toEqual({
      status: 200,
      body: {
        results: [
          {
            transactionId: 'CPN2:0:final_credit',
            status: 'transient',
            code: 'unavailable',
            retryAfterSeconds: 1,
          },
        ],
      },
    });
    flaky.setFaults({ elementFailRate: 0 });
    expect(seen(await call(flaky.url, 'POST', '/transactions', one, sign(one)))).toMatchObject({
      status: 200,
      body: { results: [{ status: 'applied' }] },
    });
    expect(flaky.stats()).toMatchObject({ applied: 1, batchCalls: 2, faults: { transient: 1 } });
  });

  it('lists applied transactions in application order with appliedAt, its counters, and 404/405 elsewhere', async () => {
    let clock = Date.parse('2025-03-01T10:00:05.000Z');
    const w = await wallet({ now: () => new Date((clock += 1000)) });
    const credit = tx({ amount: '20.00' });
    const debit = recalculationDebit('CPN1', { amount: '20.00', createdAt: '2025-03-01T11:00:00.000Z' });
    await post(w, credit);
    await post(w, debit);
    await post(w, debit);
    await post(w, '{}', { 'x-signature': 'sha256=00' });
    const transactions = [
      { ...credit, appliedAt: '2025-03-01T10:00:06.000Z' },
      { ...debit, appliedAt: '2025-03-01T10:00:07.000Z' },
    ];
    expect(w.transactions()).toEqual(transactions);
    const listed = await get(w, '/transactions');
    expect(seen(listed)).toEqual({ status: 200, body: { transactions } });
    expect(Object.keys((listed.body as { transactions: object[] }).transactions[1])).toEqual([
      ...Object.keys(debit),
      'appliedAt',
    ]);
    expect(seen(await get(w, '/stats'))).toEqual({
      status: 200,
      body: { ...ZERO_STATS, applied: 2, repeats: 1, unauthorized: 1 },
    });
    expect(seen(await get(w, '/nope'))).toEqual({ status: 404, body: { error: 'not_found' } });
    const wrongMethod = await call(w.url, 'DELETE', '/transactions');
    expect([wrongMethod.status, wrongMethod.headers?.allow, wrongMethod.body]).toEqual([
      405,
      'POST, GET',
      { error: 'method_not_allowed' },
    ]);
    expect(seen(await call(w.url, 'POST', '/transactions', 'x'.repeat(1_100_000)))).toEqual({
      status: 413,
      body: { error: 'payload_too_large', detail: 'over 1048576 bytes' },
    });
  });
});

describe('sportapi wallet (CLI)', () => {
  function captureIo(extra: Partial<CliIo> = {}): CliIo & { lines: string[]; errors: string[] } {
    const lines: string[] = [];
    const errors: string[] = [];
    return { lines, errors, out: (l) => lines.push(l), err: (l) => errors.push(l), ...extra };
  }

  it('runs until stopped, prints its URL and one line per transaction, then its counters', async () => {
    let stop!: () => void;
    let running!: RunningWallet;
    const io = captureIo({
      stopSignal: () => new Promise<void>((resolve) => (stop = resolve)),
      onWallet: (w) => (running = w),
    });
    const done = runCli(['wallet', '--port', '0', '--secret', SECRET, '--seed', '3', '--allow-negative'], io);
    while (!running) await delay(5);
    try {
      expect(io.lines[0]).toBe(
        `wallet stand-in listening on ${running.url}: POST /transactions (negative balances allowed)`,
      );
      const debit = tx({
        transactionId: 'A1:0:adjustment_debit',
        direction: 'debit',
        type: 'adjustment_debit',
        amount: '3.10',
      });
      expect(seen(await post(running, debit))).toEqual(applied(debit, '-3.10'));
      expect(seen(await post(running, tx(), { 'x-signature': null }))).toEqual({
        status: 401,
        body: { error: 'invalid_signature' },
      });
    } finally {
      stop();
      expect(await done).toBe(0);
    }
    expect(io.lines.slice(1)).toEqual([
      'POST /transactions A1:0:adjustment_debit → 200 applied, balance -3.10 EUR',
      'POST /transactions - → 401 invalid_signature',
      `stopped: ${JSON.stringify({ ...ZERO_STATS, applied: 1, unauthorized: 1 })}`,
    ]);
  });

  it.each([
    [['wallet', '--secret', SECRET], '--port is required'],
    [['wallet', '--port', '0'], '--secret is required'],
    [
      ['wallet', '--port', '0', '--secret', SECRET, '--fail-rate', '1.5'],
      '--fail-rate must be between 0 and 1',
    ],
    [
      ['wallet', '--port', '0', '--secret', SECRET, '--drop-after-apply', 'x'],
      '--drop-after-apply must be between 0 and 1',
    ],
    [
      ['wallet', '--port', '0', '--secret', SECRET, '--slow-ms=-1'],
      '--slow-ms must be an integer from 0 to 600000 (ms)',
    ],
    [
      ['wallet', '--port', '0', '--secret', SECRET, '--seed', '1.5'],
      '--seed must be an integer from 0 to 4294967295',
    ],
    [['wallet', '--port', '0', '--secret', SECRET, '--bogus'], "Unknown option '--bogus'"],
  ])('refuses %j with exit code 2', async (argv, message) => {
    const io = captureIo();
    expect(await runCli(argv, io)).toBe(2);
    expect(io.errors[0]).toContain(`sportapi wallet: ${message}`);
    expect(io.errors[1]).toContain('  wallet --port P --secret S');
  });
});
