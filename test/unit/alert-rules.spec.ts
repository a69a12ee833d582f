import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse } from 'yaml';
import { BACKGROUND_METRIC } from '../../src/background/background-governor.js';
import { COUPON_METRIC } from '../../src/coupons/coupon-metrics.js';
import { DELIVERY_METRIC } from '../../src/deliveries/delivery-metrics.js';
import { LEDGER_METRIC } from '../../src/ledger/ledger-metrics.js';
import { EVENT_METRIC, WALLET_METRIC } from '../../src/outbox/outbox-metrics.js';
import { RETENTION_METRIC } from '../../src/retention/retention.job.js';

// ops/alerts.yml: Prometheus rule-file structure, and every settlement_* series it uses is one the
// receiver exports (a renamed metric must not silently disable an alert).

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

const file = parse(readFileSync(resolve(process.cwd(), 'ops/alerts.yml'), 'utf8')) as {
  groups: { name: string; rules: Rule[] }[];
};
const rules = file.groups.flatMap((g) => g.rules);

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
  ].flatMap((name) =>
    name === DELIVERY_METRIC.duration || name === DELIVERY_METRIC.batchCoupons
      ? [`${name}_bucket`, `${name}_sum`, `${name}_count`]
      : [name],
  ),
);

describe('ops/alerts.yml', () => {
  it('is a rule file: groups with a name and rules, each alert with expr, severity and summary', () => {
    expect(Object.keys(file)).toEqual(['groups']);
    expect(file.groups.length).toBeGreaterThan(0);
    for (const group of file.groups) {
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
    expect(exprOf('SettlementEventsParked')).toContain('settlement_event_outbox_parked');
    expect(exprOf('SettlementEventsPaused')).toContain('settlement_event_outbox_paused');
  });

  it('alerts on the wallet outbox: backlog age, parked rows, conflicts, pause (docs/wallet.md)', () => {
    const exprOf = (name: string) => rules.find((r) => r.alert === name)?.expr ?? '';
    expect(exprOf('SettlementWalletBacklogGrowing')).toContain(
      'settlement_wallet_outbox_oldest_pending_age_seconds',
    );
    expect(exprOf('SettlementWalletRowsParked')).toContain('settlement_wallet_outbox_parked');
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

  it('uses only series the receiver exports, with balanced brackets', () => {
    for (const rule of rules) {
      for (const name of rule.expr.match(/\bsettlement_[a-z_]+/g) ?? []) expect(EXPORTED).toContain(name);
      for (const [open, close] of ['()', '[]', '{}']) {
        expect(rule.expr.split(open).length).toBe(rule.expr.split(close).length);
      }
    }
  });
});
