import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '../config/configuration.js';
import type { AppConfig } from '../config/configuration.js';
import { DomainException, ErrorCode } from '../common/domain.exception.js';
import type { CallbackRequestState } from '../common/request-context.js';
import { TransactionRunner, Tx } from '../database/transaction.js';
import { CouponRepository, BetRow, SnapshotRow } from '../coupons/coupon.repository.js';
import { settlementPostOperations } from '../coupons/coupons.service.js';
import { LedgerService, PostOperation } from '../ledger/ledger.service.js';
import { decideSettlement, sameSettlementState } from '../settlement/decide-settlement.js';
import { CouponSettlementState, SnapshotSource, TransitionName } from '../settlement/settlement.types.js';
import { StatusMap } from '../settlement/status-map.js';
import { BatchClaim, BatchRepository } from './batch.repository.js';
import { DeliveryAuditRepository } from './delivery-audit.repository.js';
import { DeliveryOutcome } from './entities/delivery-attempt.entity.js';
import { ParsedBatch } from './parsed-batch.js';

/** What the callback answers after COMMIT (CONTRACT §5). */
export interface CallbackResult {
  processed: number;
  duplicate: boolean;
}

/**
 * Applies one verified and validated batch in ONE transaction (CONTRACT §4): claim the batch id
 * with its payload hash (duplicate → nothing else; other body → 409), lock/upsert the coupons in
 * ascending `coupon_code` order, decide each coupon's settlement transition (§6), store every
 * snapshot, upsert the bets of applied snapshots, post the financial operations of registered
 * coupons through the ledger (§7; unallocated coupons keep them on the snapshot until
 * registration), record the delivery attempt, COMMIT. The caller answers 200 only after this
 * returns.
 */
@Injectable()
export class CallbackService {
  private readonly statusMap: StatusMap;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly transactions: TransactionRunner,
    private readonly batches: BatchRepository,
    private readonly coupons: CouponRepository,
    private readonly ledger: LedgerService,
    private readonly audit: DeliveryAuditRepository,
  ) {
    this.statusMap = new StatusMap(config.statusMap);
  }

  /**
   * @param request timing and correlation of the delivery (deadline starts at `receivedAt`).
   * @throws DomainException BATCH_CONFLICT (409); DeadlineExceededError and PostgreSQL errors for
   *   transient trouble (answered 503); nothing is committed when anything throws.
   */
  async process(batch: ParsedBatch, request: CallbackRequestState): Promise<CallbackResult> {
    const deadline = request.receivedAt + this.config.callbackDeadlineMs;
    return this.transactions.run(
      async (tx) => {
        const claim = await this.applyClaimed(tx, batch);
        const outcome = claim === 'duplicate' ? DeliveryOutcome.DUPLICATE : DeliveryOutcome.PROCESSED;
        await this.recordAttempt(tx, batch, request, outcome);
        return { processed: batch.couponCount, duplicate: claim === 'duplicate' };
      },
      { deadline },
    );
  }

  /**
   * The apply step of {@link process} inside the caller's transaction `tx` (also used by the
   * inbox workers and the quarantine replay): claims the batch id with its payload hash and, when
   * new, applies every coupon (CONTRACT §4 steps 4–5). Records no delivery attempt.
   * @returns `claimed` (applied now) or `duplicate` (the same body was applied before: nothing done).
   * @throws DomainException BATCH_CONFLICT when the batch id was applied with another body.
   */
  async applyClaimed(tx: Tx, batch: ParsedBatch): Promise<'claimed' | 'duplicate'> {
    return (await this.applySyntheticBatch(tx, batch, SnapshotSource.CALLBACK)).claim;
  }

  /**
   * Applies a batch inside the caller's transaction `tx` with the settlement rules of `source`:
   * a callback batch, or a synthetic one (a coupon read from SportAPI, `poll:<coupon_code>:<sha256>`,
   * or an operator's resolution; CONTRACT §9) with the same steps as a callback (claim the batch
   * id, lock, decide, store, post) but the rules of an authoritative source. No delivery attempt
   * is recorded.
   * @returns the claim (`duplicate`: the same batch was applied before, nothing was done) and the
   *   transition of each coupon (empty unless claimed).
   * @throws DomainException BATCH_CONFLICT when the batch id exists with another payload hash.
   */
  async applySyntheticBatch(
    tx: Tx,
    batch: ParsedBatch,
    source: SnapshotSource,
  ): Promise<{ claim: Exclude<BatchClaim, 'conflict'>; transitions: Map<string, TransitionName> }> {
    const claim = await this.batches.claim(tx, batch);
    if (claim === 'conflict') {
      throw new DomainException(
        ErrorCode.BATCH_CONFLICT,
        `batch ${batch.batchId} was delivered before with a different body`,
      );
    }
    const transitions = claim === 'claimed' ? await this.applyCoupons(tx, batch, source) : new Map();
    return { claim, transitions };
  }

  private async applyCoupons(
    tx: Tx,
    batch: ParsedBatch,
    source: SnapshotSource = SnapshotSource.CALLBACK,
  ): Promise<Map<string, TransitionName>> {
    const ordered = [...batch.coupons].sort((a, b) =>
      a.couponCode < b.couponCode ? -1 : a.couponCode > b.couponCode ? 1 : 0,
    );
    const locked = new Map(
      (
        await this.coupons.lockForBatch(
          tx,
          ordered.map((c) => c.couponCode),
        )
      ).map((row) => [row.couponCode, row]),
    );
    const states: (CouponSettlementState & { couponCode: string })[] = [];
    const snapshots: SnapshotRow[] = [];
    const bets: BetRow[] = [];
    const ops: PostOperation[] = [];
    const transitions = new Map<string, TransitionName>();
    for (const coupon of ordered) {
      const current = locked.get(coupon.couponCode);
      if (!current) throw new Error(`coupon ${coupon.couponCode} was not locked`);
      const decision = decideSettlement(current, coupon, this.statusMap.kindOf(coupon.status), source);
      transitions.set(coupon.couponCode, decision.transition);
      if (!sameSettlementState(current, decision.state))
        states.push({ ...decision.state, couponCode: coupon.couponCode });
      snapshots.push({
        couponCode: coupon.couponCode,
        status: coupon.status,
        realWin: coupon.realWin,
        applied: decision.applied,
        transition: decision.transition,
        generation: decision.state.generation,
        operations: decision.operations,
        payload: coupon.payload,
      });
      if (decision.applied) {
        for (const e of coupon.events)
          bets.push({ couponCode: coupon.couponCode, uuid: e.uuid, status: e.status, payload: e.payload });
      }
      if (decision.operations.length && current.accountId !== null && current.currency !== null) {
        ops.push(
          ...settlementPostOperations(
            coupon.couponCode,
            current.accountId,
            current.currency,
            batch.batchId,
            decision.operations,
          ),
        );
      }
    }
    await this.coupons.insertSnapshots(tx, batch.batchId, snapshots, batch.losslessNumbers);
    await this.coupons.saveStates(tx, batch.batchId, states);
    await this.coupons.upsertBets(tx, batch.batchId, bets, batch.losslessNumbers);
    await this.ledger.post(tx, ops);
    return transitions;
  }

  private async recordAttempt(
    tx: Tx,
    batch: ParsedBatch,
    request: CallbackRequestState,
    outcome: DeliveryOutcome,
  ): Promise<void> {
    await this.audit.insertAttempt(tx, {
      batchId: batch.batchId,
      requestId: request.requestId,
      receivedAt: new Date(request.receivedAt),
      outcome,
      httpStatus: 200,
      errorCode: null,
      couponCount: batch.couponCount,
      durationMs: Date.now() - request.receivedAt,
      payloadHash: batch.payloadHash,
    });
  }
}
