import { Column, Entity, Generated, PrimaryColumn } from 'typeorm';

// The example partner's tables as its migration creates them (migrations/): `npm run typeorm --
// schema:log` with RECEIVER_EXTENSIONS naming extension.ts checks they match (docs/extending.md#schema).

/** A player's balance per currency in the partner's wallet. */
@Entity({ schema: 'partner_wallet', name: 'balances' })
export class PartnerBalance {
  @PrimaryColumn('text', { name: 'account_id', primaryKeyConstraintName: 'balances_pkey' }) accountId: string;
  @PrimaryColumn('text', { primaryKeyConstraintName: 'balances_pkey' }) currency: string;
  @Column('numeric', { default: 0 }) balance: string;
}

/** A wallet transaction applied once, by its id, with the SHA-256 of its body. */
@Entity({ schema: 'partner_wallet', name: 'transactions' })
export class PartnerTransaction {
  @PrimaryColumn('text', { name: 'transaction_id', primaryKeyConstraintName: 'transactions_pkey' })
  transactionId: string;
  @Column('text', { name: 'body_sha256' }) bodySha256: string;
  @Column('text', { name: 'account_id' }) accountId: string;
  @Column('text') currency: string;
  @Column('numeric') amount: string;
  @Column('timestamptz', { name: 'applied_at', default: () => 'now()' }) appliedAt: Date;
}

/** Loyalty points of one settled win (the hook's rows). */
@Entity({ schema: 'partner_loyalty', name: 'points' })
export class LoyaltyPoints {
  @PrimaryColumn('text', { name: 'operation_key', primaryKeyConstraintName: 'points_pkey' })
  operationKey: string;
  @Column('text', { name: 'account_id' }) accountId: string;
  @Column('text', { name: 'coupon_code' }) couponCode: string;
  @Column('bigint') points: string;
  @Column('text', { name: 'batch_id' }) batchId: string;
  @Column('timestamptz', { name: 'awarded_at', default: () => 'now()' }) awardedAt: Date;
}

/** A loyalty account whose wins are refused while it is frozen. */
@Entity({ schema: 'partner_loyalty', name: 'frozen_accounts' })
export class FrozenLoyaltyAccount {
  @PrimaryColumn('text', { name: 'account_id', primaryKeyConstraintName: 'frozen_accounts_pkey' })
  accountId: string;
  @Column('text') reason: string;
}

/** A settlement event received once by its id, in the order of `seq`. */
@Entity({ schema: 'partner_events', name: 'received' })
export class ReceivedEvent {
  @PrimaryColumn('text', { name: 'event_id', primaryKeyConstraintName: 'received_pkey' }) eventId: string;
  @Column('text', { name: 'account_id' }) accountId: string;
  @Column('jsonb') body: unknown;
  @Column('timestamptz', { name: 'received_at', default: () => 'now()' }) receivedAt: Date;
  @Column('bigint') @Generated('increment') seq: string;
}

export const PARTNER_ENTITIES = [
  PartnerBalance,
  PartnerTransaction,
  LoyaltyPoints,
  FrozenLoyaltyAccount,
  ReceivedEvent,
];
