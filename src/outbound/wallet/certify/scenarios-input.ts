import { appliedOnceOrRefused, refusalScenario, Scenario } from './scenario-checks.js';

/** Bodies and values: malformed, out of range, long and non-ASCII (docs/wallet-http-contract.md). */
export const INPUT_SCENARIOS: Scenario[] = [
  refusalScenario(
    {
      id: 'malformed-body',
      title: 'A malformed body (truncated JSON, correctly signed) is refused safely',
      group: 'single call',
      contract: '#answers-and-what-the-receiver-does',
    },
    'refused',
    'malformed body',
    (kit, A) => {
      const t = kit.tx(A, '2.00');
      return { label: 'credit 2.00 cut after 60 bytes', sent: t, body: t.body.subarray(0, 60) };
    },
  ),
  refusalScenario(
    {
      id: 'negative-amount',
      title: 'A negative amount is refused, no effect',
      group: 'single call',
      contract: '#the-request',
    },
    'refused',
    'negative amount',
    (kit, A) => ({ label: 'credit of "-5.00"', sent: kit.altered(kit.tx(A, '5.00'), { amount: '-5.00' }) }),
  ),
  refusalScenario(
    {
      id: 'over-precise-amount',
      title: 'An amount finer than any currency (20 decimals) is refused, never rounded',
      group: 'single call',
      contract: '#the-request',
    },
    'refused',
    'over-precise amount',
    (kit, A) => ({
      label: 'credit of "1.00000000000000000001"',
      sent: kit.altered(kit.tx(A, '1.00'), { amount: '1.00000000000000000001' }),
    }),
  ),
  {
    id: 'long-values',
    title: 'Very long values (a 2000-character coupon code) are applied exactly or refused safely',
    group: 'single call',
    contract: '#the-operation-key-in-a-header',
    async run(kit, s) {
      const [A] = await kit.baselined(1);
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
      const [A] = await kit.baselined(1);
      const t = kit.tx(A, '0.70', 'credit', kit.coupon(' Zürich€ 50% "q"\r\n🎯'));
      return appliedOnceOrRefused(kit, s, A, t, 'credit 0.70 with a Unicode coupon code');
    },
  },
];
