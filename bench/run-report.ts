/** The tables `npm run bench` prints: per-run figures, rows per batch, balances. */
import { BalanceTotals, TableCounts } from './setup.js';
import { RunStats } from './run-load.js';
import { SideName } from './run-sides.js';
import { lockShare } from './run-waits.js';

export const mb = (n: number) => `${n.toFixed(0)} MB`;
export const ms = (n: number) => n.toFixed(1);

export function printTable(rows: RunStats[]): void {
  const head = [
    'side',
    'conc',
    'batches/s',
    'coupons/s',
    'p50 ms',
    'p95 ms',
    'p99 ms',
    'errors',
    'dup',
    'peak RSS',
    'CPU ms/batch node+PG',
    'WAL kB/batch',
    'lock waits',
  ];
  const lines = rows.map((r) => [
    r.side,
    String(r.connections),
    r.batchesPerSecond.toFixed(1),
    r.couponsPerSecond.toFixed(0),
    ms(r.p50),
    ms(r.p95),
    ms(r.p99),
    String(r.errors),
    `${r.ok ? Math.round((100 * r.duplicates) / r.ok) : 0}%`,
    mb(r.peakRssMb),
    Number.isFinite(r.serverCpuMs) ? `${r.serverCpuMs.toFixed(1)} + ${r.dbCpuMs.toFixed(1)}` : 'n/a',
    r.walKb.toFixed(1),
    lockShare(r.waits),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const fmt = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  console.log(fmt(head));
  for (const l of lines) console.log(fmt(l));
}

export function perBatch(c: TableCounts): string {
  const b = Math.max(1, c.batches);
  return (
    `${c.batches} batches, ${c.snapshots} snapshots, ${c.operations} operations ` +
    `(${(c.operations / b).toFixed(1)} per batch), ${c.entries} ledger entries, ` +
    (c.outboxRows ? `${c.outboxRows} wallet outbox rows, ` : '') +
    `players net ${c.playersNet}, house net ${c.houseNet}`
  );
}

/** The balance check of a side: players + house entries = 0, and the receiver's house rows = entries. */
export function describeBalances(side: SideName, t: BalanceTotals): string {
  const zero = /^-?0(\.0+)?$/.test(t.net);
  const houseRows =
    side === 'baseline'
      ? `house from its entries ${t.houseEntries} (house rows not maintained)`
      : `house accounts (${t.houseAccounts}) ${t.houseBalance}, their entries ${t.houseEntries}` +
        (t.houseBalance === t.houseEntries ? '' : ' (DIFFER)');
  return `players ${t.players}, ${houseRows}, players + house entries ${t.net}${zero ? '' : ' (NOT ZERO)'}`;
}
