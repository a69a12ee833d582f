import { Decimal } from 'decimal.js';
import type { OutboxDelivery } from '../../outbox/outbox.types.js';
import { Answered, Kit, ScenarioResult, ScenarioRun, Sent } from './kit.js';

/**
 * A scenario of `npm run wallet:certify` (docs/wallet.md, "Certifying a wallet"): a rule of
 * docs/wallet-http-contract.md checked against the wallet: what it sends, what the receiver
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

/** What the wallet answered and what the receiver reads of it (a check's detail). */
export function seen(a: Answered): string {
  const x = a.exchange;
  const answer = x.answer === undefined ? '' : ` ${x.answer.slice(0, 160)}`;
  return `${x.status === undefined ? x.error : `HTTP ${x.status}`}${answer} → the receiver reads: ${a.outcome}`;
}

/** Checks that the receiver reads `outcome` from the answer `a`. */
export function expect(
  s: ScenarioRun,
  a: Answered,
  outcome: OutboxDelivery['outcome'],
  what: string,
): boolean {
  return s.check(a.outcome === outcome, what, seen(a), 'status');
}

/** A definite refusal: a 4xx the receiver parks (not 401/403, not 409, not 5xx). */
export function expectRefusal(s: ScenarioRun, a: Answered, what: string): boolean {
  return expect(s, a, 'refused', `${what}: a definite refusal (4xx such as 400, 404, 422), never a 5xx`);
}

/** Checks that the answer is a 401. */
export function expectUnauthorized(s: ScenarioRun, a: Answered, what: string): boolean {
  return s.check(a.exchange.status === 401, `${what}: 401 before the body is looked at`, seen(a), 'status');
}

/** The exact sum of decimal amounts. */
export const sum = (amounts: string[]) => amounts.reduce((t, a) => t.plus(a), new Decimal(0));

/** Either outcome the contract allows for a value a wallet may take or refuse; effects to match. */
export async function appliedOnceOrRefused(kit: Kit, s: ScenarioRun, A: string, sent: Sent, label: string) {
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

/** One credit a scenario sends: its label in the report, the transaction, other headers or bytes. */
export interface Attempt {
  label: string;
  sent: Sent;
  /** Instead of the receiver's own signed headers. */
  headers?: Record<string, string>;
  /** Instead of the transaction's own bytes. */
  body?: Buffer;
}

/**
 * A scenario in which the wallet must refuse the one credit `attempt` makes on the kit's first
 * account, and apply nothing: with a 401 before it reads the body (`unauthorized`), or with a
 * definite 4xx (`refused`, see `expectRefusal`). `what` names the fault in the report's checks.
 */
export function refusalScenario(
  meta: Omit<Scenario, 'run'>,
  refusal: 'unauthorized' | 'refused',
  what: string,
  attempt: (kit: Kit, A: string) => Attempt,
): Scenario {
  return {
    ...meta,
    async run(kit, s) {
      const [A] = await kit.baselined(1);
      const { label, sent, headers, body } = attempt(kit, A);
      const a = await kit.send(label, sent, headers, body);
      if (refusal === 'unauthorized') expectUnauthorized(s, a, what);
      else expectRefusal(s, a, what);
      await kit.effect(s, A, 0, [[sent, 0]]);
      return refusal === 'unauthorized' ? '401, nothing applied' : 'refused with a 4xx, nothing applied';
    },
  };
}
