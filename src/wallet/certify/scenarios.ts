import { Decimal } from 'decimal.js';
import type { OutboxDelivery } from '../../outbox/outbox.types.js';
import { batchCallBody } from '../connectors/http-wallet.connector.js';
import {
  Answered,
  described,
  Kit,
  money,
  NotApplicable,
  percentile,
  ScenarioResult,
  ScenarioRun,
  Sent,
  Unobservable,
} from './kit.js';

/**
 * The scenarios of `npm run wallet:certify` (docs/wallet.md, "Certifying a wallet"), each a rule
 * of docs/wallet-http-contract.md checked against the wallet: what it sends, what the receiver
 * would make of each answer, and the effect seen through the answers' balance and the export.
 */
export interface Scenario {
  id: string;
  title: string;
  group: ScenarioResult['group'];
  /** Section of docs/wallet-http-contract.md. */
  contract: string;
  /** Needs the batch call (`--batch`). */
  batch?: boolean;
  /** Runs it; returns one line saying what passing means here. */
  run(kit: Kit, s: ScenarioRun): Promise<string>;
}

/** Latency bands, as shares of the receiver's `WALLET_TIMEOUT_MS`: p95 at or above WARN warns, FAIL fails. */
export const LATENCY_WARN = 0.25;
export const LATENCY_FAIL = 0.5;

function seen(a: Answered): string {
  const x = a.exchange;
  const answer = x.answer === undefined ? '' : ` ${x.answer.slice(0, 160)}`;
  return `${x.status === undefined ? x.error : `HTTP ${x.status}`}${answer} → the receiver reads: ${a.outcome}`;
}

function expect(s: ScenarioRun, a: Answered, outcome: OutboxDelivery['outcome'], what: string): boolean {
  return s.check(a.outcome === outcome, what, seen(a), 'status');
}

/** A definite refusal: a 4xx the receiver parks (not 401/403, not 409, not 5xx). */
function expectRefusal(s: ScenarioRun, a: Answered, what: string): boolean {
  return expect(s, a, 'refused', `${what}: a definite refusal (4xx such as 400, 404, 422), never a 5xx`);
}

function expectUnauthorized(s: ScenarioRun, a: Answered, what: string): boolean {
  return s.check(a.exchange.status === 401, `${what}: 401 before the body is looked at`, seen(a), 'status');
}

const sum = (amounts: string[]) => amounts.reduce((t, a) => t.plus(a), new Decimal(0));

/** Either outcome the contract allows for a value a wallet may take or refuse; effects to match. */
async function appliedOnceOrRefused(kit: Kit, s: ScenarioRun, A: string, sent: Sent, label: string) {
  const a = await kit.send(label, sent);
  if (a.outcome === 'delivered') {
    const again = await kit.send(`${label}, sent again (same bytes)`, sent);
    expect(s, again, 'delivered', 'the repeat answered 2xx');
    await kit.effect(s, A, sent.transaction.amount, [[sent, 1]]);
    const listed = await kit.exportCounts([sent.transaction.transactionId]);
    if (listed)
      s.check(
        listed.get(sent.transaction.transactionId)?.length === 1,
        'the export names the transactionId exactly as sent',
        `${listed.get(sent.transaction.transactionId)?.length ?? 0} match(es)`,
        'export',
      );
    return 'applied once with the values exactly as sent (the wallet takes them)';
  }
  expectRefusal(s, a, label);
  await kit.effect(s, A, 0, [[sent, 0]]);
  return 'refused with a definite 4xx, no effect';
}

export const SCENARIOS: Scenario[] = [
  {
    id: 'credit-applied-once',
    title: 'A credit is applied once',
    group: 'single call',
    contract: '#the-request',
    async run(kit, s) {
      const [A] = kit.accounts;
      await kit.baseline(A);
      const before = kit.balance(A);
      const t = kit.tx(A, '12.50');
      const a = await kit.send('credit 12.50', t);
      expect(s, a, 'delivered', 'answered 2xx');
      const b = a.json?.balance;
      if (before && typeof b === 'string')
        s.check(
          new Decimal(b).eq(before.plus('12.50')),
          `answered balance ${money(before.plus('12.50'))}`,
          b,
          'answer',
        );
      await kit.effect(s, A, '12.50', [[t, 1]]);
      return 'answered 2xx and the balance moved by 12.50 once';
    },
  },
  {
    id: 'debit-applied-once',
    title: 'A debit (a recalculation) is applied once',
    group: 'single call',
    contract: '#the-request',
    async run(kit, s) {
      const [A] = kit.accounts;
      await kit.baseline(A);
      const credit = kit.tx(A, '5.00');
      expect(s, await kit.send('credit 5.00', credit), 'delivered', 'the credit answered 2xx');
      const debit = kit.tx(A, '5.00', 'debit', credit.transaction.couponCode ?? undefined);
      const a = await kit.send('recalculation_debit 5.00 of that credit', debit);
      expect(s, a, 'delivered', 'the debit answered 2xx');
      await kit.effect(s, A, 0, [
        [credit, 1],
        [debit, 1],
      ]);
      return 'credit then debit of 5.00: each applied once, the balance back where it was';
    },
  },
  {
    id: 'balance-consistent',
    title: 'The balance it answers is consistent',
    group: 'single call',
    contract: '#answers-and-what-the-receiver-does',
    async run(kit, s) {
      const [A] = kit.accounts;
      await kit.baseline(A);
      const before = kit.balance(A);
      if (kit.balanceInAnswers === false || before === undefined)
        throw new Unobservable('the wallet answers no balance (optional in the contract)');
      let total = before;
      for (const amount of ['0.10', '0.20', '0.30']) {
        const a = await kit.send(`credit ${amount}`, kit.tx(A, amount));
        total = total.plus(amount);
        expect(s, a, 'delivered', `credit ${amount} answered 2xx`);
        s.check(
          String(a.json?.balance) !== 'undefined' && new Decimal(String(a.json?.balance)).eq(total),
          `answered balance ${money(total)}`,
          String(a.json?.balance),
          'answer',
        );
      }
      await kit.effect(s, A, '0.60', []);
      return 'three credits answered balances that add up to the cent';
    },
  },
  {
    id: 'repeat-same-bytes',
    title: 'A repeat (same bytes) has no second effect and gets the same answer',
    group: 'single call',
    contract: '#the-idempotency-rule',
    async run(kit, s) {
      const [A] = kit.accounts;
      await kit.baseline(A);
      const t = kit.tx(A, '3.00');
      const first = await kit.send('credit 3.00', t);
      expect(s, first, 'delivered', 'the first send answered 2xx');
      const again = await kit.send('the same bytes again (a new X-Request-Id)', t);
      expect(s, again, 'delivered', 'the repeat answered 2xx');
      if (again.exchange.answer !== first.exchange.answer || again.exchange.status !== first.exchange.status)
        s.warn('the repeat gets the first answer again (recommended)', again.exchange.answer ?? '', 'answer');
      await kit.effect(s, A, '3.00', [[t, 1]]);
      return 'the repeat answered 2xx and moved nothing more';
    },
  },
  {
    id: 'conflict-other-amount',
    title: 'The same transactionId with another amount is a conflict (409), no effect',
    group: 'single call',
    contract: '#the-idempotency-rule',
    async run(kit, s) {
      const [A] = kit.accounts;
      await kit.baseline(A);
      const t = kit.tx(A, '4.00');
      expect(s, await kit.send('credit 4.00', t), 'delivered', 'the first send answered 2xx');
      const other = kit.altered(t, { amount: '4.01' });
      expect(s, await kit.send('the same transactionId with amount 4.01', other), 'conflict', 'answered 409');
      await kit.effect(s, A, '4.00', [[t, 1]]);
      return '409 to the other body, only the first amount applied';
    },
  },
  {
    id: 'concurrent-same-transaction',
    title: '10 concurrent sends of one transaction apply it once',
    group: 'single call',
    contract: '#the-idempotency-rule',
    async run(kit, s) {
      const [A] = kit.accounts;
      await kit.baseline(A);
      const t = kit.tx(A, '6.00');
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, i) => kit.send(`credit 6.00, concurrent send ${i + 1} of 10`, t)),
      );
      const delivered = answers.filter((a) => a.outcome === 'delivered').length;
      const other = answers.filter((a) => a.outcome !== 'delivered' && a.outcome !== 'retry');
      s.check(
        delivered >= 1 && other.length === 0,
        'every send answered 2xx (or transiently 5xx/429, retried by the receiver)',
        answers.map((a) => a.exchange.status ?? a.exchange.error).join(', '),
        'status',
      );
      await kit.effect(s, A, '6.00', [[t, 1]]);
      return 'ten sends at once, one effect';
    },
  },
  {
    id: 'concurrent-transactions-one-account',
    title: '10 concurrent transactions of one account give the right balance',
    group: 'single call',
    contract: '#the-idempotency-rule',
    async run(kit, s) {
      const [A] = kit.accounts;
      await kit.baseline(A);
      const amounts = Array.from({ length: 10 }, (_, i) => `1.${String(i + 1).padStart(2, '0')}`);
      const sent = amounts.map((a) => kit.tx(A, a));
      const answers = await Promise.all(sent.map((t, i) => kit.send(`credit ${amounts[i]} (concurrent)`, t)));
      s.check(
        answers.every((a) => a.outcome === 'delivered'),
        'every credit answered 2xx',
        answers.map((a) => a.exchange.status ?? a.exchange.error).join(', '),
        'status',
      );
      await kit.effect(
        s,
        A,
        sum(amounts),
        sent.map((t): [Sent, 1] => [t, 1]),
      );
      return `ten different credits at once, the balance moved by their sum ${money(sum(amounts))}`;
    },
  },
  {
    id: 'two-accounts-same-moment',
    title: 'Two accounts credited at the same moment each get their own amount',
    group: 'single call',
    contract: '#the-request',
    async run(kit, s) {
      const [A, B] = kit.accounts;
      await kit.baseline(A, B);
      const ta = kit.tx(A, '7.77');
      const tb = kit.tx(B, '8.88');
      const [a, b] = await Promise.all([
        kit.send(`credit 7.77 to ${A}`, ta),
        kit.send(`credit 8.88 to ${B}`, tb),
      ]);
      expect(s, a, 'delivered', `${A} answered 2xx`);
      expect(s, b, 'delivered', `${B} answered 2xx`);
      await kit.effect(s, A, '7.77', [[ta, 1]]);
      await kit.effect(s, B, '8.88', [[tb, 1]]);
      return 'each account moved by its own amount';
    },
  },
  {
    id: 'debit-above-balance',
    title: 'A debit above the balance is applied (negative balance) or refused 402/422 with no effect',
    group: 'single call',
    contract: '#answers-and-what-the-receiver-does',
    async run(kit, s) {
      const [A] = kit.accounts;
      await kit.baseline(A);
      const credit = kit.tx(A, '1.00');
      expect(s, await kit.send('credit 1.00', credit), 'delivered', 'the credit answered 2xx');
      await kit.effect(s, A, '1.00', [[credit, 1]]);
      const balance = kit.balance(A) ?? new Decimal(0);
      const amount = Decimal.max(balance, 0).plus('100.00').toFixed(2);
      const debit = kit.tx(A, amount, 'debit', credit.transaction.couponCode ?? undefined);
      const a = await kit.send(`recalculation_debit ${amount}, above the balance ${money(balance)}`, debit);
      if (a.outcome === 'delivered') {
        kit.debitRule = 'negative';
        await kit.effect(s, A, `-${amount}`, [[debit, 1]]);
        return 'business rule: the wallet lets balances go negative (applied once)';
      }
      s.check(
        a.exchange.status === 402 || a.exchange.status === 422,
        'applied, or refused with 402 or 422 (insufficient funds)',
        seen(a),
        'status',
      );
      if (a.exchange.status === 402 || a.exchange.status === 422) kit.debitRule = 'refuses';
      await kit.effect(s, A, 0, [[debit, 0]]);
      return `business rule: the wallet refuses a debit above the balance (${a.exchange.status}), no effect`;
    },
  },
  {
    id: 'unknown-account',
    title: 'An unknown account is refused definitely',
    group: 'single call',
    contract: '#answers-and-what-the-receiver-does',
    async run(kit, s) {
      if (kit.ownAccounts)
        throw new NotApplicable(
          'the kit named its own accounts (no --accounts), so the wallet opens accounts at their first transaction; give --accounts to run it',
        );
      const [A] = kit.accounts;
      await kit.baseline(A);
      const t = kit.tx(`certify-${kit.runId}-unknown`, '2.00');
      expectRefusal(s, await kit.send('credit 2.00 to an account nobody opened', t), 'unknown account');
      await kit.effect(s, A, 0, [[t, 0]]);
      return 'a definite refusal of an account it does not know, nothing applied';
    },
  },
  {
    id: 'malformed-body',
    title: 'A malformed body (truncated JSON, correctly signed) is refused safely',
    group: 'single call',
    contract: '#answers-and-what-the-receiver-does',
    async run(kit, s) {
      const [A] = kit.accounts;
      await kit.baseline(A);
      const t = kit.tx(A, '2.00');
      const body = t.body.subarray(0, 60);
      expectRefusal(
        s,
        await kit.send('credit 2.00 cut after 60 bytes', t, undefined, body),
        'malformed body',
      );
      await kit.effect(s, A, 0, [[t, 0]]);
      return 'refused with a 4xx, nothing applied';
    },
  },
  {
    id: 'negative-amount',
    title: 'A negative amount is refused, no effect',
    group: 'single call',
    contract: '#the-request',
    async run(kit, s) {
      const [A] = kit.accounts;
      await kit.baseline(A);
      const t = kit.altered(kit.tx(A, '5.00'), { amount: '-5.00' });
      expectRefusal(s, await kit.send('credit of "-5.00"', t), 'negative amount');
      await kit.effect(s, A, 0, [[t, 0]]);
      return 'refused with a 4xx, nothing applied';
    },
  },
  {
    id: 'over-precise-amount',
    title: 'An amount finer than any currency (20 decimals) is refused, never rounded',
    group: 'single call',
    contract: '#the-request',
    async run(kit, s) {
      const [A] = kit.accounts;
      await kit.baseline(A);
      const t = kit.altered(kit.tx(A, '1.00'), { amount: '1.00000000000000000001' });
      expectRefusal(s, await kit.send('credit of "1.00000000000000000001"', t), 'over-precise amount');
      await kit.effect(s, A, 0, [[t, 0]]);
      return 'refused with a 4xx, nothing applied';
    },
  },
  {
    id: 'long-values',
    title: 'Very long values (a 2000-character coupon code) are applied exactly or refused safely',
    group: 'single call',
    contract: '#the-operation-key-in-a-header',
    async run(kit, s) {
      const [A] = kit.accounts;
      await kit.baseline(A);
      const t = kit.tx(A, '0.50', 'credit', kit.coupon('L'.repeat(2000)));
      return appliedOnceOrRefused(kit, s, A, t, 'credit 0.50 with a 2000-character coupon code');
    },
  },
  {
    id: 'non-ascii-values',
    title: 'Non-ASCII values (Unicode, CR LF, %, quotes) are applied exactly or refused safely',
    group: 'single call',
    contract: '#the-operation-key-in-a-header',
    async run(kit, s) {
      const [A] = kit.accounts;
      await kit.baseline(A);
      const t = kit.tx(A, '0.70', 'credit', kit.coupon(' Zürich€ 50% "q"\r\n🎯'));
      return appliedOnceOrRefused(kit, s, A, t, 'credit 0.70 with a Unicode coupon code');
    },
  },
  {
    id: 'bad-signature',
    title: 'A wrong signature is refused 401, no effect',
    group: 'security',
    contract: '#verifying-the-signature',
    async run(kit, s) {
      const [A] = kit.accounts;
      await kit.baseline(A);
      const t = kit.tx(A, '9.00');
      const headers = kit.headers(t.body, t.transaction.transactionId, `${kit.options.secret}-wrong`);
      expectUnauthorized(
        s,
        await kit.send('credit 9.00 signed with another secret', t, headers),
        'wrong signature',
      );
      await kit.effect(s, A, 0, [[t, 0]]);
      return '401, nothing applied';
    },
  },
  {
    id: 'missing-signature',
    title: 'A request without X-Signature is refused 401, no effect',
    group: 'security',
    contract: '#verifying-the-signature',
    async run(kit, s) {
      const [A] = kit.accounts;
      await kit.baseline(A);
      const t = kit.tx(A, '9.00');
      const headers = kit.headers(t.body, t.transaction.transactionId);
      delete headers['x-signature'];
      expectUnauthorized(s, await kit.send('credit 9.00 without X-Signature', t, headers), 'no signature');
      await kit.effect(s, A, 0, [[t, 0]]);
      return '401, nothing applied';
    },
  },
  {
    id: 'body-changed-after-signing',
    title: 'A body changed after signing is refused 401, no effect',
    group: 'security',
    contract: '#verifying-the-signature',
    async run(kit, s) {
      const [A] = kit.accounts;
      await kit.baseline(A);
      const signed = kit.tx(A, '9.00');
      const changed = kit.altered(signed, { amount: '90.00' });
      const headers = kit.headers(signed.body, signed.transaction.transactionId);
      const a = await kit.send('credit signed for 9.00, sent with 90.00', changed, headers);
      expectUnauthorized(s, a, 'changed body');
      // One transactionId: neither the signed nor the changed body may be applied.
      await kit.effect(s, A, 0, [[changed, 0]]);
      return '401, nothing applied';
    },
  },
  {
    id: 'signature-of-another-body',
    title: "Another request's valid signature on a new body is refused 401, no effect",
    group: 'security',
    contract: '#verifying-the-signature',
    async run(kit, s) {
      const [A] = kit.accounts;
      await kit.baseline(A);
      const old = kit.tx(A, '0.20');
      const oldHeaders = kit.headers(old.body, old.transaction.transactionId);
      expect(
        s,
        await kit.send('credit 0.20 (its signature is captured)', old, oldHeaders),
        'delivered',
        'answered 2xx',
      );
      const t = kit.tx(A, '9.00');
      const headers = {
        ...kit.headers(t.body, t.transaction.transactionId),
        'x-signature': oldHeaders['x-signature'],
      };
      expectUnauthorized(
        s,
        await kit.send('credit 9.00 with the captured signature', t, headers),
        'replayed signature',
      );
      await kit.effect(s, A, '0.20', [
        [old, 1],
        [t, 0],
      ]);
      return '401 to the borrowed signature, nothing applied';
    },
  },
  {
    id: 'replayed-request',
    title: 'A request replayed later (same headers and bytes) has no second effect',
    group: 'security',
    contract: '#the-idempotency-rule',
    async run(kit, s) {
      const [A] = kit.accounts;
      await kit.baseline(A);
      const t = kit.tx(A, '2.22');
      const headers = kit.headers(t.body, t.transaction.transactionId);
      expect(
        s,
        await kit.send('credit 2.22 (the request is captured)', t, headers),
        'delivered',
        'answered 2xx',
      );
      const later = [kit.tx(A, '0.30'), kit.tx(A, '0.40')];
      for (const l of later) await kit.send(`credit ${l.transaction.amount} meanwhile`, l);
      const replay = await kit.send('the captured request replayed, X-Request-Id and all', t, headers);
      s.check(
        replay.outcome === 'delivered' || replay.outcome === 'refused',
        'answered 2xx (a repeat) or a definite refusal',
        seen(replay),
        'status',
      );
      await kit.effect(s, A, '2.92', [[t, 1], ...later.map((l): [Sent, 1] => [l, 1])]);
      return 'the replay moved nothing';
    },
  },
  {
    id: 'batch-order',
    title: 'Batch: one result per element, in the request’s order',
    group: 'batch call',
    contract: '#the-batch-call',
    batch: true,
    async run(kit, s) {
      const accounts = kit.batchAccounts(5);
      await kit.baseline(...accounts);
      const items = accounts.map((a, i) => kit.tx(a, `${i + 1}.0${i}`));
      const { outcomes, results } = await kit.sendBatch(`array of ${items.length} credits`, items);
      s.check(
        results?.length === items.length &&
          results.every(
            (r, i) =>
              (r as { transactionId?: unknown } | null)?.transactionId === items[i].transaction.transactionId,
          ),
        'results[i] names the i-th element’s transactionId',
        JSON.stringify(
          results?.map((r) => (r as { transactionId?: unknown } | null)?.transactionId) ?? null,
        ).slice(0, 300),
        'answer',
      );
      s.check(
        outcomes.every((o) => o.outcome === 'delivered'),
        'every element delivered',
        outcomes.map((o) => o.outcome).join(', '),
        'answer',
      );
      for (const [i, a] of accounts.entries())
        await kit.effect(s, a, items[i].transaction.amount, [[items[i], 1]]);
      return 'results in order, each element applied once';
    },
  },
  {
    id: 'batch-partial-results',
    title: 'Batch: partial results (applied, conflict, refused) per element',
    group: 'batch call',
    contract: '#answer',
    batch: true,
    async run(kit, s) {
      const [A, B, C] = kit.batchAccounts(3);
      await kit.baseline(A, B, C);
      const earlier = kit.tx(B, '1.50');
      expect(
        s,
        await kit.send(`credit 1.50 to ${B} alone`, earlier),
        'delivered',
        'the single call answered 2xx',
      );
      const good = kit.tx(A, '2.50');
      const conflict = kit.altered(earlier, { amount: '1.51' });
      const bad = kit.altered(kit.tx(C, '3.00'), { amount: '-3.00' });
      const { outcomes } = await kit.sendBatch('[good credit, conflicting body, negative amount]', [
        good,
        conflict,
        bad,
      ]);
      s.check(
        outcomes.map((o) => o.outcome).join(',') === 'delivered,conflict,refused',
        'results: applied, conflict, refused (in that order)',
        outcomes.map((o) => described(o)).join(', '),
        'answer',
      );
      await kit.effect(s, A, '2.50', [[good, 1]]);
      await kit.effect(s, B, '1.50', [[earlier, 1]]);
      await kit.effect(s, C, 0, [[bad, 0]]);
      return 'each element got its own result; only the good one moved money';
    },
  },
  {
    id: 'batch-repeat-of-single',
    title: 'Batch: a transaction sent alone then inside an array (and the reverse) is a repeat',
    group: 'batch call',
    contract: '#request',
    batch: true,
    async run(kit, s) {
      const [A, B] = kit.batchAccounts(2);
      await kit.baseline(A, B);
      const alone = kit.tx(A, '1.25');
      expect(s, await kit.send('credit 1.25 alone', alone), 'delivered', 'the single call answered 2xx');
      const fresh = kit.tx(B, '2.25');
      const first = await kit.sendBatch('[the same credit, a new credit]', [alone, fresh]);
      s.check(
        first.outcomes.every((o) => o.outcome === 'delivered') &&
          (first.results?.[0] as { status?: unknown } | undefined)?.status === 'duplicate',
        'results: duplicate, applied',
        first.outcomes.map((o) => o.answer ?? described(o)).join(' | '),
        'answer',
      );
      expect(
        s,
        await kit.send('the new credit again, alone', fresh),
        'delivered',
        'its repeat alone answered 2xx',
      );
      await kit.effect(s, A, '1.25', [[alone, 1]]);
      await kit.effect(s, B, '2.25', [[fresh, 1]]);
      return 'the same bytes alone or in an array are one transaction';
    },
  },
  {
    id: 'batch-regrouping',
    title: 'Batch: elements sent again in another array, order and neighbours are repeats',
    group: 'batch call',
    contract: '#request',
    batch: true,
    async run(kit, s) {
      const [A, B, C, D] = kit.batchAccounts(4);
      await kit.baseline(A, B, C, D);
      const [p, q, r] = [kit.tx(A, '0.11'), kit.tx(B, '0.22'), kit.tx(C, '0.33')];
      const one = await kit.sendBatch('[p, q, r]', [p, q, r]);
      const n = kit.tx(D, '0.44');
      const two = await kit.sendBatch('[n, r, p] (regrouped)', [n, r, p]);
      const three = await kit.sendBatch('[q] (alone in an array)', [q]);
      const all = [...one.outcomes, ...two.outcomes, ...three.outcomes];
      s.check(
        all.every((o) => o.outcome === 'delivered'),
        'every element delivered (applied or duplicate)',
        all.map((o) => o.outcome).join(', '),
        'answer',
      );
      await kit.effect(s, A, '0.11', [[p, 1]]);
      await kit.effect(s, B, '0.22', [[q, 1]]);
      await kit.effect(s, C, '0.33', [[r, 1]]);
      await kit.effect(s, D, '0.44', [[n, 1]]);
      return 'regrouped elements applied once each';
    },
  },
  {
    id: 'batch-size',
    title: 'Batch: an array of the configured WALLET_BATCH_SIZE is taken whole',
    group: 'batch call',
    contract: '#the-batch-call',
    batch: true,
    async run(kit, s) {
      const accounts = kit.batchAccounts(kit.options.batchSize);
      await kit.baseline(...accounts);
      const items = accounts.map((a) => kit.tx(a, '0.05'));
      const { outcomes } = await kit.sendBatch(
        `array of ${items.length} credits (--batch-size ${kit.options.batchSize})`,
        items,
      );
      if (items.length < kit.options.batchSize)
        s.warn(
          `an array of ${kit.options.batchSize}`,
          `only ${items.length} accounts were given (one element per account, as the receiver sends)`,
          'answer',
        );
      s.check(
        outcomes.every((o) => o.outcome === 'delivered'),
        `all ${items.length} elements delivered`,
        [...new Set(outcomes.map((o) => described(o)))].join(', '),
        'answer',
      );
      for (const [i, a] of accounts.entries()) await kit.effect(s, a, '0.05', [[items[i], 1]]);
      return `an array of ${items.length} applied whole`;
    },
  },
  {
    id: 'batch-bad-signature',
    title: 'Batch: a wrong signature is a 401 for the whole array, no effect',
    group: 'batch call',
    contract: '#request',
    batch: true,
    async run(kit, s) {
      const [A, B] = kit.batchAccounts(2);
      await kit.baseline(A, B);
      const items = [kit.tx(A, '9.00'), kit.tx(B, '9.00')];
      const body = batchCallBody(items.map((i) => i.body));
      const { exchange } = await kit.sendBatch(
        'array signed with another secret',
        items,
        kit.headers(body, undefined, `${kit.options.secret}-wrong`),
      );
      s.check(exchange.status === 401, 'HTTP 401', `HTTP ${exchange.status ?? exchange.error}`, 'status');
      await kit.effect(s, A, 0, [[items[0], 0]]);
      await kit.effect(s, B, 0, [[items[1], 0]]);
      return '401, nothing applied';
    },
  },
  {
    id: 'reconciliation-export',
    title: 'The reconciliation export lists each applied transaction once, with its fields',
    group: 'reconciliation',
    contract: '#reconciliation',
    async run(kit, s) {
      if (kit.exportProblem !== undefined) {
        if (/HTTP 40[45]\b/.test(kit.exportProblem))
          throw new NotApplicable(`the wallet offers no reconciliation export (${kit.exportProblem})`);
        s.check(false, 'GET /transactions answers 200 {"transactions": [...]}', kit.exportProblem, 'export');
        return '';
      }
      const ids = [...kit.answeredApplied.keys()];
      const listed = await kit.exportCounts(ids);
      const wrong: string[] = [];
      for (const [id, t] of kit.answeredApplied) {
        const l = listed?.get(id) ?? [];
        const x = l[0];
        if (l.length !== 1) wrong.push(`${JSON.stringify(id)} listed ${l.length} times`);
        else if (
          x.direction !== t.direction ||
          x.type !== t.type ||
          x.accountId !== t.accountId ||
          x.currency !== t.currency ||
          !new Decimal(x.amount).eq(t.amount)
        )
          wrong.push(`${JSON.stringify(id)} listed as ${JSON.stringify(x)}`);
      }
      s.check(
        wrong.length === 0,
        `each of the ${ids.length} transactions answered as applied listed exactly once, fields as sent`,
        wrong.length ? wrong.slice(0, 5).join('; ') : 'all listed once, fields equal',
        'export',
      );
      return `${ids.length} applied transactions, each listed once`;
    },
  },
  {
    id: 'latency',
    title: 'p95 of single calls well under the receiver’s WALLET_TIMEOUT_MS',
    group: 'latency',
    contract: '#answers-and-what-the-receiver-does',
    async run(kit, s) {
      const { timeoutMs } = kit.options;
      const values = kit.latencies;
      const p95 = percentile(values, 95);
      const warn = timeoutMs * LATENCY_WARN;
      const fail = timeoutMs * LATENCY_FAIL;
      const shown = `p50 ${percentile(values, 50)} ms, p95 ${p95} ms, max ${Math.max(0, ...values)} ms over ${values.length} single calls`;
      s.check(
        p95 < fail,
        `p95 under ${fail} ms (${LATENCY_FAIL * 100}% of WALLET_TIMEOUT_MS ${timeoutMs})`,
        shown,
        'timing',
      );
      if (p95 >= warn && p95 < fail)
        s.warn(
          `p95 under ${warn} ms (${LATENCY_WARN * 100}% of WALLET_TIMEOUT_MS): warning band`,
          shown,
          'timing',
        );
      return shown;
    },
  },
];
