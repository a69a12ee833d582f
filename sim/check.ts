import { randomBytes } from 'node:crypto';
import { PartnerApi } from './partner-api.js';
import { DEFAULT_CALLBACK_PATH } from './send.js';
import { signatureHeader } from './signature.js';

/**
 * `check`: a built-in conformance run against any receiver of CONTRACT §3–§7 and §10, with a random
 * suffix on every id (safe on a database with data, as often as wanted): a deposit of 100.00, two
 * registered coupons, a batch delivered, redelivered and sent again in a new batch, then deliveries
 * that must be refused. One PASS/FAIL line per rule, then `N passed, M failed`.
 */

export interface CheckOptions {
  /** Base URL of the receiver (partner API and callback). */
  url: string;
  secret: string;
  opsKey: string;
  callbackPath?: string;
  signatureHeader?: string;
  timeoutMs?: number;
  /** Run suffix; random by default. */
  runId?: string;
  /**
   * How long a check of balances and operations may wait for them (ms; 0 by default): for a
   * receiver that answers 200 once a batch is stored and applies it afterwards (inbox mode).
   */
  eventualMs?: number;
  log?: (line: string) => void;
}

export interface RuleResult {
  id: string;
  rule: string;
  pass: boolean;
  detail: string;
}

export interface CheckReport {
  runId: string;
  rules: RuleResult[];
  passed: number;
  failed: number;
  ok: boolean;
}

interface Delivery {
  status: number | null;
  body: Record<string, unknown> | null;
  text: string;
  ms: number;
  error?: string;
}

const SENDER_LIMIT_MS = 10_000;

export async function runCheck(options: CheckOptions): Promise<CheckReport> {
  const run = options.runId ?? randomBytes(4).toString('hex');
  const api = new PartnerApi(options.url, options.opsKey, options.timeoutMs ?? 15_000);
  const callback = new URL(options.callbackPath ?? DEFAULT_CALLBACK_PATH, options.url);
  const account = `chk-${run}`;
  const c1 = `chk${run}-1`;
  const c2 = `chk${run}-2`;
  const latencies: number[] = [];
  const rules: RuleResult[] = [];
  const log = options.log ?? (() => undefined);

  async function deliver(
    bytes: string,
    sign: 'valid' | 'wrong' | 'none' | 'tamper' = 'valid',
  ): Promise<Delivery> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    const header = options.signatureHeader ?? 'x-signature';
    let sent = bytes;
    if (sign === 'valid') headers[header] = signatureHeader(bytes, options.secret);
    if (sign === 'wrong') headers[header] = signatureHeader(bytes, `${options.secret}-wrong`);
    if (sign === 'tamper') {
      headers[header] = signatureHeader(bytes, options.secret);
      sent = bytes.replace('"status":2', '"status":3');
    }
    const started = performance.now();
    try {
      const res = await fetch(callback, {
        method: 'POST',
        headers,
        body: sent,
        redirect: 'manual',
        signal: AbortSignal.timeout(options.timeoutMs ?? 15_000),
      });
      const text = await res.text();
      const ms = performance.now() - started;
      latencies.push(ms);
      let body: Record<string, unknown> | null = null;
      try {
        const parsed: unknown = JSON.parse(text);
        body = parsed !== null && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : null;
      } catch {
        body = null;
      }
      return { status: res.status, body, text, ms };
    } catch (error) {
      const ms = performance.now() - started;
      latencies.push(ms);
      return { status: null, body: null, text: '', ms, error: (error as Error).message };
    }
  }

  async function rule(id: string, text: string, test: () => Promise<string>): Promise<boolean> {
    let result: RuleResult;
    try {
      result = { id, rule: text, pass: true, detail: await test() };
    } catch (error) {
      result = { id, rule: text, pass: false, detail: (error as Error).message };
    }
    rules.push(result);
    log(`${result.pass ? 'PASS' : 'FAIL'}  ${id}  ${text}${result.detail ? `  (${result.detail})` : ''}`);
    return result.pass;
  }

  function expect(condition: boolean, detail: string): void {
    if (!condition) throw new Error(detail);
  }

  const show = (d: Delivery) =>
    d.status === null ? `no answer: ${d.error}` : `HTTP ${d.status} ${d.text.slice(0, 160)}`;

  const couponJson = (code: string, status: number, realWin: string | null, events: [string, number][]) => ({
    coupon_code: code,
    status,
    realWin,
    events: events.map(([uuid, s]) => ({ uuid, status: s })),
  });
  const batch = (batchId: string, coupons: object[]) =>
    JSON.stringify({ batchId, couponCount: coupons.length, coupons });
  const winA = couponJson(c1, 2, '25.50', [
    [`${c1}-e1`, 2],
    [`${c1}-e2`, 2],
  ]);
  const pendingA = couponJson(c2, 1, null, [[`${c2}-e1`, 0]]);
  const batchA = batch(`chk-${run}-a`, [winA, pendingA]);

  /** {@link moneyNow}, retried every 100 ms until it holds or `eventualMs` has passed. */
  async function money(expectedBalance: string): Promise<string> {
    const until = performance.now() + (options.eventualMs ?? 0);
    for (;;) {
      try {
        return await moneyNow(expectedBalance);
      } catch (error) {
        if (performance.now() >= until) throw error;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  async function moneyNow(expectedBalance: string): Promise<string> {
    const coupon = await api.coupon(c1);
    expect(coupon !== null, `GET /coupons/${c1}: 404`);
    const ops = (coupon?.operations ?? []).map((o) => `${o.key}=${o.amount}`).sort();
    const want = [`${c1}:0:final_credit=25.50`, `${c1}:0:stake_debit=10.00`];
    expect(
      JSON.stringify(ops) === JSON.stringify(want),
      `operations ${JSON.stringify(ops)}, want ${JSON.stringify(want)}`,
    );
    const balance = await api.balance(account);
    expect(balance === expectedBalance, `balance ${balance}, want ${expectedBalance}`);
    return `operations ${ops.join(', ')}; balance ${balance}`;
  }

  await rule('setup', '§10 a deposit and two coupon registrations through the partner API', async () => {
    await api.deposit(account, '100.00', 'EUR', `chk-${run}-deposit`);
    await api.registerCoupon({ coupon_code: c1, accountId: account, stake: '10.00', currency: 'EUR' });
    await api.registerCoupon({ coupon_code: c2, accountId: account, stake: '5.00', currency: 'EUR' });
    const balance = await api.balance(account);
    expect(balance === '85.00', `balance ${balance}, want 85.00`);
    return `account ${account}, coupons ${c1} ${c2}, balance 85.00`;
  });

  const first = await deliver(batchA);
  await rule('200-only', '§2 §5 a new batch is answered HTTP 200 (never 201/202/204)', async () => {
    expect(first.status === 200, show(first));
    return 'HTTP 200';
  });
  await rule(
    'processed',
    '§5 the answer says "success": true and "processed" equals couponCount (2)',
    async () => {
      expect(first.body?.success === true && first.body?.processed === 2, show(first));
      return first.text.slice(0, 160);
    },
  );
  await rule(
    'settled-once',
    '§6 §7 the WIN is credited: final_credit 25.50, balance 85.00 + 25.50 = 110.50',
    () => money('110.50'),
  );

  const again = await deliver(batchA);
  await rule(
    'duplicate-200',
    '§2 §4 the same batch again (same batchId, same bytes) is answered 200, success: true',
    async () => {
      expect(
        again.status === 200 && again.body?.success === true && again.body?.processed === 2,
        show(again),
      );
      return again.text.slice(0, 160);
    },
  );
  await rule(
    'duplicate-no-credit',
    '§4 §7 the redelivery credited nothing (one final_credit, balance still 110.50)',
    () => money('110.50'),
  );

  const sameState = await deliver(batch(`chk-${run}-b`, [winA]));
  await rule(
    'same-state',
    '§6 the same final state in a new batch is answered 200 and moves no money',
    async () => {
      expect(sameState.status === 200 && sameState.body?.success === true, show(sameState));
      return money('110.50');
    },
  );

  // Deliveries that must be refused; each would credit coupon 2 with 7.00 if it were accepted.
  const winC = batch(`chk-${run}-c`, [couponJson(c2, 2, '7.00', [[`${c2}-e1`, 2]])]);
  const wrong = await deliver(winC, 'wrong');
  await rule('bad-signature', '§5 a signature made with another secret is answered 401', async () => {
    expect(wrong.status === 401, show(wrong));
    return 'HTTP 401';
  });
  const none = await deliver(winC, 'none');
  await rule('no-signature', '§5 a batch without a signature is answered 401', async () => {
    expect(none.status === 401, show(none));
    return 'HTTP 401';
  });
  const tampered = await deliver(winC, 'tamper');
  await rule('tampered', '§5 a body changed after signing is answered 401', async () => {
    expect(tampered.status === 401, show(tampered));
    return 'HTTP 401';
  });
  const malformed = await deliver(`{"batchId":"chk-${run}-d","couponCount":1,"coupons":[`);
  await rule('malformed-json', '§5 malformed JSON (signed) is answered 400', async () => {
    expect(malformed.status === 400, show(malformed));
    return 'HTTP 400';
  });
  const mismatch = await deliver(
    JSON.stringify({
      batchId: `chk-${run}-e`,
      couponCount: 2,
      coupons: [couponJson(c2, 2, '7.00', [[`${c2}-e1`, 2]])],
    }),
  );
  await rule(
    'count-mismatch',
    '§3 §5 couponCount not equal to the number of coupons is answered 400',
    async () => {
      expect(mismatch.status === 400, show(mismatch));
      return 'HTTP 400';
    },
  );
  await rule(
    'refused-no-money',
    '§4 §8 the refused deliveries moved no money (balance still 110.50)',
    async () => {
      const balance = await api.balance(account);
      expect(balance === '110.50', `balance ${balance}, want 110.50`);
      return `balance ${balance}`;
    },
  );
  await rule('within-10s', "§2 §5 every answer came within the sender's 10 s", async () => {
    const slowest = Math.max(0, ...latencies);
    expect(slowest < SENDER_LIMIT_MS, `slowest answer ${Math.round(slowest)} ms`);
    return `slowest ${Math.round(slowest)} ms`;
  });

  const passed = rules.filter((r) => r.pass).length;
  const failed = rules.length - passed;
  log(`${passed} passed, ${failed} failed`);
  return { runId: run, rules, passed, failed, ok: failed === 0 };
}
