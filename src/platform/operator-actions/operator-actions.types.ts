/** What an operator action did (`operator_actions.action`, docs/api.md#operator-actions). */
export const OPERATOR_ACTIONS = [
  'adjustment',
  'registration',
  'resolution',
  'reconcile',
  'replay',
  'outbox_retry',
  'outbox_skip',
  'wallet_pause',
  'wallet_resume',
  'publisher_pause',
  'publisher_resume',
  'bulk_run',
  'bulk_cancel',
] as const;
export type OperatorActionKind = (typeof OPERATOR_ACTIONS)[number];

/** What an operator action was done to (`operator_actions.target_kind`). */
export const TARGET_KINDS = [
  'account',
  'coupon',
  'quarantine',
  'outbox',
  'wallet',
  'event_outbox',
  'publisher',
  'bulk_action',
] as const;
export type TargetKind = (typeof TARGET_KINDS)[number];

/** One action to record: what, on what, why, and a few details (amounts, counts, batch ids). */
export interface ActionSpec {
  action: OperatorActionKind;
  targetKind: TargetKind;
  targetId: string | null;
  reason?: string | null;
  details?: Record<string, unknown>;
}
