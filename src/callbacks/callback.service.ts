import { createHash } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG } from '../config/configuration.js';
import type { AppConfig } from '../config/configuration.js';
import { DomainException, ErrorCode } from '../common/domain.exception.js';
import { stringifyExactJson } from '../common/exact-json.js';
import type { CallbackRequestState } from '../common/request-context.js';
import { sqlStateOf } from '../database/pg-errors.js';
import {
  DeadlineExceededError,
  PipelinedTx,
  Statement,
  StatementExecutor,
  TransactionRunner,
  Tx,
} from '../database/transaction.js';
import { BatchWrites, CouponRepository, LockedCoupon } from '../coupons/coupon.repository.js';
import { settlementPostOperations } from '../coupons/coupons.service.js';
import { houseAccountId, operationRow, PostOperation } from '../ledger/ledger.service.js';
import { LEDGER_SQLSTATE, LedgerRepository } from '../ledger/ledger.repository.js';
import { decideSettlement, sameSettlementState } from '../settlement/decide-settlement.js';
import { SnapshotSource, TransitionName } from '../settlement/settlement.types.js';
import { StatusMap } from '../settlement/status-map.js';
import { SettlementMetrics } from '../observability/settlement-metrics.js';
import { OperationType } from '../ledger/entities/financial-operation.entity.js';
import { BatchClaim, BatchRepository, CommittedBatch } from './batch.repository.js';
import { batchIdHint, parseDelivery } from './callback-body.pipe.js';
import { attemptValues, DeliveryAttemptRow } from './delivery-audit.repository.js';
import { DeliveryOutcome } from './entities/delivery-attempt.entity.js';
import { ParsedBatch, ParsedCoupon } from './parsed-batch.js';

/** What the callback answers after COMMIT (CONTRACT §5). */
/**
 * Thrown by {@link CallbackService.receive} (inline mode) when the inbox holds a pending row with
 * the batch id or one of its coupons: the batch must queue behind it, so the caller hands the
 * delivery to the inbox instead (CONTRACT §4 step 5: per coupon, batches apply in arrival order).
 * Nothing was written.
 */
export class InboxPendingError extends Error {
  constructor(readonly batchId: string) {
    super(`batch ${batchId}: earlier inbox rows of its coupons are pending`);
  }
}

export interface CallbackResult {
  processed: number;
  duplicate: boolean;
}

/** How many payload hashes of committed batches a process remembers (about 1 MB). */
const RECENT_BATCHES = 10_000;

/** Ascending bytewise order of coupon codes (the lock order; `COLLATE "C"` in SQL). */
const byCode = (a: { couponCode: string }, b: { couponCode: string }) =>
  a.couponCode < b.couponCode ? -1 : a.couponCode > b.couponCode ? 1 : 0;

/** A coupon of a batch with its 1-based `position` in the body's `coupons` array. */
type OrderedCoupon = ParsedCoupon & { position: number };

/** The batch's coupons in the lock order (ascending `coupon_code`), each with its position. */
const orderedCoupons = (batch: ParsedBatch): OrderedCoupon[] =>
  batch.coupons.map((c, i) => ({ ...c, position: i + 1 })).sort(byCode);

/**
 * Applies one verified delivery in ONE transaction (CONTRACT §4). A byte-identical redelivery of
 * a batch this process committed lately is answered from one index lookup on the payload hash,
 * which also records its `duplicate` delivery attempt (§4 step 4, §8), before anything parses the
 * body (other redeliveries are recognised by the claim below, after parsing). Any other body is
 * parsed and validated (§3), then, on one connection in two rounds of statements sent back to back
 * (see {@link PipelinedTx}):
 *  1. BEGIN; claim the batch id with its payload hash (waiting on a concurrent delivery of the same
 *     id until the deadline; duplicate → nothing else; other body → 409); create the coupons never
 *     seen before and row-lock all of the batch's coupons in ascending `coupon_code` order;
 *  2. after the settlement transitions are decided in JavaScript (§6): every snapshot, the changed
 *     coupon states, the bets of applied snapshots and the delivery attempt in one statement; the
 *     financial operations of registered coupons in one more (§7: accounts locked in ascending id
 *     order, the house account's balance last touched just before COMMIT; unallocated coupons
 *     keep theirs on the snapshot until registration); COMMIT.
 * The caller answers 200 only after this returns, i.e. after COMMIT.
 */
@Injectable()
export class CallbackService {
  private readonly statusMap: StatusMap;
  private readonly knownHouseAccounts = new Set<string>();
  /**
   * Payload hashes of the batches this process committed lately (oldest first, at most
   * {@link RECENT_BATCHES}): only those are looked up before parsing. A body not in it is almost
   * always a new batch, so it goes straight to parsing and the claim, which still recognises a
   * redelivery this process does not know (committed by another replica or before a restart).
   */
  private readonly recentHashes = new Set<string>();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly transactions: TransactionRunner,
    private readonly batches: BatchRepository,
    private readonly coupons: CouponRepository,
    private readonly ledger: LedgerRepository,
    private readonly metrics: SettlementMetrics,
  ) {
    this.statusMap = new StatusMap(config.statusMap);
  }

  /**
   * A delivery whose signature was verified: its raw body and timing on `request` (the deadline
   * starts at `receivedAt`). Notes `payloadHash`, `batchId` and `couponCount` on `request` for the
   * audit of a failure.
   * @throws DomainException MALFORMED_JSON / VALIDATION_FAILED (400), BATCH_CONFLICT (409);
   *   DeadlineExceededError and PostgreSQL errors for transient trouble (answered 503); nothing is
   *   committed when anything throws.
   */
  async receive(request: CallbackRequestState): Promise<CallbackResult> {
    // Under a burst of large batches work queues behind other work; a request that has already
    // used three quarters of its deadline is answered 503 at once instead of being parsed.
    if (Date.now() - request.receivedAt > this.config.callbackDeadlineMs * 0.75)
      throw new DeadlineExceededError();
    const rawBody = request.rawBody ?? Buffer.alloc(0);
    request.payloadHash = createHash('sha256').update(rawBody).digest('hex');
    const payloadHash = request.payloadHash;
    if (this.recentHashes.has(payloadHash)) {
      let committed: CommittedBatch | undefined;
      try {
        committed = await this.committedDuplicate(request, payloadHash);
      } catch (err) {
        request.batchId = batchIdHint(rawBody);
        throw err;
      }
      if (committed) {
        request.batchId = committed.batchId;
        request.couponCount = committed.couponCount;
        return { processed: committed.couponCount, duplicate: true };
      }
    }
    const result = await this.process(parseDelivery(request, this.config.amountScale), request);
    this.remember(payloadHash);
    return result;
  }

  /** Notes a committed batch's payload hash, forgetting the oldest past {@link RECENT_BATCHES}. */
  private remember(payloadHash: string): void {
    this.recentHashes.delete(payloadHash);
    this.recentHashes.add(payloadHash);
    if (this.recentHashes.size > RECENT_BATCHES) {
      this.recentHashes.delete(this.recentHashes.values().next().value as string);
    }
  }

  /** The committed batch with this payload hash, after recording the `duplicate` attempt; or undefined. */
  private async committedDuplicate(
    request: CallbackRequestState,
    payloadHash: string,
  ): Promise<CommittedBatch | undefined> {
    const { rows } = await this.transactions.queryOnce(
      this.batches.committedDuplicateStatement({
        requestId: request.requestId,
        receivedAt: new Date(request.receivedAt),
        outcome: DeliveryOutcome.DUPLICATE,
        httpStatus: 200,
        errorCode: null,
        durationMs: Date.now() - request.receivedAt,
        payloadHash,
      }),
    );
    return rows[0] as CommittedBatch | undefined;
  }

  /**
   * Applies a parsed and validated batch (see the class comment).
   * @throws DomainException BATCH_CONFLICT (409); DeadlineExceededError and PostgreSQL errors for
   *   transient trouble (answered 503); nothing is committed when anything throws.
   */
  async process(batch: ParsedBatch, request: CallbackRequestState): Promise<CallbackResult> {
    const deadline = request.receivedAt + this.config.callbackDeadlineMs;
    const ordered = orderedCoupons(batch);
    const codes = ordered.map((c) => c.couponCode);
    try {
      return await this.transactions.runPipelined(
        async (tx) => {
          const untilDeadline = tx.timeouts(true);
          const afterClaim = tx.timeouts();
          const results = await tx.begin([
            ...untilDeadline,
            this.batches.batchIdLockStatement(batch.batchId),
            this.batches.claimStatement(batch, codes),
            ...afterClaim,
            this.coupons.insertClaimedCouponsStatement(codes),
            this.coupons.lockClaimedStatement(codes),
          ]);
          const claim = results[untilDeadline.length + 1];
          const locked = results[results.length - 1];
          // An inbox replica on this database holds an earlier batch of these coupons (or this
          // batch id) not applied yet: applying now would overtake it (CONTRACT §4 step 5).
          if (claim.rows[0].inbox_pending === true) throw new InboxPendingError(batch.batchId);
          if (claim.rows[0].claimed !== 'true') return this.redelivered(tx, batch, request);
          const rows = locked.rows as LockedCoupon[];
          return this.apply(tx, batch, request, ordered, new Map(rows.map((r) => [r.couponCode, r])));
        },
        { deadline },
      );
    } catch (err) {
      throw ledgerError(err);
    }
  }

  /** The batch id was committed before: duplicate (same hash, attempt recorded) or 409. */
  private async redelivered(
    tx: PipelinedTx,
    batch: ParsedBatch,
    request: CallbackRequestState,
  ): Promise<CallbackResult> {
    const results = await tx.commitWith([
      ...tx.timeouts(),
      this.batches.redeliveryStatement(this.attempt(batch, request, DeliveryOutcome.DUPLICATE)),
    ]);
    const stored = results[results.length - 1];
    if (stored.rows[0]?.payload_hash !== batch.payloadHash) {
      throw new DomainException(
        ErrorCode.BATCH_CONFLICT,
        `batch ${batch.batchId} was delivered before with a different body`,
      );
    }
    return { processed: batch.couponCount, duplicate: true };
  }

  private async apply(
    tx: PipelinedTx,
    batch: ParsedBatch,
    request: CallbackRequestState,
    ordered: OrderedCoupon[],
    locked: Map<string, LockedCoupon>,
  ): Promise<CallbackResult> {
    const { writes, ops } = this.settle(batch, ordered, locked, SnapshotSource.CALLBACK);
    const attempt = this.attempt(batch, request, DeliveryOutcome.PROCESSED);
    const results = await tx.commitWith([
      ...tx.timeouts(),
      ...this.writeStatements(tx, writes, ops, attemptValues(attempt)),
    ]);
    // Committed: count the financial operations the posting inserted.
    this.metrics.ledgerOperationsCommitted(postedTypes(results, ops));
    return { processed: batch.couponCount, duplicate: false };
  }

  /**
   * The apply step inside the caller's transaction `tx` (inbox workers, quarantine replay): claims
   * the batch id with its payload hash and, when new, applies every coupon with the callback's
   * settlement rules (CONTRACT §4 steps 4–5), with the very statements of the inline path. Records
   * no delivery attempt.
   * @returns `claimed` (applied now) or `duplicate` (the same body was applied before: nothing done).
   * @throws DomainException BATCH_CONFLICT when the batch id was applied with another body.
   */
  async applyClaimed(tx: Tx, batch: ParsedBatch): Promise<'claimed' | 'duplicate'> {
    return (await this.applySyntheticBatch(tx, batch, SnapshotSource.CALLBACK)).claim;
  }

  /**
   * Applies a batch inside the caller's transaction `tx` with the settlement rules of `source`:
   * a callback batch, or a synthetic one (a coupon read from SportAPI, `poll:<coupon_code>:<sha256>`,
   * or an operator's resolution; CONTRACT §9) with the same steps and the same statements as an
   * inline callback (claim the batch id; create and lock the coupons in ascending `coupon_code`
   * order; decide; store snapshots, states and bets; post the financial operations, players then
   * house accounts) but the rules of an authoritative source. No delivery attempt is recorded.
   * @returns the claim (`duplicate`: the same batch was applied before, nothing was done) and the
   *   transition of each coupon (empty unless claimed).
   * @throws DomainException BATCH_CONFLICT when the batch id exists with another payload hash;
   *   NOT_FOUND / CURRENCY_MISMATCH when the ledger refuses an operation (the transaction is
   *   aborted then; roll it back or to a savepoint).
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
    if (claim === 'duplicate') return { claim, transitions: new Map() };
    const ordered = orderedCoupons(batch);
    const codes = ordered.map((c) => c.couponCode);
    try {
      const rows = await this.coupons.lockForBatch(tx, codes);
      const { writes, ops, transitions } = this.settle(
        batch,
        ordered,
        new Map(rows.map((r) => [r.couponCode, r])),
        source,
      );
      const written = await tx.send(this.writeStatements(tx, writes, ops, null));
      const types = postedTypes(written, ops);
      if (types.length) tx.afterCommit(() => this.metrics.ledgerOperationsCommitted(types));
      return { claim, transitions };
    } catch (err) {
      throw ledgerError(err);
    }
  }

  /**
   * Decides each coupon's settlement transition (CONTRACT §6) with the rules of `source` from its
   * locked state: what the batch writes besides money, the financial operations of registered
   * coupons (§7; unallocated coupons keep theirs on the snapshot until registration) and each
   * coupon's transition. Pure: nothing is sent.
   */
  private settle(
    batch: ParsedBatch,
    ordered: OrderedCoupon[],
    locked: Map<string, LockedCoupon>,
    source: SnapshotSource,
  ): { writes: BatchWrites; ops: PostOperation[]; transitions: Map<string, TransitionName> } {
    const writes: BatchWrites = {
      batchId: batch.batchId,
      snapshots: [],
      states: [],
      payloadsJson: batch.payloadsAsSent
        ? null
        : stringifyExactJson(
            batch.coupons.map((c) => c.payload),
            batch.losslessNumbers,
          ),
    };
    const ops: PostOperation[] = [];
    const transitions = new Map<string, TransitionName>();
    for (const coupon of ordered) {
      const current = locked.get(coupon.couponCode);
      if (!current) throw new Error(`coupon ${coupon.couponCode} was not locked`);
      const decision = decideSettlement(current, coupon, this.statusMap.kindOf(coupon.status), source);
      transitions.set(coupon.couponCode, decision.transition);
      if (!sameSettlementState(current, decision.state))
        writes.states.push({ ...decision.state, couponCode: coupon.couponCode });
      writes.snapshots.push({
        couponCode: coupon.couponCode,
        position: coupon.position,
        status: coupon.status,
        realWin: coupon.realWin,
        applied: decision.applied,
        transition: decision.transition,
        generation: decision.state.generation,
        operations: decision.operations,
        eventStatuses: coupon.events.map((e) => e.status),
      });
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
    return { writes, ops, transitions };
  }

  /**
   * The statements that write a settled batch, the same for every caller: snapshots, states, bets
   * (and the delivery attempt `attempt`, when given) in one statement, then the ledger's.
   */
  private writeStatements(
    tx: StatementExecutor,
    writes: BatchWrites,
    ops: PostOperation[],
    attempt: unknown[] | null,
  ): Statement[] {
    const statements = [this.coupons.applyBatchStatement(writes, attempt)];
    if (ops.length) statements.push(...this.postStatements(tx, ops));
    return statements;
  }

  /**
   * The ledger statements of settlement operations (CONTRACT §7): house accounts created on first
   * use (remembered once committed), then the posting, run last before COMMIT so the house
   * account's row lock is held as briefly as possible.
   */
  private postStatements(tx: StatementExecutor, ops: PostOperation[]): Statement[] {
    const statements: Statement[] = [];
    const houses = [...new Set(ops.map((o) => o.currency))]
      .map((currency) => ({ id: houseAccountId(currency), currency }))
      .filter((h) => !this.knownHouseAccounts.has(h.id));
    if (houses.length) {
      statements.push(this.ledger.ensureHouseAccountsStatement(houses));
      tx.afterCommit(() => houses.forEach((h) => this.knownHouseAccounts.add(h.id)));
    }
    const rows = ops.map(operationRow);
    statements.push(
      this.ledger.postOperationsStatement(
        rows,
        ops.map((o) => houseAccountId(o.currency)),
        [...new Set(ops.map((o) => o.accountId))],
      ),
    );
    return statements;
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

/**
 * The types of the financial operations the posting statement inserted (its result is the last of
 * `results` when there were `ops`), for the ledger-operations counter (counted after COMMIT only).
 */
function postedTypes(results: { rows: unknown[] }[], ops: PostOperation[]): OperationType[] {
  if (!ops.length) return [];
  return (results[results.length - 1].rows[0] as { types: OperationType[] | null } | undefined)?.types ?? [];
}

/**
 * The ledger's refusals raised inside the posting statement, as the ledger service reports them
 * (CONTRACT §7): a missing account or another currency; other errors (a key collision included,
 * answered 503) are returned unchanged.
 */
function ledgerError(err: unknown): unknown {
  const state = sqlStateOf(err);
  const message = (err as Error).message;
  if (state === LEDGER_SQLSTATE.ACCOUNT_MISSING) return new DomainException(ErrorCode.NOT_FOUND, message);
  if (state === LEDGER_SQLSTATE.CURRENCY_MISMATCH)
    return new DomainException(ErrorCode.CURRENCY_MISMATCH, message);
  return err;
}
