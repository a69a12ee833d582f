import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** One side of a financial operation: a signed `numeric` amount on one account. Append-only. */
@Entity('ledger_entries')
export class LedgerEntryEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' }) id: string;
  @Column('bigint', { name: 'operation_id' }) operationId: string;
  @Column('text', { name: 'account_id' }) accountId: string;
  @Column('numeric', { precision: 20, scale: 2 }) amount: string;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
}
