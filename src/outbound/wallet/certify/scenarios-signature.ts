import { Sent } from './kit.js';
import { seen, expect, expectUnauthorized, refusalScenario, Scenario } from './scenario-checks.js';

/** Signatures and replays (docs/wallet-http-contract.md). */
export const SIGNATURE_SCENARIOS: Scenario[] = [
  refusalScenario(
    {
      id: 'bad-signature',
      title: 'A wrong signature is refused 401, no effect',
      group: 'security',
      contract: '#verifying-the-signature',
    },
    'unauthorized',
    'wrong signature',
    (kit, A) => {
      const t = kit.tx(A, '9.00');
      const headers = kit.headers(t.body, t.transaction.transactionId, `${kit.options.secret}-wrong`);
      return { label: 'credit 9.00 signed with another secret', sent: t, headers };
    },
  ),
  refusalScenario(
    {
      id: 'missing-signature',
      title: 'A request without X-Signature is refused 401, no effect',
      group: 'security',
      contract: '#verifying-the-signature',
    },
    'unauthorized',
    'no signature',
    (kit, A) => {
      const t = kit.tx(A, '9.00');
      const headers = kit.headers(t.body, t.transaction.transactionId);
      delete headers['x-signature'];
      return { label: 'credit 9.00 without X-Signature', sent: t, headers };
    },
  ),
  refusalScenario(
    {
      id: 'body-changed-after-signing',
      title: 'A body changed after signing is refused 401, no effect',
      group: 'security',
      contract: '#verifying-the-signature',
    },
    'unauthorized',
    'changed body',
    (kit, A) => {
      const signed = kit.tx(A, '9.00');
      const changed = kit.altered(signed, { amount: '90.00' });
      const headers = kit.headers(signed.body, signed.transaction.transactionId);
      // One transactionId: neither the signed nor the changed body may be applied.
      return { label: 'credit signed for 9.00, sent with 90.00', sent: changed, headers };
    },
  ),
  {
    id: 'signature-of-another-body',
    title: "Another request's valid signature on a new body is refused 401, no effect",
    group: 'security',
    contract: '#verifying-the-signature',
    async run(kit, s) {
      const [A] = await kit.baselined(1);
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
      const [A] = await kit.baselined(1);
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
];
