import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { DomainException, ErrorCode } from '../common/domain.exception.js';
import { formatAmount } from '../common/money.js';
import { TransactionRunner, Tx } from '../database/transaction.js';
import { OperationType } from '../ledger/entities/financial-operation.entity.js';
import { LedgerRepository } from '../ledger/ledger.repository.js';
import { couponOperationKey, LedgerService, PostOperation } from '../ledger/ledger.service.js';
import { SettlementOperation } from '../settlement/settlement.types.js';
import { CouponRepository } from './coupon.repository.js';
import { CouponView } from './dto/coupon-view.dto.js';
import { RegisterCouponDto } from './dto/register-coupon.dto.js';

/** Ledger operations for a coupon's settlement operations (CONTRACT §7 keys). */
export function settlementPostOperations(
  couponCode: string,
  accountId: string,
  currency: string,
  batchId: string,
  operations: SettlementOperation[],
): PostOperation[] {
  return operations.map((op) => ({
    key: couponOperationKey(couponCode, op.generation, op.type as unknown as OperationType),
    type: op.type as unknown as OperationType,
    accountId,
    currency,
    amount: op.amount,
    couponCode,
    generation: op.generation,
    batchId,
  }));
}

/**
 * Coupon registration and reads of the partner API (CONTRACT §10). Registration debits the stake
 * (`<coupon_code>:0:stake_debit`) and applies, exactly once, the settlement of callbacks that
 * arrived while the coupon was unallocated (§7).
 */
@Injectable()
export class CouponsService {
  constructor(
    private readonly transactions: TransactionRunner,
    private readonly coupons: CouponRepository,
    private readonly ledger: LedgerService,
    private readonly ledgerRows: LedgerRepository,
  ) {}

  /**
   * Registers a placed coupon in one transaction.
   * @returns the coupon view; `created` is false when the same registration was already made.
   * @throws DomainException COUPON_CONFLICT (same code, other body), INSUFFICIENT_FUNDS,
   *   CURRENCY_MISMATCH.
   */
  async register(dto: RegisterCouponDto): Promise<{ view: CouponView; created: boolean }> {
    const stake = formatAmount(dto.stake);
    const registrationHash = createHash('sha256')
      .update(JSON.stringify([dto.coupon_code, dto.accountId, stake, dto.currency]))
      .digest('hex');
    return this.transactions.run(async (tx) => {
      const coupon = await this.coupons.lockOne(tx, dto.coupon_code);
      if (coupon.accountId !== null) {
        if (coupon.registrationHash !== registrationHash) {
          throw new DomainException(
            ErrorCode.COUPON_CONFLICT,
            `coupon ${dto.coupon_code} is already registered with a different account, stake or currency`,
          );
        }
        return { view: await this.view(tx, dto.coupon_code), created: false };
      }
      await this.ledger.ensurePlayerAccount(tx, dto.accountId, dto.currency);
      await this.coupons.register(tx, dto.coupon_code, {
        accountId: dto.accountId,
        stake,
        currency: dto.currency,
        registrationHash,
      });
      const ops: PostOperation[] = [
        {
          key: couponOperationKey(dto.coupon_code, 0, OperationType.STAKE_DEBIT),
          type: OperationType.STAKE_DEBIT,
          accountId: dto.accountId,
          currency: dto.currency,
          amount: stake,
          couponCode: dto.coupon_code,
          generation: 0,
          requireFunds: true,
        },
      ];
      for (const decided of await this.coupons.decidedOperations(tx, dto.coupon_code)) {
        ops.push(
          ...settlementPostOperations(
            dto.coupon_code,
            dto.accountId,
            dto.currency,
            decided.batchId,
            decided.operations,
          ),
        );
      }
      await this.ledger.post(tx, ops);
      return { view: await this.view(tx, dto.coupon_code), created: true };
    });
  }

  /** `GET /coupons/{coupon_code}`. @throws DomainException NOT_FOUND. */
  async get(couponCode: string): Promise<CouponView> {
    return this.transactions.run((tx) => this.view(tx, couponCode));
  }

  private async view(tx: Tx, couponCode: string): Promise<CouponView> {
    const coupon = await this.coupons.find(tx, couponCode);
    if (!coupon) throw new DomainException(ErrorCode.NOT_FOUND, `coupon ${couponCode} not found`);
    const [events, operations] = await Promise.all([
      this.coupons.bets(tx, couponCode),
      this.ledgerRows.operationsOfCoupon(tx, couponCode),
    ]);
    return {
      coupon_code: coupon.couponCode,
      accountId: coupon.accountId,
      stake: coupon.stake === null ? null : formatAmount(coupon.stake),
      currency: coupon.currency,
      status: coupon.status,
      realWin: coupon.realWin === null ? null : formatAmount(coupon.realWin),
      settlementGeneration: coupon.generation,
      settled: coupon.generationSettled,
      recalculationOpen: coupon.recalculationOpen,
      needsReview: coupon.needsReview,
      reviewReason: coupon.reviewReason,
      unallocated: coupon.accountId === null,
      events,
      operations: operations.map((o) => ({
        key: o.key,
        type: o.type,
        generation: o.generation,
        amount: formatAmount(o.amount),
      })),
    };
  }
}
