import { createHash } from 'node:crypto';
import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { DomainException, ErrorCode } from '../common/domain.exception.js';
import { formatAmount } from '../common/money.js';
import { APP_CONFIG } from '../config/configuration.js';
import type { AppConfig } from '../config/configuration.js';
import { TransactionRunner, Tx } from '../database/transaction.js';
import { LedgerRepository } from '../ledger/ledger.repository.js';
import { LedgerService } from '../ledger/ledger.service.js';
import { settlementPostings, stakePosting } from '../ledger/postings.js';
import { SettlementMetrics } from '../observability/settlement-metrics.js';
import { admitDeferredOperations } from '../settlement/decide-settlement.js';
import { CouponRepository } from './coupon.repository.js';
import { CouponView } from './dto/coupon-view.dto.js';
import { RegisterCouponDto } from './dto/register-coupon.dto.js';

/**
 * Coupon registration and reads of the partner API (CONTRACT §10). Registration debits the stake
 * (`<coupon_code>:0:stake_debit`) and applies, exactly once, the settlement of callbacks that
 * arrived while the coupon was unallocated (§7), as far as its amounts fit the currency (§3).
 */
@Injectable()
export class CouponsService implements OnModuleInit {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly transactions: TransactionRunner,
    private readonly coupons: CouponRepository,
    private readonly ledger: LedgerService,
    private readonly ledgerRows: LedgerRepository,
    private readonly metrics: SettlementMetrics,
  ) {}

  /** The coupon gauges of `/metrics` (needing review, unallocated) are counted here at scrape time. */
  onModuleInit(): void {
    this.metrics.countCouponsWith(() =>
      this.transactions.run((tx) => this.coupons.flagCounts(tx), { deadline: Date.now() + 1000, retries: 0 }),
    );
  }

  /**
   * Registers a placed coupon in one transaction, recorded with `actor` (the partner API key's
   * name; the same registration again keeps the first one's); the stake was checked against the
   * currency by the DTO. Operations decided while it was unallocated are posted when they fit the
   * currency; a finer one is not, and flags the coupon `amount_precision` ({@link admitDeferredOperations}).
   * @returns the coupon view; `created` is false when the same registration was already made.
   * @throws DomainException COUPON_CONFLICT (same code, other body); LedgerException
   *   INSUFFICIENT_FUNDS, CURRENCY_MISMATCH.
   */
  async register(dto: RegisterCouponDto, actor: string): Promise<{ view: CouponView; created: boolean }> {
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
      const { decided } = await tx.send({
        account: this.ledger.ensurePlayerAccountStatement(dto.accountId, dto.currency),
        registration: this.coupons.registerStatement(dto.coupon_code, {
          accountId: dto.accountId,
          stake,
          currency: dto.currency,
          registrationHash,
          registeredBy: actor,
        }),
        decided: this.coupons.decidedOperationsStatement(dto.coupon_code),
      });
      const owner = { couponCode: dto.coupon_code, accountId: dto.accountId, currency: dto.currency };
      const deferred = admitDeferredOperations(
        coupon,
        decided.rows,
        this.config.currencies.minorUnits(dto.currency),
      );
      if (deferred.state)
        await tx.send({ flag: this.coupons.stateStatement(dto.coupon_code, deferred.state) });
      await this.ledger.post(tx, [
        stakePosting(dto.coupon_code, dto.accountId, dto.currency, stake),
        ...deferred.admitted.flatMap((d) => settlementPostings(owner, d.batchId, d.operations)),
      ]);
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
    // At the currency's precision ("1500" JPY, "0.00012345" BTC); never rounded.
    const amount = (value: string) => this.config.currencies.format(value, coupon.currency);
    return {
      coupon_code: coupon.couponCode,
      accountId: coupon.accountId,
      stake: coupon.stake === null ? null : amount(coupon.stake),
      currency: coupon.currency,
      status: coupon.status,
      realWin: coupon.realWin === null ? null : amount(coupon.realWin),
      settlementGeneration: coupon.generation,
      settled: coupon.generationSettled,
      recalculationOpen: coupon.recalculationOpen,
      needsReview: coupon.needsReview,
      reviewReason: coupon.reviewReason,
      unallocated: coupon.accountId === null,
      registeredBy: coupon.registeredBy,
      events,
      operations: operations.map((o) => ({
        key: o.operationKey,
        type: o.type,
        generation: o.generation,
        amount: amount(o.amount),
      })),
    };
  }
}
