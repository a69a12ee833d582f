import type { SqlQueryable } from '../database/sql-queryable.js';

/** The note readers give where the retention policy removed data (docs/retention.md, "After a purge"). */
export const EXPIRED_NOTE = 'expired under the retention policy';

/**
 * Per retention data class (`snapshots`, `delivery_attempts`, `raw_bodies`, `batch_ids`,
 * `outbox`), the time before which the policy may have removed its data (`retention_horizons`,
 * {@link RetentionHorizonEntity}); a class it never purged is absent. With `ifPresent`, none on a
 * schema without the table (`ledger:verify` against an older database).
 */
export async function retentionHorizons(
  db: SqlQueryable,
  options: { ifPresent?: boolean } = {},
): Promise<Record<string, Date>> {
  if (options.ifPresent) {
    const { rows: found } = await db.query<{ present: boolean }>(
      `SELECT to_regclass('retention_horizons') IS NOT NULL AS present`,
    );
    if (!found[0].present) return {};
  }
  const { rows } = await db.query<{ dataClass: string; before: Date }>(
    `SELECT data_class AS "dataClass", expired_before AS before FROM retention_horizons`,
  );
  return Object.fromEntries(rows.map((r) => [r.dataClass, r.before]));
}

/**
 * Records that the retention job removed `dataClass`'s data before `before`; a horizon only moves
 * forward (a later run with an older cutoff leaves it). Written by the retention job only.
 */
export async function raiseRetentionHorizon(
  db: SqlQueryable,
  dataClass: string,
  before: Date,
): Promise<void> {
  await db.query(
    `INSERT INTO retention_horizons (data_class, expired_before) VALUES ($1, $2)
     ON CONFLICT (data_class) DO UPDATE
       SET expired_before = greatest(retention_horizons.expired_before, EXCLUDED.expired_before), updated_at = now()`,
    [dataClass, before],
  );
}
