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
