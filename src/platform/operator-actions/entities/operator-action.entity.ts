import { Check, Column, Entity, Index } from 'typeorm';
import { BigintIdColumn } from '../../database/columns.js';

/**
 * One action taken with a partner API key holding scope `money` or `operate` (docs/api.md,
 * "Operator actions"): who (`actor`, the key's name), what (`action`), on what (`target_kind`,
 * `target_id`), why (`reason`), the request (`request_id`, `client_address`), and how it ended (`outcome`: `ok` or
 * the error code it was refused with), with a few `details` (amounts, counts, batch ids). Written
 * in the transaction of the action it records (a refusal: in a short one after the rollback).
 * Append-only: trigger `operator_actions_append_only` (function `forbid_ledger_mutation()`,
 * migrations only) refuses UPDATE and DELETE.
 */
@Entity('operator_actions')
@Check(
  'operator_actions_action_check',
  "action IN ('adjustment', 'registration', 'resolution', 'reconcile', 'replay', 'outbox_retry', 'outbox_skip', 'wallet_pause', 'wallet_resume', 'publisher_pause', 'publisher_resume', 'bulk_run', 'bulk_cancel')",
)
@Check(
  'operator_actions_target_kind_check',
  "target_kind IN ('account', 'coupon', 'quarantine', 'outbox', 'wallet', 'event_outbox', 'publisher', 'bulk_action')",
)
@Check('operator_actions_outcome_check', 'length(outcome) BETWEEN 1 AND 64')
@Index('operator_actions_actor_idx', ['actor', 'id'])
@Index('operator_actions_action_idx', ['action', 'id'])
@Index('operator_actions_target_idx', ['targetKind', 'targetId', 'id'])
@Index('operator_actions_at_idx', ['at'])
@Index('operator_actions_request_idx', ['requestId'], { where: 'request_id IS NOT NULL' })
export class OperatorActionEntity {
  @BigintIdColumn('operator_actions_pkey') id: string;
  @Column('timestamptz', { default: () => 'now()' }) at: Date;
  @Column('text') actor: string;
  @Column('text') action: string;
  @Column('text', { name: 'target_kind', nullable: true }) targetKind: string | null;
  @Column('text', { name: 'target_id', nullable: true }) targetId: string | null;
  @Column('text', { nullable: true }) reason: string | null;
  @Column('text', { name: 'request_id', nullable: true }) requestId: string | null;
  @Column('text') outcome: string;
  @Column('jsonb', { default: {} }) details: Record<string, unknown>;
  /** The client address (`X-Forwarded-For` only from `TRUSTED_PROXIES`); null for bulk rows and older rows. */
  @Column('text', { name: 'client_address', nullable: true }) clientAddress: string | null;
}
