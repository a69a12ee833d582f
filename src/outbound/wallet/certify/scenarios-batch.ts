import { batchCallBody } from '../connectors/http-wallet.connector.js';
import { described } from './kit.js';
import { expect, Scenario } from './scenario-checks.js';

/** The batch call (docs/wallet-http-contract.md). */
export const BATCH_SCENARIOS: Scenario[] = [
  {
    id: 'batch-order',
    title: 'Batch: one result per element, in the request’s order',
    group: 'batch call',
    contract: '#the-batch-call',
    batch: true,
    async run(kit, s) {
      const accounts = await kit.baselined(5);
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
      const [A, B, C] = await kit.baselined(3);
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
      const [A, B] = await kit.baselined(2);
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
      const [A, B, C, D] = await kit.baselined(4);
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
      const accounts = await kit.baselined(kit.options.batchSize);
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
      const [A, B] = await kit.baselined(2);
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
];
