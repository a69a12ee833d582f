import { Decimal } from 'decimal.js';
import { money, NotApplicable, Sent, Unobservable } from './kit.js';
import { seen, expect, expectRefusal, sum, Scenario } from './scenario-checks.js';

/** Money: credits and debits applied once, repeats and conflicts, balances, refusals (docs/wallet-http-contract.md). */
export const MONEY_SCENARIOS: Scenario[] = [
  {
    id: 'credit-applied-once',
    title: 'A credit is applied once',
    group: 'single call',
    contract: '#the-request',
    async run(kit, s) {
      const [A] = await kit.baselined(1);
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
      const [A] = await kit.baselined(1);
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
      const [A] = await kit.baselined(1);
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
      const [A] = await kit.baselined(1);
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
      const [A] = await kit.baselined(1);
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
      const [A] = await kit.baselined(1);
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
      const [A] = await kit.baselined(1);
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
      const [A, B] = await kit.baselined(2);
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
      const [A] = await kit.baselined(1);
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
      const [A] = await kit.baselined(1);
      const t = kit.tx(`certify-${kit.runId}-unknown`, '2.00');
      expectRefusal(s, await kit.send('credit 2.00 to an account nobody opened', t), 'unknown account');
      await kit.effect(s, A, 0, [[t, 0]]);
      return 'a definite refusal of an account it does not know, nothing applied';
    },
  },
];
