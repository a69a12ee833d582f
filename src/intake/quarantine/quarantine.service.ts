import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import type { Actor } from '../../platform/auth/actor.js';
import { DomainException, ErrorCode } from '../../platform/common/domain.exception.js';
import { dataExceptionRefusal } from '../../platform/database/pg-errors.js';
import { MONEY_CONFIG } from '../../core/ledger/money.config.js';
import type { MoneyConfig } from '../../core/ledger/money.config.js';
import { TransactionRunner, Tx } from '../../platform/database/transaction.js';
import { OperatorActionLog } from '../../platform/operator-actions/operator-action-log.js';
import type { ActionSpec } from '../../platform/operator-actions/operator-actions.types.js';
import { parseBatch } from '../../core/settlement/batch-parser.js';
import { SnapshotSource } from '../../core/settlement-rules/settlement.types.js';
import { SettlementService } from '../../core/settlement/settlement.service.js';
import { DeliveryAttemptRepository } from '../../platform/deliveries/delivery-attempt.repository.js';
import { DeliveryOutcome } from '../../platform/deliveries/delivery.types.js';
import { InboxRepository } from '../inbox/inbox.repository.js';
import { MetricsRegistry } from '../../platform/observability/metrics-registry.js';
import { QuarantineRepository, QuarantineSummary } from './quarantine.repository.js';

/** A page of the quarantine, newest first; `nextCursor` is null on the last page. */
export interface QuarantinePage {
  items: QuarantineSummary[];
  nextCursor: string | null;
}

/** A replay that went through: applied now, or the batch was applied before (nothing done). */
export interface ReplayResult {
  outcome: 'processed' | 'duplicate';
  entry: QuarantineSummary;
}

/** Metric names of the quarantine (`ops/alerts.yml`, docs/operating.md#metrics). */
export const QUARANTINE_METRIC = {
  notReplayed: 'settlement_quarantine_not_replayed',
  oldestNotReplayedAge: 'settlement_quarantine_oldest_not_replayed_age_seconds',
} as const;

const notFound = (id: string) => new DomainException(ErrorCode.NOT_FOUND, `quarantine entry ${id} not found`);

/**
 * The quarantine of signed bodies that were refused (400/409) or whose inbox application failed
 * (CONTRACT §8): a paginated list without bodies, one entry with its bytes, and the replay.
 */
@Injectable()
export class QuarantineService implements OnModuleInit {
  constructor(
    @Inject(MONEY_CONFIG) private readonly money: MoneyConfig,
    private readonly transactions: TransactionRunner,
    private readonly quarantine: QuarantineRepository,
    private readonly inbox: InboxRepository,
    private readonly settlement: SettlementService,
    private readonly attempts: DeliveryAttemptRepository,
    private readonly actions: OperatorActionLog,
    private readonly metrics: MetricsRegistry,
  ) {}

  /** The quarantine gauges of `/metrics`, counted at scrape time over the unreplayed index. */
  onModuleInit(): void {
    this.metrics.scrapedGauges(
      'quarantine gauges',
      () =>
        this.transactions.run((tx) => this.quarantine.notReplayed(tx), {
          deadline: Date.now() + 1000,
          retries: 0,
        }),
      [
        {
          name: QUARANTINE_METRIC.notReplayed,
          help: 'Quarantined bodies not replayed yet (CONTRACT §8), counted at scrape time',
          value: (q) => q.count,
        },
        {
          name: QUARANTINE_METRIC.oldestNotReplayedAge,
          help: 'Seconds since the oldest quarantined body not replayed yet was received (0 when none)',
          value: (q) => q.oldestAgeSeconds,
        },
      ],
    );
  }

  /** Newest first, `limit` rows with an id below `cursor`. */
  async list(limit: number, cursor?: string): Promise<QuarantinePage> {
    const rows = await this.transactions.run((tx) => this.quarantine.list(tx, limit + 1, cursor));
    const items = rows.slice(0, limit);
    return { items, nextCursor: rows.length > limit ? items[items.length - 1].id : null };
  }

  /**
   * One entry with its body (as UTF-8 text and as base64 of the exact bytes).
   * @throws DomainException NOT_FOUND (404).
   */
  async get(id: string): Promise<QuarantineSummary & { body: string; bodyBase64: string }> {
    const row = await this.transactions.run((tx) => this.quarantine.find(tx, id));
    if (!row) throw notFound(id);
    const { body, ...summary } = row;
    return { ...summary, body: body.toString('utf8'), bodyBase64: body.toString('base64') };
  }

  /**
   * Re-runs the stored bytes through the pipeline (CONTRACT §8) in ONE transaction (parse,
   * validate, {@link SettlementService.apply}: safe to repeat), recording the outcome on the
   * entry and as the attempt `quarantine-replay:<id>`, with `actor` (the key's name), and as an
   * operator action (docs/api.md#operator-actions) in the same transaction (a refusal after it).
   * Inbox interplay and one-at-a-time replays: docs/api.md#quarantine.
   * @returns `processed` (applied now) or `duplicate` (applied before, nothing done).
   * @throws DomainException NOT_FOUND; REPLAY_REJECTED (422) and BATCH_CONFLICT (409), both
   *   recorded first; COUPON_INBOX_PENDING (409) and transient errors (503), recording nothing.
   */
  async replay(id: string, actor: Actor): Promise<ReplayResult> {
    const spec: ActionSpec = { action: 'replay', targetKind: 'quarantine', targetId: id, details: {} };
    return this.actions.perform(actor, spec, () => this.replayLogged(id, actor, spec));
  }

  /** {@link replay} with its operator action `spec`, whose details it fills in as it learns them. */
  private async replayLogged(id: string, actor: Actor, spec: ActionSpec): Promise<ReplayResult> {
    const startedAt = Date.now();
    let batchId: string | null = null;
    let couponCount: number | null = null;
    try {
      return await this.transactions.run(
        async (tx) => {
          await this.actions.begin(tx, actor);
          const row = await this.quarantine.find(tx, id, true);
          if (!row) throw notFound(id);
          batchId = row.batchId;
          spec.details = { batchId };
          const batch = parseBatch(row.body, this.money.currencies.maxMinorUnits);
          batchId = batch.batchId;
          spec.details = { batchId };
          couponCount = batch.couponCount;
          let outcome: 'processed' | 'duplicate';
          const queued = await this.inbox.findByBatchId(tx, batch.batchId);
          if (queued && queued.payloadHash !== batch.payloadHash) throw this.conflict(batch.batchId);
          if (queued?.status === 'pending') {
            outcome = 'duplicate';
          } else {
            // Pending inbox batches of its coupons arrived (and were answered 200) first.
            const pending = await this.inbox.pendingWithCoupons(
              tx,
              batch.coupons.map((c) => c.couponCode),
            );
            if (pending > 0) {
              throw new DomainException(
                ErrorCode.COUPON_INBOX_PENDING,
                `the inbox holds ${pending} pending batch(es) of this batch's coupons; replay after they are applied`,
              );
            }
            const { claim } = await this.settlement.apply(tx, batch, {
              source: SnapshotSource.CALLBACK,
              actor: actor.name,
            });
            outcome = claim === 'claimed' ? 'processed' : 'duplicate';
            if (queued?.status === 'quarantined')
              await tx.send({ done: this.inbox.markDoneStatement([{ id: queued.id, outcome }]) });
          }
          await this.recordAttempt(tx, id, {
            batchId,
            couponCount,
            payloadHash: row.payloadHash,
            startedAt,
            outcome: outcome === 'processed' ? DeliveryOutcome.PROCESSED : DeliveryOutcome.DUPLICATE,
            httpStatus: 200,
            errorCode: null,
            actor: actor.name,
          });
          await this.actions.ok(tx, actor, { ...spec, details: { batchId, outcome } });
          return { outcome, entry: await this.quarantine.recordReplay(tx, id, outcome, actor.name) };
        },
        { startedAt },
      );
    } catch (caught) {
      // A value the database cannot hold is as refused as a validation failure (the callback's 400).
      const err = dataExceptionRefusal(caught, 'a value in the body cannot be stored') ?? caught;
      if (
        !(err instanceof DomainException) ||
        err.code === ErrorCode.NOT_FOUND ||
        err.code === ErrorCode.COUPON_INBOX_PENDING
      )
        throw err;
      const conflict = err.code === ErrorCode.BATCH_CONFLICT;
      const answer = conflict
        ? err
        : new DomainException(
            ErrorCode.REPLAY_REJECTED,
            `the quarantined body is still refused: ${err.message}`,
            err.fields,
          );
      await this.transactions.run(
        async (tx) => {
          const row = await this.quarantine.find(tx, id, true);
          if (!row) throw notFound(id);
          await this.recordAttempt(tx, id, {
            batchId,
            couponCount,
            payloadHash: row.payloadHash,
            startedAt,
            outcome: conflict ? DeliveryOutcome.CONFLICT : DeliveryOutcome.REJECTED,
            httpStatus: conflict ? 409 : 422,
            errorCode: answer.code,
            actor: actor.name,
          });
          await this.quarantine.recordReplay(tx, id, conflict ? 'conflict' : 'rejected', actor.name);
        },
        { deadline: Date.now() + 2000 },
      );
      throw answer;
    }
  }

  private conflict(batchId: string): DomainException {
    return new DomainException(
      ErrorCode.BATCH_CONFLICT,
      `batch ${batchId} was accepted before with a different body`,
    );
  }

  private recordAttempt(
    tx: Tx,
    id: string,
    a: {
      batchId: string | null;
      couponCount: number | null;
      payloadHash: string;
      startedAt: number;
      outcome: DeliveryOutcome;
      httpStatus: number;
      errorCode: string | null;
      actor: string;
    },
  ): Promise<void> {
    const attempt = this.attempts.insertStatement({
      batchId: a.batchId,
      requestId: `quarantine-replay:${id}`,
      receivedAt: new Date(a.startedAt),
      outcome: a.outcome,
      httpStatus: a.httpStatus,
      errorCode: a.errorCode,
      couponCount: a.couponCount,
      durationMs: Date.now() - a.startedAt,
      payloadHash: a.payloadHash,
      actor: a.actor,
    });
    return tx.send({ attempt }).then(() => undefined);
  }
}
