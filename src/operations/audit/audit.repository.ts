import { Injectable } from '@nestjs/common';
import { FindOptionsWhere, LessThan, MoreThanOrEqual, And } from 'typeorm';
import { CallbackBatchEntity } from '../../core/settlement/entities/callback-batch.entity.js';
import { DeliveryAttemptEntity } from '../../platform/deliveries/entities/delivery-attempt.entity.js';
import { QuarantinedBodyEntity } from '../../intake/quarantine/entities/quarantined-body.entity.js';
import { CouponSnapshotEntity } from '../../core/coupons/entities/coupon-snapshot.entity.js';
import { Tx } from '../../platform/database/transaction.js';
import { FinancialOperationEntity } from '../../core/ledger/entities/financial-operation.entity.js';

/** A delivery attempt row as read (bigint id as a string). */
export type AttemptRecord = Omit<DeliveryAttemptEntity, 'outcome'> & { outcome: string };

/** Filters of {@link AuditRepository.deliveries}; `before` is an id (keyset pagination). */
export interface AttemptFilter {
  outcome?: string;
  batchId?: string;
  from?: Date;
  to?: Date;
  before?: string;
  limit: number;
}

/** Read-only queries of the delivery audit (CONTRACT §8): batches, snapshots, operations, attempts. */
@Injectable()
export class AuditRepository {
  batch(
    tx: Tx,
    batchId: string,
  ): Promise<Pick<
    CallbackBatchEntity,
    'payloadHash' | 'couponCount' | 'receivedAt' | 'actor' | 'payloadExpiredAt'
  > | null> {
    return tx.manager.findOne(CallbackBatchEntity, {
      select: { payloadHash: true, couponCount: true, receivedAt: true, actor: true, payloadExpiredAt: true },
      where: { batchId },
    });
  }

  /** The batch's snapshots, each with its coupon's currency (null while unallocated). */
  snapshots(tx: Tx, batchId: string): Promise<CouponSnapshotEntity[]> {
    return tx.manager.find(CouponSnapshotEntity, {
      select: {
        couponCode: true,
        status: true,
        realWin: true,
        applied: true,
        transition: true,
        generation: true,
        coupon: { couponCode: true, currency: true },
      },
      relations: { coupon: true },
      where: { batchId },
      order: { couponCode: 'ASC' },
    });
  }

  operations(tx: Tx, batchId: string): Promise<FinancialOperationEntity[]> {
    return tx.manager.find(FinancialOperationEntity, {
      select: {
        operationKey: true,
        type: true,
        couponCode: true,
        accountId: true,
        amount: true,
        currency: true,
        createdAt: true,
      },
      where: { batchId },
      order: { id: 'ASC' },
    });
  }

  attemptsOf(tx: Tx, batchId: string): Promise<AttemptRecord[]> {
    return tx.manager.find(DeliveryAttemptEntity, {
      where: { batchId },
      order: { receivedAt: 'ASC', id: 'ASC' },
    });
  }

  quarantinedCount(tx: Tx, batchId: string): Promise<number> {
    return tx.manager.countBy(QuarantinedBodyEntity, { batchId });
  }

  /** Newest first (by id), `limit` rows. */
  deliveries(tx: Tx, filter: AttemptFilter): Promise<AttemptRecord[]> {
    const where: FindOptionsWhere<DeliveryAttemptEntity> = {};
    if (filter.outcome) where.outcome = filter.outcome as DeliveryAttemptEntity['outcome'];
    if (filter.batchId) where.batchId = filter.batchId;
    const receivedAt = [
      ...(filter.from ? [MoreThanOrEqual(filter.from)] : []),
      ...(filter.to ? [LessThan(filter.to)] : []),
    ];
    if (receivedAt.length) where.receivedAt = receivedAt.length === 1 ? receivedAt[0] : And(...receivedAt);
    if (filter.before) where.id = LessThan(filter.before);
    return tx.manager.find(DeliveryAttemptEntity, { where, order: { id: 'DESC' }, take: filter.limit });
  }
}
