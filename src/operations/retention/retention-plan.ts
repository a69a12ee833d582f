import type { SqlQueryable } from '../../platform/database/sql-queryable.js';
import { DAY_MS, RETENTION_CLASS_NAMES } from './retention.config.js';
import type { RetentionClass, RetentionConfig } from './retention.config.js';
import { ident, listPartitions } from './retention-partitions.js';
import type { PartitionInfo } from './retention-partitions.js';
import type { ClassReport, ReportItem, RetentionReport } from './retention-report.js';
import { RETENTION_TARGETS } from './retention-targets.js';
import type { BoundedTarget, PartitionedTarget } from './retention-targets.js';

/** The cutoff of a class at `now`: data older goes; null: kept forever. */
export function cutoffOf(config: RetentionConfig, dataClass: RetentionClass, now: Date): Date | null {
  const keep = config.keepMs[dataClass];
  return keep === null ? null : new Date(now.getTime() - keep);
}

/** One partition's plan: expiring (with exact rows and protected rows) or kept. */
export interface PartitionPlan {
  target: PartitionedTarget;
  partition: PartitionInfo;
  expiring: boolean;
  rows: number;
  protectedRows: number;
}

/**
 * What the retention policy finds over one database session: the plan of each partition (expiring
 * or kept, its rows and protected rows counted), each bounded target's rows past its cutoff, and
 * the report built from them. The engine (retention-engine.ts) plans with it before and after an
 * apply.
 */
export class RetentionPlanner {
  constructor(
    private readonly db: SqlQueryable,
    private readonly config: RetentionConfig,
  ) {}

  /** The partitions of every partitioned target with their plan at `now`. */
  async planPartitions(now: Date): Promise<PartitionPlan[]> {
    const plans: PartitionPlan[] = [];
    for (const target of RETENTION_TARGETS) {
      if (target.kind !== 'partitions') continue;
      const cutoff = cutoffOf(this.config, target.dataClass, now);
      for (const partition of await listPartitions(this.db, target.table)) {
        const expiring = cutoff !== null && partition.to <= cutoff && !partition.detachPending;
        let rows = partition.estimatedRows;
        let protectedRows = 0;
        if (expiring) {
          rows = await this.count(`SELECT count(*) FROM ${ident(partition.name)}`);
          if (target.protectedSql)
            protectedRows = await this.count(target.protectedSql.replace('$P', ident(partition.name)));
        }
        plans.push({ target, partition, expiring, rows, protectedRows });
      }
    }
    return plans;
  }

  private async count(sql: string, values: unknown[] = []): Promise<number> {
    const { rows } = await this.db.query<{ count: string }>(sql, values);
    return Number(rows[0].count);
  }

  /** Builds the report from the partition plans (and, after an apply, what was removed). */
  async build(
    now: Date,
    plans: PartitionPlan[],
    applied: boolean,
    removed: Map<string, { rows: number; bytes: number }>,
    before?: PartitionPlan[],
  ): Promise<RetentionReport> {
    const dropping = (before ?? plans)
      .filter((p) => p.expiring && p.protectedRows === 0)
      .map((p) => p.partition.name);
    const classes: ClassReport[] = [];
    for (const dataClass of RETENTION_CLASS_NAMES) {
      const cutoff = cutoffOf(this.config, dataClass, now);
      const keep = this.config.keepMs[dataClass];
      const report: ClassReport = {
        dataClass,
        keepDays: keep === null ? null : Math.round((keep / DAY_MS) * 100) / 100,
        cutoff: cutoff?.toISOString() ?? null,
        remove: [],
        keep: [],
        removeRows: 0,
        removeBytes: 0,
        totalBytes: 0,
        oldest: null,
      };
      for (const target of RETENTION_TARGETS.filter((t) => t.dataClass === dataClass)) {
        if (target.kind === 'partitions') {
          const mine = plans.filter((p) => p.target === target);
          if (applied)
            for (const p of (before ?? []).filter(
              (b) => b.target === target && removed.has(b.partition.name),
            ))
              report.remove.push(partitionItem(p, 'drop partition', removed.get(p.partition.name)!.rows));
          let keptRows = 0;
          let keptBytes = 0;
          let keptParts = 0;
          let keptEstimated = false;
          for (const p of mine) {
            report.totalBytes += p.partition.bytes;
            if (!applied && p.expiring && p.protectedRows === 0) {
              report.remove.push(partitionItem(p, 'drop partition', p.rows));
            } else if (p.expiring && p.protectedRows > 0) {
              report.keep.push({
                ...partitionItem(p, 'keep', p.rows),
                why: `holds ${p.protectedRows} protected rows: ${p.target.protectedWhy}`,
              });
            } else if (p.partition.detachPending) {
              report.keep.push({
                ...partitionItem(p, 'keep', p.rows),
                why: 'detach pending: finished by the next apply',
              });
            } else {
              keptParts++;
              keptRows += await this.keptRows(p);
              keptEstimated ||= p.partition.estimatedRows > 0;
              keptBytes += p.partition.bytes;
            }
          }
          if (keptParts)
            report.keep.push({
              target: target.table,
              action: 'keep',
              rows: keptRows,
              bytes: keptBytes,
              estimated: keptEstimated,
              why:
                cutoff === null
                  ? `${keptParts} partitions: kept forever (${RETENTION_CLASS_VARIABLE(dataClass)}=off)`
                  : `${keptParts} partitions within the window (newer than ${cutoff.toISOString()}) or ahead`,
            });
          const oldest = await this.oldestOfPartitions(mine);
          if (oldest && (!report.oldest || oldest < report.oldest)) report.oldest = oldest;
        } else {
          const sums = await this.rowSums(target, cutoff, dropping);
          report.totalBytes += sums.totalBytes;
          if (applied) {
            const done = removed.get(target.name) ?? { rows: 0, bytes: 0 };
            if (done.rows) report.remove.push({ target: target.name, action: target.action, ...done });
          } else if (sums.rows) {
            report.remove.push({
              target: target.name,
              action: target.action,
              rows: sums.rows,
              bytes: sums.bytes,
            });
          }
          if (sums.protectedRows)
            report.keep.push({
              target: target.name,
              action: 'keep',
              rows: sums.protectedRows,
              bytes: 0,
              why: `protected: ${target.protectedWhy}`,
            });
          if (sums.oldest && (!report.oldest || sums.oldest < report.oldest)) report.oldest = sums.oldest;
        }
      }
      for (const item of report.remove) {
        report.removeRows += item.rows;
        report.removeBytes += item.bytes;
      }
      classes.push(report);
    }
    return { at: now.toISOString(), applied, classes };
  }

  /**
   * Rows of a kept partition: PostgreSQL's estimate (`reltuples`) once it has one; counted when
   * it has none, or an estimate of 0 (never analysed, or analysed empty and filled since: a new
   * partition before autovacuum's ANALYZE), so the report never says "~0 rows" of rows it holds.
   */
  private async keptRows(p: PartitionPlan): Promise<number> {
    if (p.partition.estimatedRows > 0) return p.partition.estimatedRows;
    return this.count(`SELECT count(*) FROM ${ident(p.partition.name)}`);
  }

  /**
   * The oldest time of the oldest non-empty partition: the time of its first row by id (the
   * primary key's index; ids grow with time), not the partition's lower bound, which may be
   * hours or days before any row it holds.
   */
  private async oldestOfPartitions(plans: PartitionPlan[]): Promise<string | null> {
    for (const p of plans) {
      const { rows } = await this.db.query<{ oldest: Date }>(
        `SELECT ${ident(p.target.column)} AS oldest FROM ${ident(p.partition.name)} ORDER BY id LIMIT 1`,
      );
      if (rows.length) return new Date(rows[0].oldest).toISOString();
    }
    return null;
  }

  /** A bounded target's rows and bytes past the cutoff (removable and protected), its size and oldest row. */
  private async rowSums(
    target: BoundedTarget,
    cutoff: Date | null,
    dropping: string[],
  ): Promise<{
    rows: number;
    bytes: number;
    protectedRows: number;
    totalBytes: number;
    oldest: string | null;
  }> {
    const isProtected = target.protectedRow ?? 'false';
    const sums = { rows: 0, bytes: 0, protectedRows: 0 };
    if (cutoff) {
      // Only the rows past the cutoff are read (by the time index where the table has one).
      const { rows } = await this.db.query<{ rows: string; bytes: string; protected: string }>(
        `SELECT count(*) FILTER (WHERE NOT (${isProtected}))::text AS rows,
                coalesce(sum(${target.bytes}) FILTER (WHERE NOT (${isProtected})), 0)::text AS bytes,
                count(*) FILTER (WHERE ${isProtected})::text AS protected
           FROM ${ident(target.table)} t WHERE (${target.eligible}) AND cardinality($2::text[]) >= 0`,
        [cutoff, dropping],
      );
      sums.rows = Number(rows[0].rows);
      sums.bytes = Number(rows[0].bytes);
      sums.protectedRows = Number(rows[0].protected);
    }
    // The class's share of the table from the catalog: a body's is the table's TOAST, the rows'
    // the rest (all of it when no body of the table is a class of its own).
    const bodyApart = RETENTION_TARGETS.some(
      (o) => o !== target && o.kind === 'rows' && o.table === target.table && o.action === 'null body',
    );
    const { rows: size } = await this.db.query<{ total: string; toast: string }>(
      `SELECT pg_total_relation_size(c.oid)::text AS total,
              coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0)::text AS toast
         FROM pg_class c WHERE c.oid = $1::regclass`,
      [target.table],
    );
    const total = Number(size[0].total);
    const toast = Number(size[0].toast);
    const totalBytes = target.action === 'null body' ? toast : bodyApart ? total - toast : total;
    const { rows: oldest } = await this.db.query<{ oldest: Date | null }>(
      `SELECT ${TIME_OF[target.name]} AS oldest FROM ${ident(target.table)} t
        WHERE ${target.holds ?? 'true'} ORDER BY ${ORDER_OF[target.table]} LIMIT 1`,
    );
    return {
      ...sums,
      totalBytes,
      oldest: oldest.length && oldest[0].oldest ? new Date(oldest[0].oldest).toISOString() : null,
    };
  }

  /** Whether table `name` holds rows of `target` that must not go yet. */
  async holdsProtected(target: PartitionedTarget, name: string): Promise<boolean> {
    return !!target.protectedSql && (await this.count(target.protectedSql.replace('$P', ident(name)))) > 0;
  }
}

/** The order of a bounded table's rows by age, by an index (for its oldest row). */
const ORDER_OF: Record<string, string> = {
  wallet_outbox: 't.id',
  event_outbox: 't.id',
  callback_inbox: 't.id',
  callback_batches: 't.received_at',
};

/** The time of each bounded target's row (for its oldest). */
const TIME_OF: Record<string, string> = {
  wallet_outbox: 'coalesce(t.delivered_at, t.skipped_at, t.created_at)',
  'wallet_outbox.body': 'coalesce(t.delivered_at, t.skipped_at)',
  event_outbox: 'coalesce(t.delivered_at, t.skipped_at, t.created_at)',
  'event_outbox.body': 'coalesce(t.delivered_at, t.skipped_at)',
  'callback_batches.payload': 't.received_at',
  callback_inbox: 't.received_at',
  callback_batches: 't.received_at',
};

/** The variable of a class. */
function RETENTION_CLASS_VARIABLE(dataClass: RetentionClass): string {
  return `RETENTION_${dataClass.toUpperCase()}`;
}

function partitionItem(p: PartitionPlan, action: ReportItem['action'], rows: number): ReportItem {
  return {
    target: p.partition.name,
    action,
    rows,
    bytes: p.partition.bytes,
    partition: {
      table: p.partition.table,
      name: p.partition.name,
      from: p.partition.from?.toISOString() ?? null,
      to: p.partition.to.toISOString(),
    },
  };
}
