import type { Tx } from './transaction.js';

/** The note readers give where the retention policy removed data (docs/retention.md, "After a purge"). */
export const EXPIRED_NOTE = 'expired under the retention policy';

/**
 * Per retention data class (`snapshots`, `delivery_attempts`, `raw_bodies`, `batch_ids`,
 * `outbox`), the time before which the policy may have removed its data (`retention_horizons`);
 * a class it never purged is absent.
 */
export async function retentionHorizons(tx: Pick<Tx, 'query'>): Promise<Record<string, Date>> {
  const { rows } = await tx.query<{ dataClass: string; before: Date }>(
    `SELECT data_class AS "dataClass", expired_before AS before FROM retention_horizons`,
  );
  return Object.fromEntries(rows.map((r) => [r.dataClass, r.before]));
}
