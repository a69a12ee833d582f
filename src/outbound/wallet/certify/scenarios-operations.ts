import { Decimal } from 'decimal.js';
import { NotApplicable, percentile } from './kit.js';
import { LATENCY_WARN, LATENCY_FAIL, Scenario } from './scenario-checks.js';

/** The reconciliation export and latency (docs/wallet-http-contract.md). */
export const OPERATIONS_SCENARIOS: Scenario[] = [
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
