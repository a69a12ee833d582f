import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '../config/configuration.js';
import type { AppConfig } from '../config/configuration.js';
import { DomainException, ErrorCode } from '../common/domain.exception.js';
import { DeadlineExceededError, StatementGroup, TransactionRunner, Tx } from '../database/transaction.js';
import { BatchWrites, CouponRepository } from '../coupons/coupon.repository.js';
import { LedgerService } from '../ledger/ledger.service.js';
import type { Posting } from '../ledger/ledger.types.js';
import { SnapshotSource, TransitionName } from '../settlement/rules/settlement.types.js';
import { StatusMap } from '../settlement/rules/status-map.js';
import { BatchClaim, BatchRepository, CLAIMED_BY_THIS_TRANSACTION } from '../settlement/batch.repository.js';
import { orderedCoupons, settleBatch } from '../settlement/batch-settlement.js';
import { batchIdHint, parseDelivery } from '../settlement/batch-parser.js';
import type { CallbackRequestState } from './callback-request.js';
import { attemptValues, DeliveryAttemptRow } from '../deliveries/delivery-attempt.repository.js';
import { DeliveryOutcome } from '../deliveries/delivery.types.js';
import { InboxService } from '../inbox/inbox.service.js';
import { ParsedBatch } from '../settlement/parsed-batch.js';
import { RecentSet } from '../common/recent-set.js';

/** What the callback answers after COMMIT (CONTRACT §5); `accepted`: committed to the inbox. */
export interface CallbackResult {
  processed: number;
  duplicate: boolean;
  accepted?: boolean;
}

/** How many payload hashes of committed batches a process remembers (about 1 MB). */
const RECENT_BATCHES = 10_000;

/**
 * The callback's service (CONTRACT §4): {@link receive} takes a delivery whose signature was
 * verified and, in inline mode, applies it in ONE transaction ({@link process}); in inbox mode, or
 * when earlier inbox rows of its coupons are pending, commits it to the inbox instead
 * ({@link InboxService.accept}). {@link applyClaimed} and {@link applySyntheticBatch} are the same
 * apply step inside a caller's transaction (inbox workers, quarantine replays, reconciliation).
 * The caller answers 200 only after these return, i.e. after COMMIT. docs/architecture.md walks
 * one batch through it.
 */
@Injectable()
export class CallbackService {
  private readonly statusMap: StatusMap;
  /**
   * Payload hashes of the batches this process committed lately (oldest first, at most
   * {@link RECENT_BATCHES}): only those are looked up before parsing; any other redelivery is
   * recognised by the claim.
   */
  private readonly recentHashes = new RecentSet(RECENT_BATCHES);
  /** Minor units of a registered coupon's currency (CONTRACT §3). */
  private readonly minorUnitsOf = (currency: string): number => this.config.currencies.minorUnits(currency);

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly transactions: TransactionRunner,
    private readonly batches: BatchRepository,
    private readonly coupons: CouponRepository,
    private readonly ledger: LedgerService,
    private readonly inbox: InboxService,
  ) {
    this.statusMap = new StatusMap(config.statusMap);
  }

  /**
   * A delivery whose signature was verified: its raw body and timing on `request` (the deadline
   * starts at `receivedAt`). Notes `payloadHash`, `batchId` and `couponCount` on `request` for the
   * audit of a failure.
   * @throws DomainException MALFORMED_JSON / VALIDATION_FAILED (400), BATCH_CONFLICT (409);
   *   DeadlineExceededError and PostgreSQL errors for transient trouble (503); nothing is
   *   committed when anything throws.
   */
  async receive(request: CallbackRequestState): Promise<CallbackResult> {
    if (this.config.callbackMode === 'inbox') return this.inbox.accept(this.parse(request), request);
    // Under a burst of large batches work queues behind other work; a request that has already
    // used three quarters of its deadline is answered 503 at once instead of being parsed.
    if (Date.now() - request.receivedAt > this.config.callbackDeadlineMs * 0.75)
      throw new DeadlineExceededError();
    const rawBody = request.rawBody ?? Buffer.alloc(0);
    request.payloadHash = createHash('sha256').update(rawBody).digest('hex');
    if (this.recentHashes.has(request.payloadHash)) {
      const duplicate = await this.committedDuplicate(request, request.payloadHash);
      if (duplicate) return duplicate;
    }
    const batch = this.parse(request);
    const result = await this.process(batch, request);
    if (result === 'inbox_pending') return this.inbox.accept(batch, request);
    this.recentHashes.add(request.payloadHash);
    return result;
  }

  private parse(request: CallbackRequestState): ParsedBatch {
    return parseDelivery(request, this.config.currencies.maxMinorUnits);
  }

  /**
   * A byte-identical redelivery of a batch this process committed lately, recognised by one index
   * lookup on the payload hash before the body is parsed, which also records its `duplicate`
   * delivery attempt (CONTRACT §4 step 4, §8); undefined when no batch has this hash.
   */
  private async committedDuplicate(
    request: CallbackRequestState,
    payloadHash: string,
  ): Promise<CallbackResult | undefined> {
    const statement = this.batches.committedDuplicateStatement({
      requestId: request.requestId,
      receivedAt: new Date(request.receivedAt),
      outcome: DeliveryOutcome.DUPLICATE,
      httpStatus: 200,
      errorCode: null,
      durationMs: Date.now() - request.receivedAt,
      payloadHash,
    });
    try {
      const { committed } = await this.transactions.run((tx) => tx.commitWith({ committed: statement }), {
        deadline: request.receivedAt + this.config.callbackDeadlineMs,
      });
      const batch = committed.rows[0];
      if (!batch) return undefined;
      request.batchId = batch.batchId;
      request.couponCount = batch.couponCount;
      return { processed: batch.couponCount, duplicate: true };
    } catch (err) {
      request.batchId = batchIdHint(request.rawBody ?? Buffer.alloc(0));
      throw err;
    }
  }

  /**
   * Applies a parsed, validated batch in one transaction (CONTRACT §4): a group that claims the
   * batch id and locks its coupons; the decisions (§6); a group that writes the rows and the
   * attempt, posts (§7) and COMMITs. A known batch id: duplicate (same hash) or 409.
   * @returns the result, or `inbox_pending` (nothing written) when pending inbox rows hold the
   *   batch id or a coupon: the caller hands the delivery to the inbox (§4 step 5).
   * @throws DomainException BATCH_CONFLICT; LedgerException; DeadlineExceededError and PostgreSQL
   *   errors for transient trouble; nothing is committed when anything throws.
   */
  async process(
    batch: ParsedBatch,
    request: CallbackRequestState,
  ): Promise<CallbackResult | 'inbox_pending'> {
    const ordered = orderedCoupons(batch);
    const codes = ordered.map((c) => c.coupon.couponCode);
    return this.transactions.run(
      async (tx) => {
        const { claim, locked } = await tx.send({
          batchLock: this.batches.batchIdLockStatement(batch.batchId),
          claim: this.batches.claimStatement(batch, codes, { checkInbox: true }),
          ...this.coupons.lockGroup(codes, CLAIMED_BY_THIS_TRANSACTION),
        });
        const { claimed, inboxPending } = claim.rows[0];
        if (inboxPending) return 'inbox_pending';
        if (!claimed) return this.redelivered(tx, batch, request);
        const settlement = settleBatch(
          batch,
          ordered,
          new Map((await this.coupons.allLocked(tx, codes, locked.rows)).map((r) => [r.couponCode, r])),
          (status) => this.statusMap.kindOf(status),
          SnapshotSource.CALLBACK,
          this.minorUnitsOf,
        );
        const attempt = this.attempt(batch, request, DeliveryOutcome.PROCESSED);
        await tx.commitWith(this.writeStatements(tx, settlement.writes, settlement.postings, attempt));
        return { processed: batch.couponCount, duplicate: false };
      },
      { deadline: request.receivedAt + this.config.callbackDeadlineMs },
    );
  }

  /** The batch id was committed before: duplicate (same hash, attempt recorded) or 409. */
  private async redelivered(
    tx: Tx,
    batch: ParsedBatch,
    request: CallbackRequestState,
  ): Promise<CallbackResult> {
    const { stored } = await tx.commitWith({
      stored: this.batches.redeliveryStatement(this.attempt(batch, request, DeliveryOutcome.DUPLICATE)),
    });
    if (stored.rows[0]?.payload_hash !== batch.payloadHash) {
      throw new DomainException(
        ErrorCode.BATCH_CONFLICT,
        `batch ${batch.batchId} was delivered before with a different body`,
      );
    }
    return { processed: batch.couponCount, duplicate: true };
  }

  /**
   * The apply step inside the caller's transaction `tx` (inbox workers, quarantine replay), with
   * the callback's settlement rules; see {@link applySyntheticBatch} (`actor`: a replay's key name;
   * `postingsInto`: the inbox workers' postings of several batches, posted together).
   * @returns `claimed` (applied now) or `duplicate` (the same body was applied before: nothing done).
   * @throws DomainException BATCH_CONFLICT when the batch id was applied with another body.
   */
  async applyClaimed(
    tx: Tx,
    batch: ParsedBatch,
    actor: string | null = null,
    postingsInto?: Posting[],
  ): Promise<BatchClaim> {
    return (await this.applySyntheticBatch(tx, batch, SnapshotSource.CALLBACK, actor, postingsInto)).claim;
  }

  /**
   * Applies a batch inside the caller's transaction `tx` with the rules of `source` (a callback
   * batch, or a synthetic one of §9: a coupon read, an operator's resolution): the steps of
   * {@link process} (a group that claims the batch id and locks its coupons, then one that writes
   * and posts), without a delivery attempt and without COMMIT. `actor`: the name of the
   * partner API key whose request applies it, stored with the batch id (null: no key). With
   * `postingsInto` the batch's postings are added to it instead of posted: the caller posts them,
   * with those of other batches of disjoint coupons, in one posting statement before COMMIT
   * (accounts locked once, in order: docs/inbox-mode.md#workers).
   * @returns the claim (`duplicate`: applied before, nothing done) and each coupon's transition.
   * @throws DomainException BATCH_CONFLICT (the batch id with another payload hash); LedgerException.
   */
  async applySyntheticBatch(
    tx: Tx,
    batch: ParsedBatch,
    source: SnapshotSource,
    actor: string | null = null,
    postingsInto?: Posting[],
  ): Promise<{ claim: BatchClaim; transitions: Map<string, TransitionName> }> {
    const ordered = orderedCoupons(batch);
    const codes = ordered.map((c) => c.coupon.couponCode);
    const { claim, stored, locked } = await tx.send({
      claim: this.batches.claimStatement(batch, codes, { checkInbox: false, actor }),
      stored: this.batches.storedHashStatement(batch.batchId),
      ...this.coupons.lockGroup(codes, CLAIMED_BY_THIS_TRANSACTION),
    });
    if (!claim.rows[0].claimed) {
      if (stored.rows[0]?.payload_hash !== batch.payloadHash) {
        throw new DomainException(
          ErrorCode.BATCH_CONFLICT,
          `batch ${batch.batchId} was delivered before with a different body`,
        );
      }
      return { claim: 'duplicate', transitions: new Map() };
    }
    const settlement = settleBatch(
      batch,
      ordered,
      new Map((await this.coupons.allLocked(tx, codes, locked.rows)).map((r) => [r.couponCode, r])),
      (status) => this.statusMap.kindOf(status),
      source,
      this.minorUnitsOf,
    );
    if (postingsInto) {
      postingsInto.push(...settlement.postings);
      await tx.send(this.writeStatements(tx, settlement.writes, [], null));
    } else await tx.send(this.writeStatements(tx, settlement.writes, settlement.postings, null));
    return { claim: 'claimed', transitions: settlement.transitions };
  }

  /**
   * The statements that write a settled batch, the same for every caller: snapshots, states and
   * bets (and the delivery attempt, when given) in one statement, then the ledger's posting, last
   * before COMMIT so the house account's row lock is held as briefly as possible.
   */
  private writeStatements(
    tx: Tx,
    writes: BatchWrites,
    postings: Posting[],
    attempt: DeliveryAttemptRow | null,
  ): StatementGroup {
    const batch = this.coupons.applyBatchStatement(writes, attempt ? attemptValues(attempt) : null);
    return postings.length ? { batch, ...this.ledger.postingStatements(tx, postings) } : { batch };
  }

  private attempt(
    batch: ParsedBatch,
    request: CallbackRequestState,
    outcome: DeliveryOutcome,
  ): DeliveryAttemptRow {
    return {
      batchId: batch.batchId,
      requestId: request.requestId,
      receivedAt: new Date(request.receivedAt),
      outcome,
      httpStatus: 200,
      errorCode: null,
      couponCount: batch.couponCount,
      durationMs: Date.now() - request.receivedAt,
      payloadHash: batch.payloadHash,
    };
  }
}
