/**
 * The sender's way of loading the receiver (docs/benchmark.md, "Open loop"): SportAPI sends on its
 * own schedule, not when it is answered. {@link openLoop} sends at a fixed rate whatever the
 * answers take and measures each answer from its *scheduled* send time, so a receiver (or a bench
 * event loop) that falls behind shows in the latency instead of slowing the load down
 * (coordinated omission). {@link closedLoop} is the usual concurrency-bound load, for the
 * capacity the rates are fractions of.
 */
import { Pool } from 'undici';
import type { Delivery } from './load.js';
import { percentile, sleep } from './processes.js';

/** What one load measured. Latencies in ms, ascending. */
export interface LoadResult {
  /** Offered deliveries per second (NaN for a closed loop). */
  rate: number;
  seconds: number;
  sent: number;
  /** Answers by HTTP status (`error` for a transport error). */
  answers: Record<string, number>;
  /** 200 answers per second (closed loop: the capacity). */
  okPerSecond: number;
  latencies: number[];
  p50: number;
  p99: number;
  max: number;
  /** Sends that left more than 10 ms after their scheduled time (the bench itself behind). */
  lateSends: number;
  /** The slowest answer of each second of the schedule (index: second since the start), ms. */
  worstBySecond: number[];
}

/** A connection pool to the receiver: keep-alive, one request at a time per connection, no cap. */
export function receiverPool(origin: string): Pool {
  return new Pool(origin, {
    connections: null,
    pipelining: 1,
    keepAliveTimeout: 30_000,
    headersTimeout: 120_000,
    bodyTimeout: 120_000,
  });
}

/** POSTs one signed delivery; its HTTP status, or `error`. Never rejects. */
async function send(pool: Pool, path: string, d: Delivery): Promise<string> {
  try {
    const res = await pool.request({
      method: 'POST',
      path,
      headers: { 'content-type': 'application/json', 'x-signature': d.signature },
      body: d.body,
    });
    await res.body.dump();
    return String(res.statusCode);
  } catch {
    return 'error';
  }
}

function result(
  rate: number,
  seconds: number,
  answers: Record<string, number>,
  latencies: number[],
  late = 0,
  worstBySecond: number[] = [],
) {
  latencies.sort((a, b) => a - b);
  const sent = Object.values(answers).reduce((a, b) => a + b, 0);
  return {
    rate,
    seconds,
    sent,
    answers,
    okPerSecond: (answers['200'] ?? 0) / seconds,
    latencies,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    max: latencies.length ? latencies[latencies.length - 1] : NaN,
    lateSends: late,
    worstBySecond,
  } satisfies LoadResult;
}

/**
 * Sends `deliveries` (at least `rate × seconds` of them) at `rate` per second on a fixed schedule,
 * each whatever the earlier ones are doing, and waits for every answer (however long it takes).
 * Latency: from the delivery's scheduled send time to its answer. `onAnswer` gets each answer's
 * scheduled send time (`performance.now()` clock) and latency, both in ms.
 */
export async function openLoop(
  pool: Pool,
  path: string,
  deliveries: Delivery[],
  rate: number,
  seconds: number,
  onAnswer?: (scheduledAt: number, latencyMs: number) => void,
): Promise<LoadResult> {
  const n = Math.round(rate * seconds);
  if (deliveries.length < n) throw new Error(`openLoop: ${deliveries.length} deliveries for ${n} sends`);
  const answers: Record<string, number> = {};
  const latencies: number[] = [];
  const worst: number[] = Array.from({ length: Math.ceil(seconds) }, () => 0);
  const inFlight: Promise<void>[] = [];
  const interval = 1000 / rate;
  const start = performance.now() + 20;
  let late = 0;
  for (let i = 0; i < n; i++) {
    const at = start + i * interval;
    const wait = at - performance.now();
    if (wait > 1) await sleep(wait);
    else if (wait < -10) late++;
    inFlight.push(
      send(pool, path, deliveries[i]).then((status) => {
        answers[status] = (answers[status] ?? 0) + 1;
        const latency = performance.now() - at;
        latencies.push(latency);
        onAnswer?.(at, latency);
        const second = Math.floor((i * interval) / 1000);
        worst[second] = Math.max(worst[second] ?? 0, latency);
      }),
    );
  }
  await Promise.all(inFlight);
  return result(rate, seconds, answers, latencies, late, worst);
}

/** `connections` senders back to back for `seconds`, each taking the next delivery of `next`. */
export async function closedLoop(
  pool: Pool,
  path: string,
  next: () => Delivery,
  connections: number,
  seconds: number,
): Promise<LoadResult> {
  const answers: Record<string, number> = {};
  const latencies: number[] = [];
  const start = performance.now();
  const until = start + seconds * 1000;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < until) {
        const t = performance.now();
        const status = await send(pool, path, next());
        answers[status] = (answers[status] ?? 0) + 1;
        latencies.push(performance.now() - t);
      }
    }),
  );
  return result(NaN, (performance.now() - start) / 1000, answers, latencies);
}
