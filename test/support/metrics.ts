import { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { OPS_KEY } from './test-app.js';

// Reading the Prometheus metrics (CONTRACT §8) as an operator's scraper does.

/** The text exposition of `GET /metrics`, read with the test bearer key; asserts the 200. */
export async function scrape(app: INestApplication): Promise<string> {
  const res = await request(app.getHttpServer()).get('/metrics').set('authorization', `Bearer ${OPS_KEY}`);
  expect(res.status).toBe(200);
  return res.text;
}

/** Value of the sample `series` (`name{labels}` exactly as exposed) in a scrape, or undefined when absent. */
export function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/**
 * How much `series` grew from the scrape `before` to the scrape `after`. A sample absent from a
 * scrape counts as `absent`: 0 by default (a series not yet exposed), NaN where absence is a failure.
 */
export function increase(before: string, after: string, series: string, absent = 0): number {
  return (sample(after, series) ?? absent) - (sample(before, series) ?? absent);
}

/** What a scrape exports of one metric: its label names and each label's values. */
export interface ExportedMetric {
  labels: Set<string>;
  values: Map<string, Set<string>>;
  series: number;
}

/**
 * Every sample name of a scrape (a histogram's `_bucket`, `_sum`, `_count` each) with its label
 * names and values, from the text exposition format (label values unescaped).
 */
export function exportedSeries(text: string): Map<string, ExportedMetric> {
  const out = new Map<string, ExportedMetric>();
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+$/.exec(line);
    if (!m) continue;
    const metric = out.get(m[1]) ?? { labels: new Set(), values: new Map(), series: 0 };
    out.set(m[1], metric);
    metric.series++;
    for (const [, name, raw] of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
      metric.labels.add(name);
      const values = metric.values.get(name) ?? new Set<string>();
      metric.values.set(name, values);
      values.add(JSON.parse(`"${raw}"`) as string);
    }
  }
  return out;
}
