/** What a bulk action repeats: the single action of the same name (docs/api.md#bulk-actions). */
export const BULK_KINDS = ['quarantine_replay', 'outbox_retry', 'outbox_skip'] as const;
export type BulkKind = (typeof BULK_KINDS)[number];

/** Rows a bulk action touches when no cap is given, and the most it may. */
export const BULK_CAP = { default: 1000, max: 10_000 } as const;

/** Rows a plan names as a sample. */
export const PLAN_SAMPLE = 10;

/** The filter of a quarantine replay: which quarantined bodies, in arrival order. */
export interface QuarantineFilter {
  /** The refusal the body was quarantined with (`validation_failed`, `batch_conflict`, `apply_failed`, …). */
  quarantineReason?: string;
  batchIdPrefix?: string;
  receivedFrom?: string;
  receivedTo?: string;
  /** Only bodies never replayed (default true). */
  notReplayed?: boolean;
}

/** The filter of an outbox retry or skip: which parked rows, in arrival order. */
export interface OutboxFilter {
  parkedReason?: string;
  accountId?: string;
  parkedFrom?: string;
  parkedTo?: string;
}

export type BulkFilter = QuarantineFilter & OutboxFilter;

/** Thrown by a bulk row's `begin` when the row is no longer to do (done, or its bulk action ended). */
export class BulkRowStopped extends Error {
  constructor(
    readonly status: string,
    readonly outcome: string | null,
  ) {
    super(`bulk row not run: action ${status}, row ${outcome ?? 'pending'}`);
    this.name = 'BulkRowStopped';
  }
}
