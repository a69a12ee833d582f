import { Check, Column, Entity, Index, PrimaryColumn } from 'typeorm';
import {
  AmountColumn,
  CreatedAtColumn,
  CurrencyColumn,
  UpdatedAtColumn,
} from '../../../platform/database/columns.js';
import type { AccountKind } from '../ledger.types.js';

/**
 * A ledger account (CONTRACT §7). `balance` is a materialised `numeric(26,8)` (a decimal string in
 * JS) equal to the sum of the account's entries, updated under a row lock in the same transaction.
 */
@Entity('accounts')
@Check('accounts_id_check', 'length(id) BETWEEN 1 AND 64')
@Check('accounts_kind_check', "kind IN ('player', 'house')")
@Check('accounts_currency_check', "currency ~ '^[A-Z0-9]{3,8}$'")
@Check('accounts_check', "(kind = 'house') = (id LIKE 'house:%')")
// SP-GiST: answers `id ^@ prefix` (GET /accounts?q=, GET /search) in any collation.
@Index('accounts_id_prefix_idx', ['id'], { type: 'spgist' })
export class AccountEntity {
  @PrimaryColumn('text', { primaryKeyConstraintName: 'accounts_pkey' }) id: string;
  @Column('text') kind: AccountKind;
  @CurrencyColumn() currency: string;
  @AmountColumn({ default: 0 }) balance: string;
  @CreatedAtColumn() createdAt: Date;
  @UpdatedAtColumn() updatedAt: Date;
}
