import { retentionHorizons } from '../../platform/retention-horizons/retention-horizons.js';
import { createHash } from 'node:crypto';
import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import type { Actor } from '../../platform/auth/actor.js';
import { DomainException, ErrorCode } from '../../platform/common/domain.exception.js';
import { formatAmount } from '../../platform/common/money.js';
import { MONEY_CONFIG } from '../ledger/money.config.js';
import type { MoneyConfig } from '../ledger/money.config.js';
import { TransactionRunner, Tx } from '../../platform/database/transaction.js';
import { LedgerRepository } from '../ledger/ledger.repository.js';
import { LedgerService } from '../ledger/ledger.service.js';
import { stakePosting } from '../ledger/postings.js';
import { settlementPostings } from '../settlement-rules/settlement-postings.js';
import { CouponMetrics } from './coupon-metrics.js';
import { OperatorActionLog } from '../../platform/operator-actions/operator-action-log.js';
import type { ActionSpec } from '../../platform/operator-actions/operator-actions.types.js';
import { admitDeferredOperations } from '../settlement-rules/decide-settlement.js';
import { Cursor, CURSOR_PART, Page, pageSize, queryFlag, toPage } from '../../platform/common/pagination.js';
import type { SettlementOperation } from '../settlement-rules/settlement.types.js';
import { CouponListRow, CouponRepository, CouponRow } from './coupon.repository.js';
import { CouponListQueryDto, CouponSummaryView, SnapshotPageView } from './dto/coupon-list.dto.js';
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
    @Inject(MONEY_CONFIG) private readonly money: MoneyConfig,
    private readonly transactions: TransactionRunner,
    private readonly coupons: CouponRepository,
    private readonly ledger: LedgerService,
    private readonly ledgerRows: LedgerRepository,
    private readonly metrics: CouponMetrics,
    private readonly actions: OperatorActionLog,
  ) {}

  /** The coupon gauges of `/metrics` (needing review, unallocated) are counted here at scrape time. */
  onModuleInit(): void {
    this.metrics.countCouponsWith(() =>
      this.transactions.run((tx) => this.coupons.flagCounts(tx), { deadline: Date.now() + 1000, retries: 0 }),
    );
  }

  /**
   * Registers a placed coupon in one transaction, recorded with `actor` (the partner API key's
   * name; the same registration again keeps the first one's) and, for a key of scope money or
   * operate, as an operator action (also when refused); the stake was checked against the
   * currency by the DTO. Operations decided while it was unallocated are posted when they fit the
   * currency; a finer one is not, and flags the coupon `amount_precision` ({@link admitDeferredOperations}).
   * @returns the coupon view; `created` is false when the same registration was already made.
   * @throws DomainException COUPON_CONFLICT (same code, other body); LedgerException
   *   INSUFFICIENT_FUNDS, CURRENCY_MISMATCH.
   */
  async register(dto: RegisterCouponDto, actor: Actor): Promise<{ view: CouponView; created: boolean }> {
    const stake = formatAmount(dto.stake);
    const registrationHash = createHash('sha256')
      .update(JSON.stringify([dto.coupon_code, dto.accountId, stake, dto.currency]))
      .digest('hex');
    const spec = (created?: boolean): ActionSpec => ({
      action: 'registration',
      targetKind: 'coupon',
      targetId: dto.coupon_code,
      details: {
        accountId: dto.accountId,
        stake: this.money.currencies.format(stake, dto.currency),
        currency: dto.currency,
        ...(created === undefined ? {} : { created }),
      },
    });
    return this.actions.perform(actor, spec(), () =>
      this.transactions.run(async (tx) => {
        await this.actions.begin(tx, actor);
        const coupon = await this.coupons.lockOne(tx, dto.coupon_code);
        if (coupon.accountId !== null) {
          if (coupon.registrationHash !== registrationHash) {
            throw new DomainException(
              ErrorCode.COUPON_CONFLICT,
              `coupon ${dto.coupon_code} is already registered with a different account, stake or currency`,
            );
          }
          await this.actions.ok(tx, actor, spec(false));
          return { view: await this.view(tx, dto.coupon_code), created: false };
        }
        const { decided } = await tx.send({
          account: this.ledger.ensurePlayerAccountStatement(dto.accountId, dto.currency),
          registration: this.coupons.registerStatement(dto.coupon_code, {
            accountId: dto.accountId,
            stake,
            currency: dto.currency,
            registrationHash,
            registeredBy: actor.name,
          }),
          decided: this.coupons.decidedOperationsStatement(dto.coupon_code),
        });
        const owner = { couponCode: dto.coupon_code, accountId: dto.accountId, currency: dto.currency };
        const deferred = admitDeferredOperations(
          coupon,
          decided.rows,
          this.money.currencies.minorUnits(dto.currency),
        );
        if (deferred.state)
          await tx.send({ flag: this.coupons.stateStatement(dto.coupon_code, deferred.state) });
        await this.ledger.post(tx, [
          stakePosting(dto.coupon_code, dto.accountId, dto.currency, stake),
          ...deferred.admitted.flatMap((d) => settlementPostings(owner, d.batchId, d.operations)),
        ]);
        await this.actions.ok(tx, actor, spec(true));
        return { view: await this.view(tx, dto.coupon_code), created: true };
      }),
    );
  }

  /** `GET /coupons/{coupon_code}`. @throws DomainException NOT_FOUND. */
  async get(couponCode: string): Promise<CouponView> {
    return this.transactions.run((tx) => this.view(tx, couponCode));
  }

  /** `GET /coupons`: one page of coupons matching `q`, most recently changed first. */
  async list(q: CouponListQueryDto): Promise<Page<CouponSummaryView>> {
    const limit = pageSize(q);
    const after =
      q.cursor === undefined ? undefined : Cursor.decode(q.cursor, [CURSOR_PART.time, CURSOR_PART.text]);
    const rows = await this.transactions.run((tx) =>
      this.coupons.list(tx, {
        needsReview: queryFlag(q.needsReview),
        unallocated: queryFlag(q.unallocated),
        reviewReason: q.reviewReason,
        status: q.status === undefined ? undefined : Number(q.status),
        currency: q.currency,
        updatedFrom: q.updatedFrom ? new Date(q.updatedFrom) : undefined,
        updatedTo: q.updatedTo ? new Date(q.updatedTo) : undefined,
        after: after && { updatedAt: after[0], couponCode: after[1] },
        limit: limit + 1,
      }),
    );
    return toPage(
      rows,
      limit,
      (r) => [r.cursorAt, r.couponCode],
      (r) => this.summary(r),
    );
  }

  /**
   * `GET /coupons/{coupon_code}/history`: one page of the coupon's snapshots, newest first, each
   * with the operations its transition decided and those posted for it (found by its batch id);
   * `expiredBefore`: snapshots older expired under the retention policy (docs/retention.md).
   * @throws DomainException NOT_FOUND.
   */
  async history(
    couponCode: string,
    query: { limit?: string | number; cursor?: string },
  ): Promise<SnapshotPageView> {
    const limit = pageSize(query);
    const before = query.cursor === undefined ? undefined : Cursor.decode(query.cursor, [CURSOR_PART.id])[0];
    const { coupon, rows, posted, horizons } = await this.transactions.run(async (tx) => {
      const found = await this.coupons.find(tx, couponCode);
      if (!found) throw new DomainException(ErrorCode.NOT_FOUND, `coupon ${couponCode} not found`);
      const snapshots = await this.coupons.history(tx, couponCode, before, limit + 1);
      const batchIds = [...new Set(snapshots.slice(0, limit).map((s) => s.batchId))];
      const ops = batchIds.length ? await this.ledgerRows.operationsOfBatches(tx, couponCode, batchIds) : [];
      return { coupon: found, rows: snapshots, posted: ops, horizons: await retentionHorizons(tx) };
    });
    const amount = (value: string) => this.money.currencies.format(value, coupon.currency);
    const page = toPage(
      rows,
      limit,
      (r) => [r.id],
      (s) => ({
        id: s.id,
        batchId: s.batchId,
        receivedAt: s.receivedAt.toISOString(),
        status: s.status,
        realWin: s.realWin === null ? null : amount(s.realWin),
        transition: s.transition,
        generation: s.generation,
        applied: s.applied,
        actor: s.actor,
        decidedOperations: (s.decided ?? []).map((o: SettlementOperation) => ({
          type: o.type,
          generation: o.generation,
          amount: amount(o.amount),
        })),
        operations: posted
          .filter((o) => o.batchId === s.batchId)
          .map((o) => ({
            key: o.operationKey,
            type: o.type,
            generation: o.generation,
            amount: amount(o.amount),
            createdAt: o.createdAt.toISOString(),
          })),
      }),
    );
    return {
      coupon_code: coupon.couponCode,
      ...page,
      expiredBefore: horizons.snapshots?.toISOString() ?? null,
    };
  }

  /**
   * What a coupon's list entry and its full view show alike: its registration and settlement
   * state, amounts at the currency's precision ("1500" JPY, "0.00012345" BTC; never rounded).
   */
  private state(c: CouponListRow | CouponRow) {
    const amount = (value: string) => this.money.currencies.format(value, c.currency);
    return {
      coupon_code: c.couponCode,
      accountId: c.accountId,
      stake: c.stake === null ? null : amount(c.stake),
      currency: c.currency,
      status: c.status,
      realWin: c.realWin === null ? null : amount(c.realWin),
      settlementGeneration: c.generation,
      settled: c.generationSettled,
      recalculationOpen: c.recalculationOpen,
      needsReview: c.needsReview,
      reviewReason: c.reviewReason,
      unallocated: c.accountId === null,
    };
  }

  private summary(r: CouponListRow): CouponSummaryView {
    return {
      ...this.state(r),
      lastBatchId: r.lastBatchId,
      createdAt: r.createdAt.toISOString(),
      updatedAt: r.updatedAt.toISOString(),
    };
  }

  private async view(tx: Tx, couponCode: string): Promise<CouponView> {
    const coupon = await this.coupons.find(tx, couponCode);
    if (!coupon) throw new DomainException(ErrorCode.NOT_FOUND, `coupon ${couponCode} not found`);
    // One after the other: after a failed statement the transaction's others fail too (25P02).
    const events = await this.coupons.bets(tx, couponCode);
    const operations = await this.ledgerRows.operationsOfCoupon(tx, couponCode);
    // At the currency's precision ("1500" JPY, "0.00012345" BTC); never rounded.
    const amount = (value: string) => this.money.currencies.format(value, coupon.currency);
    return {
      ...this.state(coupon),
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
