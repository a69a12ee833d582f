import { Column, CreateDateColumn, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import type { ColumnOptions } from 'typeorm';

/** What a shared column decorator lets an entity say of its column: name, nullability, default. */
type ColumnExtras = Pick<ColumnOptions, 'name' | 'nullable' | 'default'>;

/**
 * An amount of money: `numeric(26,8)`, read as a string so that no digit is lost (common/money.ts).
 * `options` names the column (default: the property's name), makes it nullable or gives a default.
 */
export function AmountColumn(options: ColumnExtras = {}): PropertyDecorator {
  return Column('numeric', { precision: 26, scale: 8, ...options });
}

/** A currency code (`CURRENCY_CODE` of common/currency.ts: 3 to 8 characters): `varchar(8)`. */
export function CurrencyColumn(options: Pick<ColumnOptions, 'nullable'> = {}): PropertyDecorator {
  return Column('varchar', { length: 8, ...options });
}

/**
 * When the row was inserted: `timestamptz` with the database's default `now()`, set by TypeORM on
 * insert; named `created_at` unless `name` says otherwise (`received_at`, `resolved_at`). `primary`
 * makes it part of the primary key `primaryKeyConstraintName` (a table partitioned by it).
 */
export function CreatedAtColumn(
  name = 'created_at',
  primary?: { primaryKeyConstraintName: string },
): PropertyDecorator {
  return CreateDateColumn({ name, type: 'timestamptz', ...(primary && { primary: true, ...primary }) });
}

/** When the row was last updated: `timestamptz` `updated_at`, default `now()`, set by TypeORM on save. */
export function UpdatedAtColumn(): PropertyDecorator {
  return UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' });
}

/**
 * The row's `bigint` id from the table's sequence, alone or first in the primary key named
 * `primaryKeyConstraintName` (`<table>_pkey`); read as a string (a `bigint` may exceed 2^53).
 */
export function BigintIdColumn(primaryKeyConstraintName: string): PropertyDecorator {
  return PrimaryGeneratedColumn({ type: 'bigint', primaryKeyConstraintName });
}
