import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startWallet } from '../../sim/wallet.js';
import { CertifyReport, certifyCommand, certifyWallet } from '../../src/outbound/wallet/certify/certify.js';
import type { CertifyOptions } from '../../src/outbound/wallet/certify/kit.js';
import { SCENARIOS } from '../../src/outbound/wallet/certify/scenarios.js';
import { Broken, startBrokenWallet } from '../support/broken-wallets.js';

// Issue 42 (docs/wallet.md, "Certifying a wallet"): `npm run wallet:certify` passes every
// scenario against the stand-in wallet, and catches each deliberately broken wallet (the
// stand-in behind a proxy breaking one rule: test/support/broken-wallets.ts) by exactly the
// scenarios of that rule, no unrelated one. The kit runs in-process, as the CLI runs it.

const SECRET = 'certify-secret-42';
const ACCOUNTS = Array.from({ length: 8 }, (_, i) => `cert-player-${i + 1}`);
const ALL = SCENARIOS.map((s) => s.id);
const BATCH = SCENARIOS.filter((s) => s.batch).map((s) => s.id);

const options = (url: string, more: Partial<CertifyOptions> = {}): CertifyOptions => ({
  url,
  secret: SECRET,
  batch: true,
  accounts: ACCOUNTS,
  currency: 'EUR',
  timeoutMs: 5000,
  batchSize: 8,
  ...more,
});
const having = (r: CertifyReport, status: string) =>
  r.scenarios.filter((s) => s.status === status).map((s) => s.id);

describe('wallet:certify (issue 42)', () => {
  it('has at least 20 scenarios, each id once', () => {
    expect(ALL.length).toBeGreaterThanOrEqual(20);
    expect(new Set(ALL).size).toBe(ALL.length);
  });

  it('passes every scenario against the stand-in wallet and touches only the given accounts', async () => {
    const wallet = await startWallet({ port: 0, secret: SECRET, accounts: ACCOUNTS });
    try {
      const r = await certifyWallet(options(wallet.url));
      expect(having(r, 'failed')).toEqual([]);
      expect(having(r, 'passed')).toEqual(ALL);
      expect(r.verdict).toBe('passed');
      expect(r.debitAboveBalance).toBe('refused (402/422): the receiver parks such a debit for an operator');
      expect(r.observation).toEqual({ balanceInAnswers: true, export: 'GET /transactions read' });
      // Only the given accounts hold money; every applied transaction is the kit's.
      expect(wallet.balances().every((b) => ACCOUNTS.includes(b.accountId))).toBe(true);
      expect(wallet.transactions().every((t) => t.transactionId.startsWith(`CERT${r.runId}-`))).toBe(true);
      // Each scenario says what it sent, what came back and why.
      const credit = r.scenarios.find((s) => s.id === 'credit-applied-once')!;
      expect(credit.exchanges[1]).toMatchObject({ label: 'credit 12.50', status: 200, reading: 'delivered' });
      expect(credit.observations).toEqual(['status', 'answer', 'balance', 'export']);
    } finally {
      await wallet.close();
    }
  });

  it('as the CLI: own accounts, no --batch, negative balances: incomplete (exit 3), written as JSON and HTML', async () => {
    const wallet = await startWallet({ port: 0, secret: SECRET, allowNegative: true });
    const dir = mkdtempSync(join(tmpdir(), 'certify-'));
    let out = '';
    try {
      const { code, report } = await certifyCommand(
        ['--url', wallet.url, '--secret', SECRET, '--report', join(dir, 'r')],
        {},
        (t) => (out += t),
      );
      expect(code).toBe(3);
      expect(report!.verdict).toBe('incomplete');
      expect(having(report!, 'skipped')).toEqual(['unknown-account', ...BATCH]);
      expect(having(report!, 'failed')).toEqual([]);
      expect(report!.debitAboveBalance).toBe('applied: the wallet lets balances go negative');
      expect(out.split('\n')[0]).toBe(
        `wallet:certify ${report!.runId}: test transactions to ${wallet.url}/transactions`,
      );
      expect(out).toContain('It never touches other accounts or real players’ money');
      expect(out).toContain('SKIP batch-order — ');
      expect(out).toContain(
        'VERDICT: INCOMPLETE (none failed; skipped, so not certified: unknown-account, batch-order',
      );
      expect(wallet.balances().every((b) => b.accountId.startsWith(`certify-${report!.runId}-`))).toBe(true);
      const json = JSON.parse(readFileSync(join(dir, 'r.json'), 'utf8')) as CertifyReport;
      expect(json.scenarios.map((s) => [s.id, s.status])).toEqual(
        report!.scenarios.map((s) => [s.id, s.status]),
      );
      expect(readFileSync(join(dir, 'r.json'), 'utf8')).not.toContain(SECRET);
      const html = readFileSync(join(dir, 'r.html'), 'utf8');
      expect(html).toContain('<div class="verdict incomplete">INCOMPLETE: 21 passed, 0 failed, 7 skipped');
      expect(html).not.toMatch(/<script|<link|src="http/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await wallet.close();
    }
  });

  it('stops with exit code 2, sending nothing, when the wallet does not answer', async () => {
    const wallet = await startWallet({ port: 0, secret: SECRET });
    const { url } = wallet;
    await wallet.close();
    const r = await certifyCommand(['--url', url, '--secret', SECRET]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`^the wallet at ${url} does not answer: ECONNREFUSED`));
  });

  it('refuses bad arguments with exit code 2', async () => {
    const r = await certifyCommand(['--url', 'wallet', '--accounts', 'only-one']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /^--url must be the wallet base URL.*\n--secret is required.*\n--accounts needs at least two/,
    );
  });

  it('skips, never passes, what a wallet without balances in its answers and without an export cannot show', async () => {
    const w = await startBrokenWallet('opaque', { secret: SECRET, accounts: ACCOUNTS });
    try {
      const r = await certifyWallet(options(w.url));
      expect(having(r, 'failed')).toEqual([]);
      expect(having(r, 'passed')).toEqual(['latency']);
      expect(r.scenarios.find((s) => s.id === 'credit-applied-once')!.why).toBe(
        'the wallet answers no balance and offers no reconciliation export: no effect can be observed',
      );
      expect(r.verdict).toBe('incomplete');
    } finally {
      await w.close();
    }
  });

  const caught: [Broken, string[]][] = [
    [
      'applies-repeat-twice',
      ['repeat-same-bytes', 'concurrent-same-transaction', 'non-ascii-values', 'replayed-request'],
    ],
    ['answers-200-to-changed-body', ['conflict-other-amount']],
    [
      'ignores-signature',
      [
        'bad-signature',
        'missing-signature',
        'body-changed-after-signing',
        'signature-of-another-body',
        'batch-bad-signature',
      ],
    ],
    [
      'loses-batch-order',
      ['batch-order', 'batch-partial-results', 'batch-repeat-of-single', 'batch-regrouping', 'batch-size'],
    ],
    [
      'refuses-with-500',
      [
        'debit-above-balance',
        'unknown-account',
        'malformed-body',
        'negative-amount',
        'over-precise-amount',
        'long-values',
      ],
    ],
    ['slow', ['latency']],
  ];
  it.each(caught)('catches the broken wallet %s by exactly its scenarios', async (broken, failing) => {
    // slow: every eighth request waits 700 ms, under the 1200 ms timeout, above its 600 ms p95 limit.
    const w = await startBrokenWallet(broken, { secret: SECRET, accounts: ACCOUNTS, slowMs: 700 });
    try {
      const r = await certifyWallet(options(w.url, broken === 'slow' ? { timeoutMs: 1200 } : {}));
      expect(having(r, 'failed')).toEqual(failing);
      expect(having(r, 'skipped')).toEqual([]);
      expect(r.verdict).toBe('failed');
    } finally {
      await w.close();
    }
  });
});
