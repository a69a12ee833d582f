import { Inject, Injectable } from '@nestjs/common';
import { DomainException, ErrorCode } from '../../platform/common/domain.exception.js';
import { pageSize } from '../../platform/common/pagination.js';
import { MONEY_CONFIG } from '../../core/ledger/money.config.js';
import type { MoneyConfig } from '../../core/ledger/money.config.js';
import { EXPIRED_NOTE, retentionHorizons } from '../../platform/retention-horizons/retention-horizons.js';
import { TransactionRunner } from '../../platform/database/transaction.js';
import { AttemptRecord, AuditRepository } from './audit.repository.js';
import {
  BatchAuditView,
  DeliveryAttemptView,
  DeliveryPageView,
  DeliveryQueryDto,
  ExpiredView,
} from './dto/audit.dto.js';

function attemptView(a: AttemptRecord): DeliveryAttemptView {
  return {
    id: a.id,
    batchId: a.batchId,
    requestId: a.requestId,
    receivedAt: a.receivedAt.toISOString(),
    outcome: a.outcome,
    httpStatus: a.httpStatus,
    errorCode: a.errorCode,
    couponCount: a.couponCount,
    durationMs: a.durationMs,
    payloadHash: a.payloadHash,
    actor: a.actor,
    traceId: a.traceId,
  };
}

/**
 * The classes of a batch received at `batch.receivedAt` that are past their retention horizon; a
 * batch whose row is gone but whose operations are in the ledger lost its row (`batch_ids`) and
 * everything younger than it. null when nothing expired.
 */
function expiredOf(
  batch: { receivedAt: Date; payloadExpiredAt?: Date | null } | null,
  horizons: Record<string, Date>,
  posted: boolean,
): ExpiredView | null {
  const classes = ['batch_ids', 'raw_bodies', 'snapshots', 'delivery_attempts'].filter((c) => {
    const before = horizons[c];
    if (!before) return false;
    if (!batch) return posted;
    if (c === 'batch_ids') return false;
    if (c === 'raw_bodies') return Boolean(batch.payloadExpiredAt);
    return batch.receivedAt < before;
  });
  return classes.length ? { note: EXPIRED_NOTE, classes } : null;
}

/**
 * The delivery audit for operators and finance (CONTRACT §8): what a batch did and every time it
 * was delivered, so a redelivery answered 200 can be shown to have moved no money a second time.
 */
@Injectable()
export class AuditService {
  constructor(
    @Inject(MONEY_CONFIG) private readonly money: MoneyConfig,
    private readonly transactions: TransactionRunner,
    private readonly audit: AuditRepository,
  ) {}

  /**
   * Amounts at the precision of their currency (a snapshot's: its coupon's).
   * `expired` names what the retention policy removed of it (docs/retention.md).
   * @throws DomainException NOT_FOUND when the batch id was never stored nor delivered (or all
   * of it expired).
   */
  async batch(batchId: string): Promise<BatchAuditView> {
    // One after the other: statements of one transaction share its connection, and after one
    // fails the others would fail with 25P02 (in whichever order the rejections race).
    const { batch, coupons, operations, deliveries, quarantined, horizons } = await this.transactions.run(
      async (tx) => ({
        batch: await this.audit.batch(tx, batchId),
        coupons: await this.audit.snapshots(tx, batchId),
        operations: await this.audit.operations(tx, batchId),
        deliveries: await this.audit.attemptsOf(tx, batchId),
        quarantined: await this.audit.quarantinedCount(tx, batchId),
        horizons: await retentionHorizons(tx),
      }),
    );
    // A batch whose row expired (docs/retention.md) still has its operations in the ledger.
    const expired = expiredOf(batch, horizons, operations.length > 0);
    if (!batch && !deliveries.length && !quarantined && !operations.length)
      throw new DomainException(
        ErrorCode.NOT_FOUND,
        horizons.batch_ids
          ? `batch ${batchId} was never delivered, or ${EXPIRED_NOTE} (batch ids before ${horizons.batch_ids.toISOString()})`
          : `batch ${batchId} was never delivered`,
      );
    return {
      batchId,
      committed: batch !== null || operations.length > 0,
      payloadHash: batch?.payloadHash ?? null,
      couponCount: batch?.couponCount ?? null,
      committedAt: batch?.receivedAt.toISOString() ?? null,
      actor: batch?.actor ?? null,
      coupons: coupons.map((c) => ({
        coupon_code: c.couponCode,
        status: c.status,
        realWin: c.realWin === null ? null : this.money.currencies.format(c.realWin, c.coupon.currency),
        applied: c.applied,
        transition: c.transition,
        generation: c.generation,
      })),
      operations: operations.map((o) => ({
        key: o.operationKey,
        type: o.type,
        couponCode: o.couponCode,
        accountId: o.accountId,
        amount: this.money.currencies.format(o.amount, o.currency),
        currency: o.currency,
        createdAt: o.createdAt.toISOString(),
      })),
      deliveries: deliveries.map(attemptView),
      quarantined,
      expired,
    };
  }

  /** Delivery attempts matching `query`, newest first, one page. */
  async deliveries(query: DeliveryQueryDto): Promise<DeliveryPageView> {
    const limit = pageSize(query);
    const filter = {
      outcome: query.outcome,
      batchId: query.batchId,
      from: query.from ? new Date(query.from) : undefined,
      to: query.to ? new Date(query.to) : undefined,
      before: query.cursor,
      limit: limit + 1,
    };
    const rows = await this.transactions.run((tx) => this.audit.deliveries(tx, filter));
    const page = rows.slice(0, limit);
    return {
      items: page.map(attemptView),
      nextCursor: rows.length > limit ? page[page.length - 1].id : null,
    };
  }
}
