import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/** Kinds of ledger account: a player's, or the house settlement account of a currency. */
export type AccountKind = 'player' | 'house';

/**
 * A ledger account (CONTRACT §7). `balance` is a materialised `numeric(20,2)` (a decimal string in
 * JS) equal to the sum of the account's entries, updated under a row lock in the same transaction.
 */
@Entity('accounts')
export class AccountEntity {
  @PrimaryColumn('text') id: string;
  @Column('text') kind: AccountKind;
  @Column('char', { length: 3 }) currency: string;
  @Column('numeric', { precision: 20, scale: 2 }) balance: string;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' }) updatedAt: Date;
}
