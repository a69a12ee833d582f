import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  CertifyOptions,
  Kit,
  NotApplicable,
  Observation,
  OBSERVATIONS,
  percentile,
  ScenarioResult,
  ScenarioRun,
  Unobservable,
} from './kit.js';
import { LATENCY_FAIL, LATENCY_WARN, Scenario, SCENARIOS } from './scenarios.js';

/** The whole run, as printed and written to JSON and HTML. */
export interface CertifyReport {
  tool: 'wallet:certify';
  wallet: string;
  startedAt: string;
  finishedAt: string;
  runId: string;
  accounts: string[];
  /** `given`: --accounts; `own`: named by the kit (a wallet that opens accounts at first use). */
  accountsFrom: 'given' | 'own';
  currency: string;
  timeoutMs: number;
  batch: boolean;
  /** What the wallet offers to observe effects with. */
  observation: { balanceInAnswers: boolean; export: string };
  /** The business rule seen for a debit above the balance, when seen. */
  debitAboveBalance: string;
  latency: { p50: number; p95: number; max: number; calls: number; warnMs: number; failMs: number };
  summary: { passed: number; failed: number; skipped: number; warnings: number };
  /** `passed`: every scenario passed; `incomplete`: none failed, some skipped; `failed`: some failed. */
  verdict: 'passed' | 'incomplete' | 'failed';
  scenarios: ScenarioResult[];
}

/** The notice printed before anything is sent. */
export function safetyNotice(kit: Kit): string {
  const from = kit.ownAccounts
    ? 'named by the kit for this run (no --accounts: the wallet must open accounts at their first transaction)'
    : 'given with --accounts';
  return [
    `wallet:certify ${kit.runId}: test transactions to ${kit.options.url}/transactions`,
    `It touches only these accounts, ${from}: ${kit.accounts.join(', ')}`,
    'It never touches other accounts or real players’ money: give test accounts of a test or staging wallet.',
    'Money it moves on them stays there (credits, debits and 0.01 probe credits of this run, coupon codes CERT…).',
    '',
  ].join('\n');
}

/** Runs one scenario: passed when every check holds, skipped when it cannot apply or be observed. */
async function runScenario(kit: Kit, scenario: Scenario): Promise<ScenarioResult> {
  const s = new ScenarioRun();
  const base = { id: scenario.id, title: scenario.title, group: scenario.group, contract: scenario.contract };
  const done = (status: ScenarioResult['status'], why: string): ScenarioResult => ({
    ...base,
    status,
    why,
    observations: [...new Set(s.checks.map((c) => c.via))],
    warnings: s.warnings,
    checks: s.checks,
    exchanges: s.exchanges,
  });
  if (scenario.batch && !kit.options.batch)
    return done('skipped', 'not asked for: --batch not given (the wallet does not offer the batch call)');
  kit.begin(s);
  try {
    const why = await scenario.run(kit, s);
    const failed = s.checks.filter((c) => !c.ok);
    if (failed.length)
      return done('failed', failed.map((c) => `expected ${c.what}; saw ${c.seen}`).join(' | '));
    return done('passed', why);
  } catch (err) {
    // A check that failed before the effect turned out unobservable still fails the scenario.
    const failed = s.checks.filter((c) => !c.ok);
    if (err instanceof Unobservable && failed.length)
      return done(
        'failed',
        `${failed.map((c) => `expected ${c.what}; saw ${c.seen}`).join(' | ')} (${err.message})`,
      );
    if (err instanceof NotApplicable || err instanceof Unobservable) return done('skipped', err.message);
    s.check(false, 'the scenario runs to its end', (err as Error).message, 'status');
    return done('failed', `error: ${(err as Error).message}`);
  } finally {
    kit.begin(undefined);
  }
}

/**
 * Certifies the wallet at `options.url` (docs/wallet.md, "Certifying a wallet"): runs every
 * scenario in order (`only`: these ids), one at a time. `out` receives the safety notice first.
 */
export async function certifyWallet(
  options: CertifyOptions,
  out: (text: string) => void = () => undefined,
  only?: string[],
): Promise<CertifyReport> {
  const kit = new Kit(options);
  out(`${safetyNotice(kit)}\n`);
  const startedAt = new Date().toISOString();
  const scenarios: ScenarioResult[] = [];
  try {
    await kit.start();
    for (const scenario of SCENARIOS)
      if (!only || only.includes(scenario.id)) scenarios.push(await runScenario(kit, scenario));
  } finally {
    await kit.close();
  }
  const count = (st: ScenarioResult['status']) => scenarios.filter((x) => x.status === st).length;
  const summary = {
    passed: count('passed'),
    failed: count('failed'),
    skipped: count('skipped'),
    warnings: scenarios.reduce((n, x) => n + x.warnings.length, 0),
  };
  const l = kit.latencies;
  return {
    tool: 'wallet:certify',
    wallet: options.url,
    startedAt,
    finishedAt: new Date().toISOString(),
    runId: kit.runId,
    accounts: kit.accounts,
    accountsFrom: kit.ownAccounts ? 'own' : 'given',
    currency: options.currency,
    timeoutMs: options.timeoutMs,
    batch: options.batch,
    observation: {
      balanceInAnswers: kit.balanceInAnswers === true,
      export: kit.exportProblem === undefined ? 'GET /transactions read' : `not used: ${kit.exportProblem}`,
    },
    debitAboveBalance:
      kit.debitRule === 'negative'
        ? 'applied: the wallet lets balances go negative'
        : kit.debitRule === 'refuses'
          ? 'refused (402/422): the receiver parks such a debit for an operator'
          : 'not established',
    latency: {
      p50: percentile(l, 50),
      p95: percentile(l, 95),
      max: Math.max(0, ...l),
      calls: l.length,
      warnMs: options.timeoutMs * LATENCY_WARN,
      failMs: options.timeoutMs * LATENCY_FAIL,
    },
    summary,
    verdict: summary.failed ? 'failed' : summary.skipped ? 'incomplete' : 'passed',
    scenarios,
  };
}

const ids = (r: CertifyReport, status: ScenarioResult['status']) =>
  r.scenarios
    .filter((x) => x.status === status)
    .map((x) => x.id)
    .join(', ');

/** Exit code of a verdict: 0 passed, 1 failed, 3 incomplete (2 is a usage error). */
export const EXIT_CODE: Record<CertifyReport['verdict'], number> = { passed: 0, failed: 1, incomplete: 3 };

const MARK: Record<ScenarioResult['status'], string> = { passed: 'PASS', failed: 'FAIL', skipped: 'SKIP' };

/** The printed report: the setting, one block per scenario (checks, the first exchanges), the verdict. */
export function formatReport(r: CertifyReport, detail = 3): string {
  const lines = [
    `Wallet certification of ${r.wallet} (run ${r.runId}, ${r.startedAt})`,
    `accounts (${r.accountsFrom}): ${r.accounts.join(', ')}; currency ${r.currency}; WALLET_TIMEOUT_MS ${r.timeoutMs}; batch call ${r.batch ? 'tested' : 'not tested'}`,
    `effects observed through: balance in answers ${r.observation.balanceInAnswers ? 'yes' : 'no'}; export ${r.observation.export}`,
    `debit above the balance: ${r.debitAboveBalance}`,
    '',
  ];
  for (const x of r.scenarios) {
    lines.push(`${MARK[x.status]} ${x.id} — ${x.title}`);
    if (x.status === 'failed')
      for (const c of x.checks.filter((k) => !k.ok))
        lines.push(`     ✘ expected ${c.what}`, `       saw (${c.via}): ${c.seen.slice(0, 300)}`);
    else lines.push(`     ${x.status === 'passed' ? 'why' : 'skipped'}: ${x.why}`);
    if (x.observations.length) lines.push(`     observed via: ${x.observations.join(', ')}`);
    for (const w of x.warnings) lines.push(`     WARNING: ${w}`);
    if (x.status === 'failed') {
      for (const e of x.exchanges.filter((e) => !e.label.startsWith('probe')).slice(0, detail)) {
        lines.push(`     sent: ${e.label}: POST /transactions ${e.request.body.slice(0, 140)}`);
        lines.push(
          `     got:  ${e.status === undefined ? e.error : `HTTP ${e.status}`} ${(e.answer ?? '').slice(0, 140)} (${e.ms} ms) → ${e.reading.slice(0, 160)}`,
        );
      }
    }
  }
  const s = r.summary;
  lines.push(
    '',
    `latency: p50 ${r.latency.p50} ms, p95 ${r.latency.p95} ms, max ${r.latency.max} ms over ${r.latency.calls} single calls (warn ≥ ${r.latency.warnMs} ms, fail ≥ ${r.latency.failMs} ms)`,
    `${r.scenarios.length} scenarios: ${s.passed} passed, ${s.failed} failed, ${s.skipped} skipped, ${s.warnings} warning(s)`,
    r.verdict === 'passed'
      ? 'VERDICT: PASSED (every scenario passed)'
      : r.verdict === 'incomplete'
        ? `VERDICT: INCOMPLETE (none failed; skipped, so not certified: ${ids(r, 'skipped')})`
        : `VERDICT: FAILED (${ids(r, 'failed')})`,
  );
  return `${lines.join('\n')}\n`;
}

/** The summary table's `why`: a failure's first failed check, the rest in its details. */
function shortWhy(x: ScenarioResult): string {
  const failed = x.checks.filter((c) => !c.ok);
  if (x.status !== 'failed' || !failed.length) return x.why;
  const more = failed.length > 1 ? ` (+${failed.length - 1} more failed check(s))` : '';
  return `expected ${failed[0].what}; saw ${failed[0].seen.slice(0, 160)}${more}`;
}

function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const CONTRACT_DOC = 'docs/wallet-http-contract.md';

/** The report as one self-contained HTML page (no script, no external resource). */
export function htmlReport(r: CertifyReport): string {
  const s = r.summary;
  const badge = (st: string) =>
    `<span class="b ${st}">${esc(MARK[st as ScenarioResult['status']] ?? st)}</span>`;
  const rows = r.scenarios
    .map(
      (x) =>
        `<tr class="${x.status}"><td>${badge(x.status)}</td><td class="id"><a href="#${esc(x.id)}"><code>${esc(x.id)}</code></a></td><td>${esc(x.title)}</td><td>${esc(shortWhy(x))}${x.warnings.map((w) => `<div class="w">warning: ${esc(w)}</div>`).join('')}</td><td>${esc(x.observations.join(', '))}</td></tr>`,
    )
    .join('\n');
  const details = r.scenarios
    .map((x) => {
      const checks = x.checks
        .map(
          (c) =>
            `<tr><td class="${c.ok ? (c.warning ? 'warn' : 'ok') : 'bad'}">${c.ok ? (c.warning ? '⚠' : '✔') : '✘'}</td><td>${esc(c.what)}</td><td><code>${esc(c.seen)}</code></td><td>${esc(c.via)}</td></tr>`,
        )
        .join('');
      const exchanges = x.exchanges
        .map(
          (e, i) =>
            `<details${x.status === 'failed' && i < 3 ? ' open' : ''}><summary>${esc(e.label)} — ${e.status === undefined ? esc(e.error ?? '') : `HTTP ${e.status}`}, ${e.ms} ms → ${esc(e.reading.slice(0, 200))}</summary><pre>${esc(
              `POST ${e.request.path}\n${Object.entries(e.request.headers)
                .map(([k, v]) => `${k}: ${v}`)
                .join('\n')}\n\n${e.request.body}`,
            )}</pre><pre>${esc(`${e.status === undefined ? e.error : `HTTP ${e.status}`}\n\n${e.answer ?? ''}`)}</pre></details>`,
        )
        .join('\n');
      return `<section id="${esc(x.id)}" class="${x.status}"><h3>${badge(x.status)} <code>${esc(x.id)}</code> ${esc(x.title)}</h3>
<p>${esc(x.status === 'failed' ? `${x.checks.filter((c) => !c.ok).length} check(s) failed:` : x.why)}</p><p class="m">contract: <code>${CONTRACT_DOC}${esc(x.contract)}</code>; group: ${esc(x.group)}</p>
${checks ? `<table class="c"><tr><th></th><th>expected</th><th>seen</th><th>via</th></tr>${checks}</table>` : ''}
${exchanges ? `<h4>Requests (${x.exchanges.length})</h4>${exchanges}` : ''}</section>`;
    })
    .join('\n');
  const obs = (Object.entries(OBSERVATIONS) as [Observation, string][])
    .map(
      ([k, v]) =>
        `<tr><td><code>${k}</code></td><td>${esc(v)}</td><td>${esc(
          r.scenarios
            .filter((x) => x.observations.includes(k))
            .map((x) => x.id)
            .join(', ') || '—',
        )}</td></tr>`,
    )
    .join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Wallet certification ${esc(r.runId)}: ${r.verdict.toUpperCase()}</title>
<style>
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1150px;color:#1d2330;padding:0 16px;overflow-wrap:anywhere}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde}h3{font-size:15px;margin:0 0 6px}h4{margin:10px 0 4px;font-size:13px}
table{border-collapse:collapse;width:100%;margin:6px 0}td,th{border-bottom:1px solid #e5e7ef;padding:5px 7px;text-align:left;vertical-align:top}th{background:#f4f5f9;font-weight:600}
code{font:12px ui-monospace,Menlo,Consolas,monospace;word-break:break-all}pre{background:#f6f7fa;border:1px solid #e4e6ee;padding:8px;white-space:pre-wrap;word-break:break-all;font:12px ui-monospace,Menlo,monospace;margin:4px 0}
.b{display:inline-block;min-width:38px;text-align:center;border-radius:4px;padding:1px 6px;font-weight:700;font-size:12px;color:#fff}.b.passed{background:#1e8e3e}.b.failed{background:#c5221f}.b.skipped{background:#80868b}
.verdict{font-size:18px;font-weight:700;padding:10px 14px;border-radius:6px;margin:12px 0}.verdict.passed{background:#e6f4ea;color:#137333}.verdict.failed{background:#fce8e6;color:#a50e0e}.verdict.incomplete{background:#fef7e0;color:#8a5300}
section{border:1px solid #e4e6ee;border-radius:6px;padding:12px 14px;margin:12px 0}section.failed{border-color:#f3b6b2;background:#fffafa}
.id code{white-space:nowrap;word-break:normal}table.s{table-layout:fixed}table.s td:first-child{padding-right:10px}table.c td:first-child{width:18px}td.ok{color:#1e8e3e}td.bad{color:#c5221f;font-weight:700}td.warn{color:#b06000}table.o code{white-space:nowrap;word-break:normal}table.c td:last-child{width:64px;overflow-wrap:normal}.m{color:#5f6368;font-size:12px;margin:2px 0}.w{color:#b06000;font-size:12px}summary{cursor:pointer;font-size:13px}dl{display:grid;grid-template-columns:220px 1fr;gap:3px 12px;margin:8px 0}dt{color:#5f6368}dd{margin:0}
</style></head><body>
<h1>Wallet certification — ${esc(r.wallet)}</h1>
<p class="m">npm run wallet:certify, run ${esc(r.runId)}, ${esc(r.startedAt)} to ${esc(r.finishedAt)}. The contract: ${CONTRACT_DOC}.</p>
<div class="verdict ${r.verdict}">${r.verdict.toUpperCase()}: ${s.passed} passed, ${s.failed} failed, ${s.skipped} skipped, ${s.warnings} warning(s) of ${r.scenarios.length} scenarios</div>
${s.skipped ? `<p>Skipped scenarios are not certified: ${esc(ids(r, 'skipped'))}.</p>` : ''}
<dl>
<dt>Accounts (${r.accountsFrom === 'given' ? 'given with --accounts' : 'named by the kit'})</dt><dd><code>${esc(r.accounts.join(', '))}</code> — no other account was touched</dd>
<dt>Currency</dt><dd>${esc(r.currency)}</dd>
<dt>WALLET_TIMEOUT_MS</dt><dd>${r.timeoutMs} ms</dd>
<dt>Batch call</dt><dd>${r.batch ? 'tested' : 'not tested (no --batch)'}</dd>
<dt>Balance in answers</dt><dd>${r.observation.balanceInAnswers ? 'yes' : 'no'}</dd>
<dt>Reconciliation export</dt><dd>${esc(r.observation.export)}</dd>
<dt>Debit above the balance</dt><dd>${esc(r.debitAboveBalance)}</dd>
<dt>Latency of single calls</dt><dd>p50 ${r.latency.p50} ms, p95 ${r.latency.p95} ms, max ${r.latency.max} ms over ${r.latency.calls} calls (warning from ${r.latency.warnMs} ms, failure from ${r.latency.failMs} ms)</dd>
</dl>
<h2>Scenarios</h2>
<table class="s"><colgroup><col style="width:52px"><col style="width:255px"><col style="width:28%"><col><col style="width:120px"></colgroup><tr><th></th><th>id</th><th>scenario</th><th>why</th><th>observed via</th></tr>
${rows}</table>
<h2>How effects were observed</h2>
<table class="o s"><colgroup><col style="width:90px"><col style="width:32%"><col></colgroup><tr><th>via</th><th>what</th><th>scenarios</th></tr>${obs}</table>
<h2>Details</h2>
${details}
</body></html>
`;
}

export const USAGE = `usage: npm run wallet:certify -- --url URL --secret SECRET [--batch] [--accounts a,b,…]
       [--currency EUR] [--timeout-ms 5000] [--batch-size 16] [--report wallet-certification]
       [--only id,id]
Sends test transactions to URL/transactions and checks each rule of docs/wallet-http-contract.md.
Exit code 0: every scenario passed; 1: some failed; 3: none failed but some were skipped (not
certified: no --batch, no export, ...); 2: a usage error, or the wallet does not answer at all.
`;

/**
 * `npm run wallet:certify -- …`: runs the kit, prints the report and writes it as
 * `<report>.json` and `<report>.html`. Exit code {@link EXIT_CODE}: 0 every scenario passed, 1
 * one failed, 3 none failed but some were skipped; 2 a usage error or a wallet that does not
 * answer at all (nothing is sent then).
 */
export async function certifyCommand(
  argv: string[],
  env: NodeJS.ProcessEnv = {},
  write: (text: string) => void = () => undefined,
): Promise<{ code: number; report?: CertifyReport; stderr: string }> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        url: { type: 'string' },
        secret: { type: 'string' },
        batch: { type: 'boolean', default: false },
        accounts: { type: 'string' },
        currency: { type: 'string', default: 'EUR' },
        'timeout-ms': { type: 'string' },
        'batch-size': { type: 'string', default: '16' },
        report: { type: 'string', default: 'wallet-certification' },
        only: { type: 'string' },
        help: { type: 'boolean', default: false },
      },
    }));
  } catch (err) {
    return { code: 2, stderr: `${(err as Error).message}\n${USAGE}` };
  }
  if (values.help) {
    write(USAGE);
    return { code: 0, stderr: '' };
  }
  const url = (values.url ?? env.WALLET_URL ?? '').replace(/\/+$/, '');
  const secret = values.secret ?? env.WALLET_SECRET ?? '';
  const timeoutMs = Number(values['timeout-ms'] ?? env.WALLET_TIMEOUT_MS ?? 5000);
  const batchSize = Number(values['batch-size']);
  const accounts = values.accounts?.split(',').filter((a) => a !== '');
  const problems = [
    !/^https?:\/\/[^/]+/.test(url) && '--url must be the wallet base URL, e.g. https://wallet.test:8443',
    !secret && '--secret is required (the WALLET_SECRET shared with the wallet)',
    !(Number.isInteger(timeoutMs) && timeoutMs >= 100) && '--timeout-ms must be an integer >= 100',
    !(Number.isInteger(batchSize) && batchSize >= 2 && batchSize <= 256) && '--batch-size must be 2..256',
    accounts && accounts.length < 2 && '--accounts needs at least two test accounts',
    accounts && new Set(accounts).size !== accounts.length && '--accounts lists an account twice',
    values.only
      ?.split(',')
      .filter((id) => !SCENARIOS.some((x) => x.id === id))
      .map((id) => `--only: no scenario ${id}`)
      .join('\n'),
  ].filter((p): p is string => typeof p === 'string' && p !== '');
  if (problems.length) return { code: 2, stderr: `${problems.join('\n')}\n${USAGE}` };
  let report: CertifyReport;
  try {
    report = await certifyWallet(
      { url, secret, batch: values.batch, accounts, currency: values.currency, timeoutMs, batchSize },
      write,
      values.only?.split(','),
    );
  } catch (err) {
    return { code: 2, stderr: `${(err as Error).message}\n` };
  }
  write(formatReport(report));
  const base = resolve(values.report);
  mkdirSync(dirname(base), { recursive: true });
  writeFileSync(`${base}.json`, `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(`${base}.html`, htmlReport(report));
  write(`report written to ${base}.json and ${base}.html\n`);
  return { code: EXIT_CODE[report.verdict], report, stderr: '' };
}
