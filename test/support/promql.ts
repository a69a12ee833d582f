import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parser } from '@prometheus-io/lezer-promql';
import { parse } from 'yaml';

// The PromQL of ops/ (alert rules, the Grafana dashboard), parsed with Prometheus's own grammar
// (@prometheus-io/lezer-promql, the parser of Prometheus's web UI), for the tests that check it
// against what the receiver exports.

/** A vector selector: its metric name and the labels it matches on. */
export interface Selector {
  metric: string;
  labels: string[];
}

/** What an expression reads: its selectors, the labels it groups by, and its syntax errors. */
export interface ParsedPromql {
  selectors: Selector[];
  grouping: string[];
  /** Text around each syntax error (empty: the expression parses). */
  errors: string[];
}

/** Grafana's variables in an expression, replaced by values of the same syntax (ranges, regexes). */
export function withoutGrafanaVariables(expr: string): string {
  return expr.replace(/\$__(?:rate_)?interval|\$__range/g, '5m').replace(/\$\{?\w+\}?/g, 'x');
}

/** Parses `expr` (Grafana variables allowed) and collects its selectors and grouping labels. */
export function parsePromql(expr: string): ParsedPromql {
  const text = withoutGrafanaVariables(expr);
  const tree = parser.parse(text);
  const out: ParsedPromql = { selectors: [], grouping: [], errors: [] };
  const of = (from: number, to: number) => text.slice(from, to);
  tree.iterate({
    enter: (node) => {
      if (node.type.isError) out.errors.push(of(Math.max(0, node.from - 20), node.to + 20));
      if (node.name === 'VectorSelector') {
        const metric = node.node.getChild('Identifier');
        const labels = node.node
          .getChild('LabelMatchers')
          ?.getChildren('UnquotedLabelMatcher')
          .map((m) => of(m.getChild('LabelName')!.from, m.getChild('LabelName')!.to));
        out.selectors.push({ metric: metric ? of(metric.from, metric.to) : '', labels: labels ?? [] });
      }
      if (node.name === 'GroupingLabels')
        for (const l of node.node.getChildren('LabelName')) out.grouping.push(of(l.from, l.to));
    },
  });
  return out;
}

/** An alerting rule of ops/alerts.yml. */
export interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** The groups of ops/alerts.yml. */
export function alertGroups(): { name: string; rules: AlertRule[] }[] {
  return (parse(readFileSync(resolve(process.cwd(), 'ops/alerts.yml'), 'utf8')) as { groups: never[] })
    .groups;
}

/** A panel of the Grafana dashboard (rows carry no targets). */
export interface DashboardPanel {
  id: number;
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  gridPos: { h: number; w: number; x: number; y: number };
  targets?: {
    refId: string;
    expr: string;
    legendFormat?: string;
    datasource?: { type: string; uid: string };
  }[];
}

/** ops/grafana/settlement-receiver.json, parsed. */
export function dashboard(): {
  uid: string;
  title: string;
  panels: DashboardPanel[];
  templating: { list: { name: string; type: string; query: unknown }[] };
} {
  return JSON.parse(readFileSync(resolve(process.cwd(), 'ops/grafana/settlement-receiver.json'), 'utf8'));
}

/** Every PromQL expression of ops/: each alert's and each dashboard target's, with where it is. */
export function opsExpressions(): { where: string; expr: string; labelsUsed: string[] }[] {
  const alerts = alertGroups()
    .flatMap((g) => g.rules)
    .map((r) => ({
      where: `alert ${r.alert}`,
      expr: r.expr,
      // $labels.x in the annotations: labels the alert's series must carry.
      labelsUsed: [
        ...Object.values(r.annotations ?? {})
          .join(' ')
          .matchAll(/\$labels\.(\w+)/g),
      ].map((m) => m[1]),
    }));
  const panels = dashboard().panels.flatMap((p) =>
    (p.targets ?? []).map((t) => ({
      where: `panel "${p.title}" ${t.refId}`,
      expr: t.expr,
      labelsUsed: [...(t.legendFormat ?? '').matchAll(/\{\{\s*(\w+)\s*\}\}/g)].map((m) => m[1]),
    })),
  );
  return [...alerts, ...panels];
}
