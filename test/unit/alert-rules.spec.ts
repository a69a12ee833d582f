import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse } from 'yaml';
import { BACKGROUND_METRIC } from '../../src/platform/background/background-governor.js';
import { COUPON_METRIC } from '../../src/core/coupons/coupon-metrics.js';
import { DATABASE_METRIC } from '../../src/platform/database/database-metrics.js';
import { DELIVERY_METRIC } from '../../src/platform/deliveries/delivery-metrics.js';
import { INBOX_METRIC } from '../../src/intake/inbox/inbox.service.js';
import { LEDGER_METRIC } from '../../src/core/ledger/ledger-metrics.js';
import { EVENT_METRIC, WALLET_METRIC } from '../../src/outbound/outbox/outbox-metrics.js';
import { QUARANTINE_METRIC } from '../../src/intake/quarantine/quarantine.service.js';
import { RETENTION_METRIC } from '../../src/operations/retention/retention.job.js';
import { headingAnchors } from '../support/markdown.js';
import { alertGroups, dashboard, opsExpressions, parsePromql } from '../support/promql.js';

// ops/alerts.yml: Prometheus rule-file structure, every settlement_* series it uses is one the
// receiver exports (a renamed metric must not silently disable an alert), every rule links its
// runbook section of docs/operating.md, and ops/alerts.test.yml has a case where each alert fires
// and one where it stays quiet (promtool runs them in CI). ops/grafana: the dashboard's structure
// and its provisioning file. test/e2e/ops-metrics.e2e.spec.ts checks the same expressions against
// a real scrape, labels included.

const groups = alertGroups();
const rules = groups.flatMap((g) => g.rules);

/** Series names a scrape contains: histograms add _bucket, _sum and _count. */
const EXPORTED = new Set(
  [
    ...Object.values(DELIVERY_METRIC),
    ...Object.values(LEDGER_METRIC),
    ...Object.values(COUPON_METRIC),
    ...Object.values(WALLET_METRIC),
    ...Object.values(EVENT_METRIC),
    ...Object.values(BACKGROUND_METRIC),
    ...Object.values(RETENTION_METRIC),
    ...Object.values(INBOX_METRIC),
    ...Object.values(QUARANTINE_METRIC),
    ...Object.values(DATABASE_METRIC),
  ].flatMap((name) =>
    name === DELIVERY_METRIC.duration || name === DELIVERY_METRIC.batchCoupons
      ? [`${name}_bucket`, `${name}_sum`, `${name}_count`]
      : [name],
  ),
);

interface RuleTest {
  name: string;
  interval: string;
  input_series: { series: string; values: string }[];
  alert_rule_test: {
    eval_time: string;
    alertname: string;
    exp_alerts: { exp_labels: Record<string, string>; exp_annotations: Record<string, string> }[];
  }[];
}
const ruleTests = parse(readFileSync(resolve(process.cwd(), 'ops/alerts.test.yml'), 'utf8')) as {
  rule_files: string[];
  tests: RuleTest[];
};

describe('ops/alerts.yml', () => {
  it('is a rule file: groups with a name and rules, each alert with expr, severity and summary', () => {
    const file = parse(readFileSync(resolve(process.cwd(), 'ops/alerts.yml'), 'utf8')) as object;
    expect(Object.keys(file)).toEqual(['groups']);
    expect(groups.length).toBeGreaterThan(0);
    for (const group of groups) {
      expect(typeof group.name).toBe('string');
      expect(group.rules.length).toBeGreaterThan(0);
    }
    for (const rule of rules) {
      expect(
        Object.keys(rule).every((k) => ['alert', 'expr', 'for', 'labels', 'annotations'].includes(k)),
      ).toBe(true);
      expect(rule.alert).toMatch(/^[A-Za-z_][A-Za-z0-9_]*$/);
      expect(typeof rule.expr).toBe('string');
      if (rule.for !== undefined) expect(rule.for).toMatch(/^\d+[smhd]$/);
      expect(['critical', 'warning', 'info']).toContain(rule.labels?.severity);
      expect(typeof rule.annotations?.summary).toBe('string');
    }
    expect(new Set(rules.map((r) => r.alert)).size).toBe(rules.length);
  });

  it('alerts on the duplicate rate, the 503 rate and needs-review growth', () => {
    const exprOf = (name: string) => rules.find((r) => r.alert === name)?.expr ?? '';
    expect(exprOf('SettlementCallbackDuplicateRateHigh')).toContain('outcome="duplicate"');
    expect(exprOf('SettlementCallback503RateHigh')).toContain('outcome="failed"');
    expect(exprOf('SettlementCouponsNeedingReviewGrowing')).toContain('settlement_coupons_needing_review');
  });

  it('alerts on the settlement events: backlog age, parked events, pause, per publisher (docs/events.md)', () => {
    const exprOf = (name: string) => rules.find((r) => r.alert === name)?.expr ?? '';
    expect(exprOf('SettlementEventBacklogGrowing')).toContain(
      'settlement_event_outbox_oldest_pending_age_seconds',
    );
    expect(exprOf('SettlementEventsParked')).toBe('settlement_event_outbox_oldest_parked_age_seconds > 600');
    expect(exprOf('SettlementEventsPastDue')).toBe('settlement_event_outbox_oldest_past_due_seconds > 300');
    expect(exprOf('SettlementEventsPaused')).toContain('settlement_event_outbox_paused');
  });

  it('alerts on the wallet outbox: backlog age, parked rows, conflicts, pause (docs/wallet.md)', () => {
    const exprOf = (name: string) => rules.find((r) => r.alert === name)?.expr ?? '';
    expect(exprOf('SettlementWalletBacklogGrowing')).toContain(
      'settlement_wallet_outbox_oldest_pending_age_seconds',
    );
    expect(exprOf('SettlementWalletRowsParked')).toBe(
      'settlement_wallet_outbox_oldest_parked_age_seconds > 600',
    );
    expect(exprOf('SettlementWalletRowsPastDue')).toBe(
      'settlement_wallet_outbox_oldest_past_due_seconds > 300',
    );
    expect(exprOf('SettlementWalletConflict')).toContain('outcome="conflict"');
    expect(exprOf('SettlementBackgroundHeldBack')).toContain(
      'settlement_background_limit_max{kind="wallet"}',
    );
    expect(exprOf('SettlementWalletPaused')).toContain('settlement_wallet_outbox_paused');
  });

  it('alerts when no replica ran the retention job for 3 hours (docs/retention.md)', () => {
    const rule = rules.find((r) => r.alert === 'SettlementRetentionNotRunning');
    expect(rule?.expr).toContain('settlement_retention_last_run_timestamp_seconds');
  });

  it('alerts on the inbox, the signature failure ratio, and a receiver that stops reporting', () => {
    const exprOf = (name: string) => rules.find((r) => r.alert === name)?.expr ?? '';
    expect(exprOf('SettlementInboxBacklogOld')).toBe('settlement_inbox_oldest_pending_age_seconds > 600');
    expect(exprOf('SettlementCallbackSignatureFailureRatioHigh')).toContain('outcome="unauthorized"');
    expect(exprOf('SettlementReceiverDown')).toBe('up{job="settlement-receiver"} == 0');
    expect(exprOf('SettlementReceiverMetricsAbsent')).toBe(
      'absent(settlement_callback_deliveries_total{job="settlement-receiver"})',
    );
  });

  it("parses with PromQL's grammar and uses only series the receiver exports (up: Prometheus's)", () => {
    for (const rule of rules) {
      const parsed = parsePromql(rule.expr);
      expect({ alert: rule.alert, errors: parsed.errors }).toEqual({ alert: rule.alert, errors: [] });
      for (const { metric } of parsed.selectors)
        expect({ alert: rule.alert, metric, exported: metric === 'up' || EXPORTED.has(metric) }).toEqual({
          alert: rule.alert,
          metric,
          exported: true,
        });
    }
  });

  it('links each rule to its runbook section: a heading of docs/operating.md', () => {
    const headings = headingAnchors(readFileSync(resolve(process.cwd(), 'docs/operating.md'), 'utf8'));
    const links = rules.map((r) => [r.alert, r.annotations?.runbook_url]);
    expect(links).toEqual(rules.map((r) => [r.alert, `docs/operating.md#${r.alert.toLowerCase()}`]));
    expect(rules.filter((r) => !headings.has(r.alert.toLowerCase())).map((r) => r.alert)).toEqual([]);
  });
});

describe('ops/alerts.test.yml (promtool test rules)', () => {
  it('loads ops/alerts.yml and asserts only alerts it defines', () => {
    expect(ruleTests.rule_files).toEqual(['alerts.yml']);
    const names = new Set(rules.map((r) => r.alert));
    for (const t of ruleTests.tests) for (const a of t.alert_rule_test) expect(names).toContain(a.alertname);
  });

  it('has, for every alert, a case where it fires and one where it stays quiet', () => {
    const cases = ruleTests.tests.flatMap((t) => t.alert_rule_test);
    const coverage = rules.map((r) => ({
      alert: r.alert,
      fires: cases.some((c) => c.alertname === r.alert && c.exp_alerts.length > 0),
      quiet: cases.some((c) => c.alertname === r.alert && c.exp_alerts.length === 0),
    }));
    expect(coverage).toEqual(rules.map((r) => ({ alert: r.alert, fires: true, quiet: true })));
  });

  it('starts with a normal day on which every alert stays quiet', () => {
    const normal = ruleTests.tests[0];
    expect(normal.name).toMatch(/^a normal day/);
    expect(
      new Set(normal.alert_rule_test.filter((c) => !c.exp_alerts.length).map((c) => c.alertname)),
    ).toEqual(new Set(rules.map((r) => r.alert)));
  });

  it("feeds only series the receiver exports (up: Prometheus's)", () => {
    const series = ruleTests.tests.flatMap((t) => t.input_series.map((s) => s.series.replace(/\{.*$/, '')));
    expect(series.filter((name) => name !== 'up' && !EXPORTED.has(name))).toEqual([]);
  });
});

describe('ops/grafana: the dashboard and its provisioning file', () => {
  const board = dashboard();
  const panels = board.panels.filter((p) => p.type !== 'row');

  it('asks for its Prometheus data source in a variable, and every panel and target uses it', () => {
    const variables = board.templating.list;
    expect(variables.find((v) => v.name === 'datasource')).toMatchObject({
      type: 'datasource',
      query: 'prometheus',
    });
    expect(board.uid).toBe('settlement-receiver');
    for (const p of panels) {
      expect({ panel: p.title, datasource: p.datasource }).toEqual({
        panel: p.title,
        datasource: { type: 'prometheus', uid: '${datasource}' },
      });
      expect(p.targets?.length).toBeGreaterThan(0);
      for (const t of p.targets ?? []) {
        expect(t.datasource).toEqual({ type: 'prometheus', uid: '${datasource}' });
        expect(t.refId).toMatch(/^[A-Z]$/);
      }
    }
  });

  it('has unique panel ids on a 24-column grid, and the panels the issue asks for', () => {
    const ids = board.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const p of board.panels) expect(p.gridPos.x + p.gridPos.w).toBeLessThanOrEqual(24);
    const exprs = (title: string) =>
      (panels.find((p) => p.title === title)?.targets ?? []).map((t) => t.expr).join('\n');
    expect(exprs('Deliveries by outcome')).toContain('settlement_callback_deliveries_total');
    expect(exprs('Answer latency against the deadline')).toContain(
      'settlement_callback_duration_seconds_bucket',
    );
    expect(exprs('Inbox backlog')).toContain('settlement_inbox_pending');
    expect(exprs('Inbox: oldest pending')).toContain('settlement_inbox_oldest_pending_age_seconds');
    expect(exprs('Outbox by state')).toContain('settlement_event_outbox_past_due');
    expect(exprs('Oldest undelivered per destination')).toContain(
      'max by (publisher) (settlement_event_outbox_oldest_pending_age_seconds',
    );
    expect(exprs('Quarantine')).toContain('settlement_quarantine_not_replayed');
    expect(exprs('Coupons needing review')).toContain('settlement_coupons_needing_review');
    expect(exprs("The governor's limits")).toContain('settlement_background_limit_max');
    expect(exprs('Pool and lock waits')).toContain('settlement_database_lock_waiting');
    expect(exprs('Process memory')).toContain('process_resident_memory_bytes');
  });

  it("every target parses with PromQL's grammar; its settlement_* series are exported", () => {
    for (const { where, expr } of opsExpressions().filter((e) => e.where.startsWith('panel'))) {
      const parsed = parsePromql(expr);
      expect({ where, errors: parsed.errors }).toEqual({ where, errors: [] });
      const unknown = parsed.selectors
        .map((s) => s.metric)
        .filter((m) => m.startsWith('settlement_') && !EXPORTED.has(m));
      expect({ where, unknown }).toEqual({ where, unknown: [] });
    }
  });

  it('the provisioning file is a Grafana file provider (apiVersion 1)', () => {
    const file = parse(
      readFileSync(
        resolve(process.cwd(), 'ops/grafana/provisioning/dashboards/settlement-receiver.yml'),
        'utf8',
      ),
    ) as { apiVersion: number; providers: { name: string; type: string; options: { path: string } }[] };
    expect(file.apiVersion).toBe(1);
    expect(file.providers).toEqual([
      expect.objectContaining({
        name: 'settlement-receiver',
        type: 'file',
        options: expect.objectContaining({ path: expect.any(String) }),
      }),
    ]);
  });
});
