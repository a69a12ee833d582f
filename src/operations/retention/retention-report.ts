import type { RetentionClass } from './retention.config.js';

/** One line of a report: a partition or a set of rows removed, or kept and why. */
export interface ReportItem {
  target: string;
  action: 'drop partition' | 'delete' | 'null body' | 'keep';
  rows: number;
  bytes: number;
  /** For a partition: its bounds. */
  partition?: { table: string; name: string; from: string | null; to: string };
  /** Why kept (`keep` only). */
  why?: string;
  /** true: `rows` is PostgreSQL's estimate, not a count. */
  estimated?: boolean;
}

/** One data class's part of a report. */
export interface ClassReport {
  dataClass: RetentionClass;
  /** Days kept; null: forever. */
  keepDays: number | null;
  /** Data older than this goes; null: nothing does. */
  cutoff: string | null;
  remove: ReportItem[];
  keep: ReportItem[];
  /** Rows and bytes removed (in a report: that would be), summed over `remove`. */
  removeRows: number;
  removeBytes: number;
  /** Bytes the class holds now (partitions' sizes, the bounded columns' sizes). */
  totalBytes: number;
  /** The oldest time the class still holds (after a run: what is left), or null when empty. */
  oldest: string | null;
}

/** What the policy removes now and keeps, per class (`npm run retention`). */
export interface RetentionReport {
  at: string;
  applied: boolean;
  classes: ClassReport[];
}

/** Tables no class removes from (docs/retention.md, "Data classes"). */
export const KEPT_FOREVER = [
  'financial_operations',
  'ledger_entries',
  'accounts',
  'account_adjustments',
  'coupons',
  'bets',
  'coupon_resolutions',
  'operator_actions',
  'quarantined_bodies',
];

/** The report as the CLI and the job's log print it: one block per class, then what is kept forever. */
export function formatRetentionReport(report: RetentionReport): string {
  const lines = [
    `retention ${report.applied ? 'applied' : 'report (nothing removed; -- --apply removes it)'} at ${report.at}`,
  ];
  for (const c of report.classes) {
    lines.push(
      `${c.dataClass}: ${c.keepDays === null ? 'kept forever' : `keep ${c.keepDays} days (before ${c.cutoff} goes)`}; ` +
        `${report.applied ? 'removed' : 'would remove'} ${c.removeRows} rows, ${c.removeBytes} bytes; ` +
        `holds ${c.totalBytes} bytes, oldest ${c.oldest ?? 'none'}`,
    );
    for (const i of c.remove) lines.push(`  - ${i.action} ${i.target}: ${i.rows} rows, ${i.bytes} bytes`);
    for (const i of c.keep)
      lines.push(
        `  = keep ${i.target}: ${i.estimated ? '~' : ''}${i.rows} rows, ${i.bytes} bytes (${i.why})`,
      );
  }
  lines.push(`kept forever: ${KEPT_FOREVER.join(', ')} (no class; docs/retention.md)`);
  return lines.join('\n');
}
