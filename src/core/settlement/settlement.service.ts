import { Inject, Injectable } from '@nestjs/common';
import { DomainException, ErrorCode } from '../../platform/common/domain.exception.js';
import { MONEY_CONFIG } from '../ledger/money.config.js';
import type { MoneyConfig } from '../ledger/money.config.js';
import { SETTLEMENT_CONFIG } from './settlement.config.js';
import type { SettlementConfig } from './settlement.config.js';
import { CouponRepository, LockedCoupon } from '../coupons/coupon.repository.js';
import { StatementGroup, Tx } from '../../platform/database/transaction.js';
import {
  DeliveryAttemptRepository,
  DeliveryAttemptRow,
} from '../../platform/deliveries/delivery-attempt.repository.js';
import { DeliveryOutcome } from '../../platform/deliveries/delivery.types.js';
import { activeTraceId } from '../../platform/observability/tracing.js';
import { LedgerService } from '../ledger/ledger.service.js';
import type { Posting } from '../ledger/ledger.types.js';
import { BatchRepository, CLAIMED_BY_THIS_TRANSACTION } from './batch.repository.js';
import { orderedCoupons, settleBatch } from './batch-settlement.js';
import type { ParsedBatch } from './parsed-batch.js';
import { SnapshotSource, TransitionName } from '../settlement-rules/settlement.types.js';
import { StatusMap } from '../settlement-rules/status-map.js';
import type { CouponTransition } from './settlement-hook.js';
import { SettlementHooks } from './settlement-hooks.js';

/** The callback delivery a batch is applied for inline: its request id and receipt time (epoch ms). */
export interface InlineDelivery {
  requestId: string;
  receivedAt: number;
}

/** How to apply a batch: see {@link SettlementService.apply}. */
export interface ApplyOptions {
  /** The settlement rules of the batch's source (CONTRACT §6, §9). */
  source: SnapshotSource;
  /** Name of the partner API key whose request applies it (a reconcile, resolution or replay), else null. */
  actor?: string | null;
  /**
   * The callback's inline delivery (the hot path): the claim also takes the batch id's advisory
   * lock and yields to the inbox, the delivery attempt is written with the batch, and COMMIT is
   * sent with the writes (two round trips in all, docs/architecture.md).
   */
  delivery?: InlineDelivery;
  /**
   * The inbox workers': the batch's postings are added here instead of posted; the caller posts
   * those of several batches of disjoint coupons in one posting statement before COMMIT.
   */
  postingsInto?: Posting[];
}

/**
 * What applying a batch did: `claimed` (applied now, each coupon's transition), `duplicate` (the
 * same body was applied before: nothing done), or, inline only, `inbox_pending` (nothing written:
 * pending inbox rows hold the batch id or a coupon, the caller hands the delivery to the inbox).
 */
export type ApplyResult =
  | { claim: 'claimed'; transitions: Map<string, TransitionName> }
  | { claim: 'duplicate'; transitions: Map<string, TransitionName> }
  | { claim: 'inbox_pending' };

/**
 * Applies a parsed batch inside a given transaction (CONTRACT §4–§7): the one algorithm behind the
 * callback (inline), the inbox workers, quarantine replays, reconciliation and operators'
 * resolutions (docs/architecture.md, "The path of one batch"). One group claims the batch id and
 * locks its coupons (ascending code); the decisions are taken in JavaScript ({@link settleBatch});
 * the settlement hooks run, when any is registered; one group writes the snapshots, states and
 * bets, the hooks' writes, the delivery attempt (inline) and the posting (last, before COMMIT).
 */
@Injectable()
export class SettlementService {
  private readonly statusMap: StatusMap;
  /** Minor units of a registered coupon's currency (CONTRACT §3). */
  private readonly minorUnitsOf = (currency: string): number => this.money.currencies.minorUnits(currency);
  private readonly kindOf = (status: number) => this.statusMap.kindOf(status);

  constructor(
    @Inject(MONEY_CONFIG) private readonly money: MoneyConfig,
    @Inject(SETTLEMENT_CONFIG) settlement: SettlementConfig,
    private readonly batches: BatchRepository,
    private readonly coupons: CouponRepository,
    private readonly ledger: LedgerService,
    private readonly attempts: DeliveryAttemptRepository,
    private readonly hooks: SettlementHooks,
  ) {
    this.statusMap = new StatusMap(settlement.statusMap);
  }

  /**
   * Applies `batch` in `tx` with the rules of `options.source`: claims the batch id with its
   * payload hash (a batch id known with the same hash is a duplicate, with another a conflict),
   * creates and locks its coupons, decides each one's transition, runs the settlement hooks and
   * writes everything; sends COMMIT with the writes when `options.delivery` is given, else leaves
   * the transaction open for the caller.
   * @throws DomainException BATCH_CONFLICT (the batch id with another payload hash); LedgerException;
   *   SettlementHookError, DeadlineExceededError and PostgreSQL errors (transient: 503); the
   *   caller's transaction must then roll back.
   */
  async apply(tx: Tx, batch: ParsedBatch, options: ApplyOptions): Promise<ApplyResult> {
    const ordered = orderedCoupons(batch);
    const codes = ordered.map((c) => c.coupon.couponCode);
    const { delivery } = options;
    const claim = this.batches.claimStatement(batch, codes, {
      checkInbox: delivery !== undefined,
      actor: options.actor ?? null,
    });
    const lock = this.coupons.lockGroup(codes, CLAIMED_BY_THIS_TRANSACTION);
    let claimed: boolean;
    let storedHash: string | undefined;
    let locked: LockedCoupon[];
    if (delivery) {
      const sent = await tx.send({
        batchLock: this.batches.batchIdLockStatement(batch.batchId),
        claim,
        ...lock,
      });
      if (sent.claim.rows[0].inboxPending) return { claim: 'inbox_pending' };
      claimed = sent.claim.rows[0].claimed;
      locked = sent.locked.rows;
    } else {
      const sent = await tx.send({ claim, stored: this.batches.storedHashStatement(batch.batchId), ...lock });
      claimed = sent.claim.rows[0].claimed;
      storedHash = sent.stored.rows[0]?.payload_hash;
      locked = sent.locked.rows;
    }
    if (!claimed) {
      if (delivery) {
        const { stored } = await tx.commitWith({
          stored: this.batches.payloadHashStatement(batch.batchId),
          attempt: this.attempts.insertIfStoredStatement(
            this.attempt(batch, delivery, DeliveryOutcome.DUPLICATE),
          ),
        });
        storedHash = stored.rows[0]?.payload_hash;
      }
      if (storedHash !== batch.payloadHash)
        throw new DomainException(
          ErrorCode.BATCH_CONFLICT,
          `batch ${batch.batchId} was delivered before with a different body`,
        );
      return { claim: 'duplicate', transitions: new Map() };
    }
    const collect: CouponTransition[] | undefined = this.hooks.any ? [] : undefined;
    const settlement = settleBatch(
      batch,
      ordered,
      new Map((await this.coupons.allLocked(tx, codes, locked)).map((r) => [r.couponCode, r])),
      this.kindOf,
      options.source,
      this.minorUnitsOf,
      collect,
    );
    const group: StatementGroup = {
      batch: this.coupons.applyBatchStatement(settlement.writes),
      ...(collect ? await this.hooks.run(tx, collect) : {}),
    };
    if (delivery)
      group.attempt = this.attempts.insertStatement(this.attempt(batch, delivery, DeliveryOutcome.PROCESSED));
    if (options.postingsInto) options.postingsInto.push(...settlement.postings);
    // The posting last before COMMIT: the house sub-account's row lock is held as briefly as possible.
    else if (settlement.postings.length)
      Object.assign(group, this.ledger.postingStatements(tx, settlement.postings));
    if (delivery) await tx.commitWith(group);
    else await tx.send(group);
    return { claim: 'claimed', transitions: settlement.transitions };
  }

  /** The delivery attempt of an inline delivery of `batch` answered 200 with `outcome` (CONTRACT §8). */
  private attempt(
    batch: ParsedBatch,
    delivery: InlineDelivery,
    outcome: DeliveryOutcome,
  ): DeliveryAttemptRow {
    return {
      batchId: batch.batchId,
      requestId: delivery.requestId,
      receivedAt: new Date(delivery.receivedAt),
      outcome,
      httpStatus: 200,
      errorCode: null,
      couponCount: batch.couponCount,
      durationMs: Date.now() - delivery.receivedAt,
      payloadHash: batch.payloadHash,
      traceId: activeTraceId(),
    };
  }
}
