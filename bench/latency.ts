/**
 * Latency benchmark: 200 sequential signed deliveries of a 100-coupon batch (3 events per coupon)
 * against a running receiver, every one moving money (WIN, then recalculation, alternately);
 * prints median, p95, p99 and max in ms.
 *   npm run bench:latency -- --url http://127.0.0.1:3000 --secret S --ops-key K [--batches 200]
 */
import { createHmac, randomInt } from 'node:crypto';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    url: { type: 'string', default: 'http://127.0.0.1:3000' },
    secret: { type: 'string', default: process.env.SPORTAPI_WEBHOOK_SECRET ?? 'change-me-webhook-secret' },
    'ops-key': { type: 'string', default: process.env.OPS_API_KEY ?? 'change-me-ops-key' },
    batches: { type: 'string', default: '200' },
    coupons: { type: 'string', default: '100' },
    events: { type: 'string', default: '3' },
  },
});
const url = values.url as string;
const run = String(randomInt(10_000_000, 99_999_999));
const nBatches = Number(values.batches);
const nCoupons = Number(values.coupons);
const nEvents = Number(values.events);
const ops = { authorization: `Bearer ${values['ops-key']}`, 'content-type': 'application/json' };

async function must(res: Promise<Response>, what: string): Promise<Response> {
  const r = await res;
  if (r.status >= 300) throw new Error(`${what}: HTTP ${r.status} ${await r.text()}`);
  return r;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

async function main(): Promise<void> {
  const account = `bench-${run}`;
  const codes = Array.from({ length: nCoupons }, (_, i) => `B${run}${String(i).padStart(4, '0')}`);
  await must(
    fetch(`${url}/accounts/${account}/adjustments`, {
      method: 'POST',
      headers: { ...ops, 'idempotency-key': `bench-${run}` },
      body: JSON.stringify({ amount: '100000.00', currency: 'EUR', reason: 'benchmark' }),
    }),
    'deposit',
  );
  for (const code of codes) {
    await must(
      fetch(`${url}/coupons`, {
        method: 'POST',
        headers: ops,
        body: JSON.stringify({ coupon_code: code, accountId: account, stake: '1.00', currency: 'EUR' }),
      }),
      `register ${code}`,
    );
  }
  const times: number[] = [];
  for (let b = 0; b < nBatches; b++) {
    const win = b % 2 === 0;
    const body = JSON.stringify({
      batchId: `bench-${run}-${b}`,
      couponCount: nCoupons,
      coupons: codes.map((code) => ({
        coupon_code: code,
        status: win ? 2 : 15,
        realWin: win ? '50.00' : null,
        events: Array.from({ length: nEvents }, (_, e) => ({ uuid: `${code}-${e}`, status: win ? 2 : 15 })),
      })),
    });
    const signature = `sha256=${createHmac('sha256', values.secret as string)
      .update(body)
      .digest('hex')}`;
    const t0 = performance.now();
    const res = await fetch(`${url}/sportapi/callback`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-signature': signature },
      body,
    });
    const text = await res.text();
    times.push(performance.now() - t0);
    if (res.status !== 200) throw new Error(`batch ${b}: HTTP ${res.status} ${text}`);
  }
  const sorted = [...times].sort((a, b) => a - b);
  const f = (n: number) => n.toFixed(1);
  console.log(
    `${nBatches} sequential deliveries of ${nCoupons} coupons x ${nEvents} events: ` +
      `median ${f(percentile(sorted, 50))} ms, p95 ${f(percentile(sorted, 95))} ms, ` +
      `p99 ${f(percentile(sorted, 99))} ms, max ${f(sorted[sorted.length - 1])} ms`,
  );
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
