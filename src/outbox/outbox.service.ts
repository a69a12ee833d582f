import { Inject, Injectable, OnModuleInit, Optional } from '@nestjs/common';
import type { Actor } from '../auth/actor.js';
import { ErrorCode } from '../common/domain.exception.js';
import { APP_CONFIG } from '../config/configuration.js';
import type { AppConfig } from '../config/configuration.js';
import { TransactionRunner, Tx } from '../database/transaction.js';
import { OperatorActionLog } from '../operator-actions/operator-action-log.js';
import type { ActionSpec } from '../operator-actions/operator-actions.types.js';
import type {
  OutboxEntryDetailView,
  OutboxEntryView,
  OutboxPageView,
  WalletStatusView,
} from '../wallet/dto/wallet.dto.js';
import { WalletOutboxEntryEntity } from '../wallet/entities/wallet-outbox-entry.entity.js';
import { OutboxRepository } from './outbox.repository.js';
import { OutboxWorker } from './outbox.worker.js';
import { WalletException } from '../wallet/wallet.exception.js';
import { WalletMetrics } from './outbox-metrics.js';
import type { OutboxStatus } from './outbox.types.js';

/** Page size of the outbox list when none is asked for. */
export const DEFAULT_PAGE_SIZE = 20;

/**
 * The wallet outbox for operators (docs/wallet.md): list and inspect rows, release a parked row
 * (`retry`), mark one settled by hand (`skip`), pause and resume all delivery. Each action is one
 * transaction that locks the row and records the key's name, and its operator action
 * (docs/api.md#operator-actions; a refusal after the rollback). Also feeds the outbox gauges.
 */
@Injectable()
export class WalletService implements OnModuleInit {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly transactions: TransactionRunner,
    private readonly outbox: OutboxRepository,
    private readonly metrics: WalletMetrics,
    private readonly actions: OperatorActionLog,
    @Optional() private readonly worker?: OutboxWorker,
  ) {}

  onModuleInit(): void {
    this.metrics.countOutboxWith(() =>
      this.transactions.run((tx) => this.outbox.counts(tx), { deadline: Date.now() + 1000, retries: 0 }),
    );
  }

  /** Rows of `status` (all when undefined), newest first, `limit` per page from below `cursor`. */
  async list(
    status: OutboxStatus | undefined,
    limit = DEFAULT_PAGE_SIZE,
    cursor?: string,
  ): Promise<OutboxPageView> {
    const rows = await this.transactions.run((tx) => this.outbox.list(tx, status, limit + 1, cursor));
    const items = rows.slice(0, limit).map((r) => this.view(r));
    return { items, nextCursor: rows.length > limit ? items[items.length - 1].id : null };
  }

  /** One row with its attempts. @throws WalletException NOT_FOUND. */
  async get(id: string): Promise<OutboxEntryDetailView> {
    return this.transactions.run((tx) => this.detail(tx, id));
  }

  /**
   * Releases a parked row: pending again, due now, with a new `WALLET_RETRY_FOR` budget (its
   * coupon's `wallet_refused` flag ends when it is delivered).
   * @throws WalletException NOT_FOUND; OUTBOX_ENTRY_STATE when it is not parked.
   */
  async retry(id: string, actor: Actor): Promise<OutboxEntryDetailView> {
    const spec: ActionSpec = { action: 'outbox_retry', targetKind: 'outbox', targetId: id };
    const view = await this.actions.perform(actor, spec, () =>
      this.transactions.run(async (tx) => {
        await this.actions.begin(tx, actor);
        const row = await this.locked(tx, id);
        if (row.status !== 'parked')
          throw new WalletException(
            ErrorCode.OUTBOX_ENTRY_STATE,
            `outbox row ${id} is ${row.status}: only a parked row can be retried`,
          );
        await this.outbox.release(tx, id, actor.name);
        const detail = await this.detail(tx, id);
        await this.actions.ok(tx, actor, { ...spec, details: this.actionDetails(detail) });
        return detail;
      }),
    );
    this.worker?.wake();
    return view;
  }

  /**
   * Marks a parked or pending row settled by hand in the wallet (never delivered from now on),
   * with the key's name and `reason`; the account's later rows go ahead. It keeps its
   * `parkedReason`; its coupon's `wallet_refused` flag ends (docs/wallet.md).
   * @throws WalletException NOT_FOUND; OUTBOX_ENTRY_STATE when it is delivered or skipped, or a
   *   worker is delivering it right now (ask again once its attempt is recorded).
   */
  async skip(id: string, actor: Actor, reason: string): Promise<OutboxEntryDetailView> {
    const spec: ActionSpec = {
      action: 'outbox_skip',
      targetKind: 'outbox',
      targetId: id,
      reason: reason.trim(),
    };
    const view = await this.actions.perform(actor, spec, () =>
      this.transactions.run(async (tx) => {
        await this.actions.begin(tx, actor);
        const row = await this.locked(tx, id);
        if (row.status !== 'parked' && row.status !== 'pending')
          throw new WalletException(
            ErrorCode.OUTBOX_ENTRY_STATE,
            `outbox row ${id} is ${row.status}: nothing to skip`,
          );
        if (row.leased)
          throw new WalletException(
            ErrorCode.OUTBOX_ENTRY_STATE,
            `outbox row ${id} is being delivered right now: look at its attempt, then skip it if still needed`,
          );
        await this.outbox.skip(tx, id, actor.name, reason.trim());
        const detail = await this.detail(tx, id);
        await this.actions.ok(tx, actor, { ...spec, details: this.actionDetails(detail) });
        return detail;
      }),
    );
    this.worker?.wake();
    return view;
  }

  /** What an outbox action's operator action notes of its row. */
  private actionDetails(row: OutboxEntryView): Record<string, unknown> {
    return {
      operationKey: row.operationKey,
      accountId: row.accountId,
      amount: row.amount,
      currency: row.currency,
    };
  }

  /** Pauses (or resumes) all delivery in every replica, recording who and why. */
  async setPaused(paused: boolean, actor: Actor, reason: string | null): Promise<WalletStatusView> {
    const status = await this.transactions.run(async (tx) => {
      await tx.send({ pause: this.outbox.pauseStatement(paused, paused ? reason : null, actor.name) });
      const view = await this.statusIn(tx);
      await this.actions.ok(tx, actor, {
        action: paused ? 'wallet_pause' : 'wallet_resume',
        targetKind: 'wallet',
        targetId: null,
        reason: paused ? reason : null,
        details: { pending: view.pending, parked: view.parked },
      });
      return view;
    });
    if (!paused) this.worker?.wake();
    return status;
  }

  /** The connector, the pause state and the backlog. */
  status(): Promise<WalletStatusView> {
    return this.transactions.run((tx) => this.statusIn(tx));
  }

  private async statusIn(tx: Tx): Promise<WalletStatusView> {
    const state = await this.outbox.state(tx);
    const counts = await this.outbox.counts(tx);
    return {
      connector: this.config.wallet.connector ?? null,
      paused: state.paused,
      reason: state.reason,
      changedAt: state.changedAt,
      changedBy: state.changedBy,
      pending: counts.pending,
      parked: counts.parked,
      oldestPendingAgeSeconds: counts.oldestPendingAgeSeconds,
    };
  }

  private async locked(tx: Tx, id: string) {
    const row = await this.outbox.lockForAction(tx, id);
    if (!row) throw new WalletException(ErrorCode.NOT_FOUND, `outbox row ${id} not found`);
    return row;
  }

  private async detail(tx: Tx, id: string): Promise<OutboxEntryDetailView> {
    const row = await this.outbox.find(tx, id);
    if (!row) throw new WalletException(ErrorCode.NOT_FOUND, `outbox row ${id} not found`);
    const attempts = await this.outbox.attemptsOf(tx, id);
    return {
      ...this.view(row),
      deliveryAttempts: attempts.map((a) => ({
        attempt: a.attempt,
        requestId: a.requestId,
        connector: a.connector,
        startedAt: a.startedAt,
        durationMs: a.durationMs,
        outcome: a.outcome,
        httpStatus: a.httpStatus,
        answer: a.answer,
      })),
      body: row.body ? row.body.toString('utf8') : null,
    };
  }

  private view(row: WalletOutboxEntryEntity): OutboxEntryView {
    const op = row.operation;
    return {
      id: row.id,
      operationKey: row.operationKey,
      type: op.type,
      accountId: row.accountId,
      amount: this.config.currencies.format(op.amount, op.currency),
      currency: op.currency,
      couponCode: op.couponCode,
      status: row.status,
      attempts: row.attempts,
      nextAttemptAt: row.nextAttemptAt,
      leasedUntil: row.leasedUntil,
      lastStatus: row.lastStatus,
      lastError: row.lastError,
      parkedReason: row.parkedReason,
      createdAt: row.createdAt,
      deliveredAt: row.deliveredAt,
      parkedAt: row.parkedAt,
      skippedAt: row.skippedAt,
      skippedBy: row.skippedBy,
      skipReason: row.skipReason,
      retriedAt: row.retriedAt,
      retriedBy: row.retriedBy,
    };
  }
}
