import type { Actor } from '../../platform/auth/actor.js';
import { ErrorCode } from '../../platform/common/domain.exception.js';
import type { CurrencyTable } from '../../platform/common/currency.js';
import { TransactionRunner, Tx } from '../../platform/database/transaction.js';
import { OperatorActionLog } from '../../platform/operator-actions/operator-action-log.js';
import type {
  ActionSpec,
  OperatorActionKind,
  TargetKind,
} from '../../platform/operator-actions/operator-actions.types.js';
import type { OutboxEntryDetailView, OutboxEntryView, OutboxPageView } from './dto/outbox.dto.js';
import { OutboxException } from './outbox.exception.js';
import type { OutboxMetrics } from './outbox-metrics.js';
import { OutboxRepository, OutboxRowView } from './outbox.repository.js';
import type { OutboxStatus } from './outbox.types.js';

/** How a destination's operator actions are recorded (docs/api.md#operator-actions). */
export interface OutboxActionKinds {
  /** Target kind of a row's retry and skip: `outbox` (the wallet's), `event_outbox`. */
  row: TargetKind;
  pause: OperatorActionKind;
  resume: OperatorActionKind;
  /** Target of a pause: `wallet` (no id), or `publisher` with the publisher's name. */
  pauseTarget: { kind: TargetKind; id: string | null };
}

/** Whether delivery runs, and the backlog. */
export interface OutboxStatusView {
  paused: boolean;
  reason: string | null;
  /** null: never paused. */
  changedAt: Date | null;
  changedBy: string | null;
  pending: number;
  parked: number;
  oldestPendingAgeSeconds: number;
}

/**
 * One outbox destination for operators (docs/wallet.md, "Operators"; docs/events.md): list and
 * inspect rows, release a parked row (`retry`), mark one settled by hand (`skip`), pause and
 * resume all its delivery. Each action is one transaction that locks the row and records the
 * key's name, and its operator action (a refusal after the rollback). Also feeds its gauges.
 */
export class OutboxService {
  constructor(
    readonly outbox: OutboxRepository,
    private readonly transactions: TransactionRunner,
    private readonly actions: OperatorActionLog,
    private readonly currencies: CurrencyTable,
    private readonly kinds: OutboxActionKinds,
    metrics: OutboxMetrics,
    /** Ends the sleep of the destination's idle workers (after a release or a resume), if any run here. */
    private readonly wake: () => void = () => undefined,
  ) {
    metrics.countWith(outbox.destination.name, () =>
      this.transactions.run((tx) => this.outbox.counts(tx), { deadline: Date.now() + 1000, retries: 0 }),
    );
  }

  /** Rows of `status` (all when undefined), newest first, `limit` per page from below `cursor`. */
  async list(status: OutboxStatus | undefined, limit: number, cursor?: string): Promise<OutboxPageView> {
    const rows = await this.transactions.run((tx) => this.outbox.list(tx, status, limit + 1, cursor));
    const items = rows.slice(0, limit).map((r) => this.view(r));
    return { items, nextCursor: rows.length > limit ? items[items.length - 1].id : null };
  }

  /** One row with its attempts. @throws OutboxException NOT_FOUND. */
  async get(id: string): Promise<OutboxEntryDetailView> {
    return this.transactions.run((tx) => this.detail(tx, id));
  }

  /**
   * Releases a parked row: pending again, due now, with a new retry budget (a coupon the row
   * flagged is unflagged when it is delivered).
   * @throws OutboxException NOT_FOUND; OUTBOX_ENTRY_STATE when it is not parked.
   */
  async retry(id: string, actor: Actor): Promise<OutboxEntryDetailView> {
    const spec: ActionSpec = { action: 'outbox_retry', targetKind: this.kinds.row, targetId: id };
    const view = await this.actions.perform(actor, spec, () =>
      this.transactions.run(async (tx) => {
        await this.actions.begin(tx, actor);
        const row = await this.locked(tx, id);
        if (row.status !== 'parked')
          throw new OutboxException(
            ErrorCode.OUTBOX_ENTRY_STATE,
            `outbox row ${id} is ${row.status}: only a parked row can be retried`,
          );
        await this.outbox.release(tx, id, actor.name);
        const detail = await this.detail(tx, id);
        await this.actions.ok(tx, actor, { ...spec, details: this.actionDetails(detail) });
        return detail;
      }),
    );
    this.wake();
    return view;
  }

  /**
   * Marks a parked or pending row settled by hand (never delivered from now on), with the key's
   * name and `reason`; the account's later rows go ahead. It keeps its `parkedReason`; a coupon it
   * flagged is unflagged.
   * @throws OutboxException NOT_FOUND; OUTBOX_ENTRY_STATE when it is delivered or skipped, or a
   *   worker is delivering it right now (ask again once its attempt is recorded).
   */
  async skip(id: string, actor: Actor, reason: string): Promise<OutboxEntryDetailView> {
    const spec: ActionSpec = {
      action: 'outbox_skip',
      targetKind: this.kinds.row,
      targetId: id,
      reason: reason.trim(),
    };
    const view = await this.actions.perform(actor, spec, () =>
      this.transactions.run(async (tx) => {
        await this.actions.begin(tx, actor);
        const row = await this.locked(tx, id);
        if (row.status !== 'parked' && row.status !== 'pending')
          throw new OutboxException(
            ErrorCode.OUTBOX_ENTRY_STATE,
            `outbox row ${id} is ${row.status}: nothing to skip`,
          );
        if (row.leased)
          throw new OutboxException(
            ErrorCode.OUTBOX_ENTRY_STATE,
            `outbox row ${id} is being delivered right now: look at its attempt, then skip it if still needed`,
          );
        await this.outbox.skip(tx, id, actor.name, reason.trim());
        const detail = await this.detail(tx, id);
        await this.actions.ok(tx, actor, { ...spec, details: this.actionDetails(detail) });
        return detail;
      }),
    );
    this.wake();
    return view;
  }

  /** What an outbox action's operator action notes of its row. */
  private actionDetails(row: OutboxEntryView): Record<string, unknown> {
    return {
      operationKey: row.operationKey,
      accountId: row.accountId,
      amount: row.amount,
      currency: row.currency,
      ...(this.kinds.row === 'outbox' ? {} : { destination: this.outbox.destination.name }),
    };
  }

  /** Pauses (or resumes) all delivery of the destination in every replica, recording who and why. */
  async setPaused(paused: boolean, actor: Actor, reason: string | null): Promise<OutboxStatusView> {
    const status = await this.transactions.run(async (tx) => {
      await tx.send({ pause: this.outbox.pauseStatement(paused, paused ? reason : null, actor.name) });
      const view = await this.statusIn(tx);
      await this.actions.ok(tx, actor, {
        action: paused ? this.kinds.pause : this.kinds.resume,
        targetKind: this.kinds.pauseTarget.kind,
        targetId: this.kinds.pauseTarget.id,
        reason: paused ? reason : null,
        details: { pending: view.pending, parked: view.parked },
      });
      return view;
    });
    if (!paused) this.wake();
    return status;
  }

  /** The pause state and the backlog. */
  status(): Promise<OutboxStatusView> {
    return this.transactions.run((tx) => this.statusIn(tx));
  }

  private async statusIn(tx: Tx): Promise<OutboxStatusView> {
    const state = await this.outbox.state(tx);
    const counts = await this.outbox.counts(tx);
    return {
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
    if (!row) throw new OutboxException(ErrorCode.NOT_FOUND, `outbox row ${id} not found`);
    return row;
  }

  private async detail(tx: Tx, id: string): Promise<OutboxEntryDetailView> {
    const row = await this.outbox.find(tx, id);
    if (!row) throw new OutboxException(ErrorCode.NOT_FOUND, `outbox row ${id} not found`);
    const attempts = await this.outbox.attemptsOf(tx, id);
    return {
      ...this.view(row),
      deliveryAttempts: attempts,
      body: row.body ? row.body.toString('utf8') : null,
    };
  }

  private view(row: OutboxRowView): OutboxEntryView {
    return {
      id: row.id,
      operationKey: row.operationKey,
      type: row.type,
      accountId: row.accountId,
      amount: this.currencies.format(row.amount, row.currency),
      currency: row.currency,
      couponCode: row.couponCode,
      status: row.status,
      attempts: row.attempts,
      nextAttemptAt: row.nextAttemptAt,
      leasedUntil: row.leasedUntil,
      lastStatus: row.lastStatus,
      lastError: row.lastError,
      parkedReason: row.parkedReason,
      createdAt: row.queuedAt,
      deliveredAt: row.deliveredAt,
      parkedAt: row.parkedAt,
      skippedAt: row.skippedAt,
      skippedBy: row.skippedBy,
      skipReason: row.skipReason,
      retriedAt: row.retriedAt,
      retriedBy: row.retriedBy,
      heldBy: row.heldBy,
    };
  }
}
