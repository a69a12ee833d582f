import { Column, Entity, PrimaryColumn } from 'typeorm';
import { UpdatedAtColumn } from '../../database/columns.js';

/**
 * Per data class of the retention policy, the time before which its rows (or bytes) may have been
 * removed (docs/retention.md): readers answer "expired under the retention policy" for data older
 * than `expiredBefore` instead of failing. Written by the retention job only.
 */
@Entity('retention_horizons')
export class RetentionHorizonEntity {
  @PrimaryColumn('text', { name: 'data_class', primaryKeyConstraintName: 'retention_horizons_pkey' })
  dataClass: string;
  @Column('timestamptz', { name: 'expired_before' }) expiredBefore: Date;
  @UpdatedAtColumn() updatedAt: Date;
}
