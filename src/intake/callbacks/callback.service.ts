import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { INBOX_CONFIG } from '../inbox/inbox.config.js';
import type { InboxConfig } from '../inbox/inbox.config.js';
import { MONEY_CONFIG } from '../../core/ledger/money.config.js';
import type { MoneyConfig } from '../../core/ledger/money.config.js';
import { DeadlineExceededError, TransactionRunner } from '../../platform/database/transaction.js';
import { DeliveryAttemptRepository } from '../../platform/deliveries/delivery-attempt.repository.js';
import { DeliveryOutcome } from '../../platform/deliveries/delivery.types.js';
import { InboxService } from '../inbox/inbox.service.js';
import { RecentSet } from '../../platform/common/recent-set.js';
import { ParsedBatch } from '../../core/settlement/parsed-batch.js';
import { SnapshotSource } from '../../core/settlement-rules/settlement.types.js';
import { SettlementService } from '../../core/settlement/settlement.service.js';
import { batchIdHint } from '../../core/settlement/batch-parser.js';
import { parseDelivery } from './callback-body.parser.js';
import type { CallbackRequestState } from './callback-request.js';
import { tracedSync } from '../../platform/observability/tracing.js';

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
 * verified and, in inline mode, applies it in ONE transaction ({@link SettlementService.apply});
 * in inbox mode, or when earlier inbox rows of its coupons are pending, commits it to the inbox
 * instead ({@link InboxService.accept}). The caller answers 200 only after these return, i.e.
 * after COMMIT. docs/architecture.md walks one batch through it.
 */
@Injectable()
export class CallbackService {
  /**
   * Payload hashes of the batches this process committed lately (oldest first, at most
   * {@link RECENT_BATCHES}): only those are looked up before parsing; any other redelivery is
   * recognised by the claim.
   */
  private readonly recentHashes = new RecentSet(RECENT_BATCHES);

  constructor(
    @Inject(INBOX_CONFIG) private readonly inboxConfig: InboxConfig,
    @Inject(MONEY_CONFIG) private readonly money: MoneyConfig,
    private readonly transactions: TransactionRunner,
    private readonly settlement: SettlementService,
    private readonly attempts: DeliveryAttemptRepository,
    private readonly inbox: InboxService,
  ) {}

  /**
   * A delivery whose signature was verified: its raw body and timing on `request` (the deadline
   * starts at `receivedAt`). Notes `payloadHash`, `batchId` and `couponCount` on `request` for the
   * audit of a failure.
   * @throws DomainException MALFORMED_JSON / VALIDATION_FAILED (400), BATCH_CONFLICT (409);
   *   DeadlineExceededError and PostgreSQL errors for transient trouble (503); nothing is
   *   committed when anything throws.
   */
  async receive(request: CallbackRequestState): Promise<CallbackResult> {
    if (this.inboxConfig.callbackMode === 'inbox') return this.inbox.accept(this.parse(request), request);
    // Under a burst of large batches work queues behind other work; a request that has already
    // used three quarters of its deadline is answered 503 at once instead of being parsed.
    if (Date.now() - request.receivedAt > this.transactions.callbackDeadlineMs * 0.75)
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
    return tracedSync('callback.parse', () => parseDelivery(request, this.money.currencies.maxMinorUnits));
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
    const statement = this.attempts.insertForCommittedBatchStatement({
      requestId: request.requestId,
      receivedAt: new Date(request.receivedAt),
      outcome: DeliveryOutcome.DUPLICATE,
      httpStatus: 200,
      errorCode: null,
      durationMs: Date.now() - request.receivedAt,
      payloadHash,
      traceId: request.traceId ?? null,
    });
    try {
      const { committed } = await this.transactions.run((tx) => tx.commitWith({ committed: statement }), {
        startedAt: request.receivedAt,
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
   * Applies a parsed, validated batch in one transaction (CONTRACT §4), inline: the claim and the
   * coupons' locks, then the writes, the attempt, the posting and COMMIT (two round trips).
   * @returns the result, or `inbox_pending` (nothing written) when pending inbox rows hold the
   *   batch id or a coupon: the caller hands the delivery to the inbox (§4 step 5).
   * @throws DomainException BATCH_CONFLICT; LedgerException; DeadlineExceededError, settlement hook
   *   and PostgreSQL errors for transient trouble; nothing is committed when anything throws.
   */
  async process(
    batch: ParsedBatch,
    request: CallbackRequestState,
  ): Promise<CallbackResult | 'inbox_pending'> {
    const delivery = { requestId: request.requestId, receivedAt: request.receivedAt };
    const result = await this.transactions.run(
      (tx) => this.settlement.apply(tx, batch, { source: SnapshotSource.CALLBACK, delivery }),
      { startedAt: request.receivedAt },
    );
    if (result.claim === 'inbox_pending') return 'inbox_pending';
    return { processed: batch.couponCount, duplicate: result.claim === 'duplicate' };
  }
}
