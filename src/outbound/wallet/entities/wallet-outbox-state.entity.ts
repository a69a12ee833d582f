import { Check, Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * The one row (id 1) of the outbox's shared state: delivery paused (by an operator, or after the
 * wallet answered 401/403) with why, when (null: never paused nor resumed) and by whom (null: the
 * receiver itself). Every replica's workers read it before claiming.
 */
@Entity('wallet_outbox_state')
@Check('wallet_outbox_state_single_check', 'id = 1')
export class WalletOutboxStateEntity {
  @PrimaryColumn('smallint', { primaryKeyConstraintName: 'wallet_outbox_state_pkey' }) id: number;
  @Column('boolean', { default: false }) paused: boolean;
  @Column('text', { nullable: true }) reason: string | null;
  @Column('timestamptz', { name: 'changed_at', nullable: true }) changedAt: Date | null;
  @Column('text', { name: 'changed_by', nullable: true }) changedBy: string | null;
}
