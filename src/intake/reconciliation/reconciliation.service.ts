import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { Actor } from '../../platform/auth/actor.js';
import { DomainException, ErrorCode } from '../../platform/common/domain.exception.js';
import { MONEY_CONFIG } from '../../core/ledger/money.config.js';
import type { MoneyConfig } from '../../core/ledger/money.config.js';
import { CouponRepository } from '../../core/coupons/coupon.repository.js';
import { CouponsService } from '../../core/coupons/coupons.service.js';
import { CouponView } from '../../core/coupons/dto/coupon-view.dto.js';
import { TransactionRunner, Tx } from '../../platform/database/transaction.js';
import { InboxRepository } from '../inbox/inbox.repository.js';
import { OperatorActionLog } from '../../platform/operator-actions/operator-action-log.js';
import type { ActionSpec } from '../../platform/operator-actions/operator-actions.types.js';
import { SnapshotSource, TransitionName } from '../../core/settlement-rules/settlement.types.js';
import { SettlementService } from '../../core/settlement/settlement.service.js';
import { CouponRead, pollBatch, pollRead } from './coupon-read.js';
import { ReconciliationRepository } from './reconciliation.repository.js';
import { SportApiClient } from './sportapi.client.js';

/** Reads of one coupon while callbacks keep changing it, before giving up (COUPON_CHANGED_DURING_READ). */
const READ_ATTEMPTS = 3;

/** What reading and applying one coupon did. */
export type ReconcileOutcome =
  /** The read was a new snapshot and went through the pipeline (transition says what it did). */
  | 'applied'
  /** The coupon's latest snapshot is this same read (same coupon JSON): nothing was written. */
  | 'unchanged';

/** Result of {@link ReconciliationService.reconcile}. */
export interface ReconcileResult {
  outcome: ReconcileOutcome;
  batchId: string;
  /** Settlement transition of the read snapshot; null when unchanged. */
  transition: TransitionName | null;
  view: CouponView;
}

/**
 * The polling fallback (CONTRACT §9): {@link reconcile} reads a coupon from SportAPI and applies it
 * as the synthetic batch `poll:<coupon_code>:<sha256>` through the settlement service, with the
 * authoritative rules; {@link readAndApply} is the step the scheduled runs use too
 * ({@link ScheduledReconciliation}); operators' resolutions are {@link ResolutionService}'s.
 * docs/reconciliation.md has the rules (suffixed batch ids, deferral behind pending inbox rows).
 */
@Injectable()
export class ReconciliationService {
  constructor(
    @Inject(MONEY_CONFIG) private readonly money: MoneyConfig,
    private readonly transactions: TransactionRunner,
    private readonly sportApi: SportApiClient,
    private readonly settlement: SettlementService,
    private readonly coupons: CouponRepository,
    private readonly couponsService: CouponsService,
    private readonly repository: ReconciliationRepository,
    private readonly inbox: InboxRepository,
    private readonly actions: OperatorActionLog,
  ) {}

  /**
   * `POST /coupons/{coupon_code}/reconcile`: reads the coupon from SportAPI now and applies it,
   * the batch recorded with `actor` (the partner API key's name), and as an operator action in
   * the transaction that applies it (a refusal: after the rollback).
   * @returns the outcome and the coupon view (as `GET /coupons/{coupon_code}`).
   * @throws DomainException POLLING_DISABLED (501), SPORTAPI_COUPON_NOT_FOUND (404),
   *   SPORTAPI_UNAVAILABLE (503), SPORTAPI_BAD_RESPONSE (502: invalid coupon, nothing written),
   *   COUPON_INBOX_PENDING (409: pending inbox batches of the coupon apply first),
   *   COUPON_CHANGED_DURING_READ (409: callbacks kept changing the coupon during each read).
   */
  async reconcile(couponCode: string, actor: Actor): Promise<ReconcileResult> {
    const spec: ActionSpec = { action: 'reconcile', targetKind: 'coupon', targetId: couponCode };
    const { outcome, batchId, transition } = await this.actions.perform(actor, spec, () =>
      this.readAndApply(couponCode, actor),
    );
    return { outcome, batchId, transition, view: await this.couponsService.get(couponCode) };
  }

  /**
   * Reads the coupon and applies it under its row lock unless its latest snapshot is this very
   * read (`unchanged`); when the same coupon JSON was applied before and other batches changed the
   * coupon since, under a suffixed batch id. A read is applied only to the state it was taken
   * after: otherwise it is taken again, up to {@link READ_ATTEMPTS} times (docs/reconciliation.md).
   * `actor`: the partner API key of a reconcile (its operator action is written with the apply),
   * null for a scheduled run.
   * @throws DomainException COUPON_INBOX_PENDING, COUPON_CHANGED_DURING_READ; nothing written then.
   */
  async readAndApply(
    couponCode: string,
    actor: Actor | null,
  ): Promise<{ outcome: ReconcileOutcome; batchId: string; transition: TransitionName | null }> {
    for (let attempt = 1; ; attempt++) {
      const before = await this.transactions.run((tx) => this.repository.latestSnapshotBatch(tx, couponCode));
      const read = pollRead(
        couponCode,
        (await this.sportApi.readCoupon(couponCode)).body,
        this.money.currencies.maxMinorUnits,
      );
      const result = await this.transactions.run(async (tx) => {
        // Locked (its row created when no batch has touched it yet) before the comparison, so no
        // batch can change the coupon between the comparison and the apply.
        await this.coupons.lockOne(tx, couponCode);
        await this.refuseWhileInboxPending(tx, couponCode);
        const latest = await this.repository.latestSnapshotBatch(tx, couponCode);
        if (latest !== before) return undefined; // changed during the read: read again
        const applied = await this.applyRead(tx, couponCode, read, latest, actor?.name ?? null);
        if (actor)
          await this.actions.ok(tx, actor, {
            action: 'reconcile',
            targetKind: 'coupon',
            targetId: couponCode,
            details: { ...applied },
          });
        return applied;
      });
      if (result) return result;
      if (attempt >= READ_ATTEMPTS) {
        throw new DomainException(
          ErrorCode.COUPON_CHANGED_DURING_READ,
          `coupon ${couponCode} changed during each of ${READ_ATTEMPTS} reads from SportAPI; retry later`,
        );
      }
    }
  }

  /** The decision of {@link readAndApply} inside its transaction (the coupon row locked). */
  private async applyRead(
    tx: Tx,
    couponCode: string,
    read: CouponRead,
    latest: string | undefined,
    actor: string | null,
  ): Promise<{ outcome: ReconcileOutcome; batchId: string; transition: TransitionName | null }> {
    const base = `poll:${couponCode}:${read.hash}`;
    if (latest === base || latest?.startsWith(`${base}:`)) {
      await this.repository.markReconciled(tx, couponCode);
      return { outcome: 'unchanged', batchId: latest, transition: null };
    }
    const batchId =
      latest !== undefined && (await this.repository.batchExists(tx, base))
        ? `${base}:${createHash('sha256').update(latest).digest('hex').slice(0, 16)}`
        : base;
    const applied = await this.settlement.apply(tx, pollBatch(batchId, read), {
      source: SnapshotSource.POLL,
      actor,
    });
    await this.repository.markReconciled(tx, couponCode);
    return applied.claim === 'claimed'
      ? { outcome: 'applied', batchId, transition: applied.transitions.get(couponCode) ?? null }
      : { outcome: 'unchanged', batchId, transition: null };
  }

  /**
   * Refuses a read or resolution of a coupon that pending inbox rows hold (CONTRACT §4 step 5:
   * per coupon, batches apply in arrival order; those were answered 200 first).
   * @throws DomainException COUPON_INBOX_PENDING.
   */
  async refuseWhileInboxPending(tx: Tx, couponCode: string): Promise<void> {
    const pending = await this.inbox.pendingWithCoupons(tx, [couponCode]);
    if (pending > 0) {
      throw new DomainException(
        ErrorCode.COUPON_INBOX_PENDING,
        `the inbox holds ${pending} pending batch(es) of coupon ${couponCode}; retry after they are applied`,
      );
    }
  }
}
