import { Injectable, Optional } from '@nestjs/common';
import type { Actor } from '../../platform/auth/actor.js';
import { DomainException, ErrorCode } from '../../platform/common/domain.exception.js';
import { Cursor, CURSOR_PART, pageSize, toPage } from '../../platform/common/pagination.js';
import { TransactionRunner } from '../../platform/database/transaction.js';
import { OperatorActionLog } from '../../platform/operator-actions/operator-action-log.js';
import type { ActionSpec } from '../../platform/operator-actions/operator-actions.types.js';
import { BulkActionWorker } from './bulk-action.worker.js';
import { BulkActionRow, BulkActionsRepository, BulkItemRow } from './bulk-actions.repository.js';
import { BULK_CAP, BulkFilter, BulkKind, PLAN_SAMPLE } from './bulk-actions.types.js';
import type {
  BulkActionDetailView,
  BulkActionPageView,
  BulkActionView,
  BulkItemView,
  BulkPlanView,
} from './dto/bulk-action.dto.js';

/** Filter fields of each kind (docs/api.md#bulk-actions). */
const FILTER_FIELDS: Record<BulkKind, readonly string[]> = {
  quarantine_replay: ['quarantineReason', 'batchIdPrefix', 'receivedFrom', 'receivedTo', 'notReplayed'],
  outbox_retry: ['parkedReason', 'accountId', 'parkedFrom', 'parkedTo'],
  outbox_skip: ['parkedReason', 'accountId', 'parkedFrom', 'parkedTo'],
};

const notFound = (id: string) => new DomainException(ErrorCode.NOT_FOUND, `bulk action ${id} not found`);

/**
 * Bulk actions in three steps (docs/api.md#bulk-actions): {@link plan} counts the rows a filter
 * matches without touching them, {@link start} freezes the first `cap` of them in arrival order
 * and leaves them to the {@link BulkActionWorker}, {@link get} shows the progress and each row's
 * outcome, {@link cancel} stops it before its next row. Starting and cancelling are operator
 * actions, logged in their own transactions.
 */
@Injectable()
export class BulkActionsService {
  constructor(
    private readonly transactions: TransactionRunner,
    private readonly bulk: BulkActionsRepository,
    private readonly actions: OperatorActionLog,
    @Optional() private readonly worker?: BulkActionWorker,
  ) {}

  /**
   * How many rows `filter` matches now and which come first: the sample names at most
   * `min(cap, 10)` ids, only rows a run with `cap` would take. @throws DomainException VALIDATION_FAILED.
   */
  async plan(kind: BulkKind, filter: BulkFilter, cap: number = BULK_CAP.default): Promise<BulkPlanView> {
    const checked = this.checkFilter(kind, filter);
    const { matched, ids } = await this.transactions.run((tx) =>
      this.bulk.plan(tx, kind, checked, Math.min(cap, PLAN_SAMPLE)),
    );
    return { kind, filter: checked, matched, cap, wouldTouch: Math.min(matched, cap), sample: ids };
  }

  /**
   * Creates the bulk action with its frozen rows and the operator action `bulk_run`, in one
   * transaction, and wakes the worker. @throws DomainException VALIDATION_FAILED.
   */
  async start(
    kind: BulkKind,
    filter: BulkFilter,
    reason: string,
    cap: number | undefined,
    actor: Actor,
  ): Promise<BulkActionView> {
    const checked = this.checkFilter(kind, filter);
    const spec: ActionSpec = {
      action: 'bulk_run',
      targetKind: 'bulk_action',
      targetId: null,
      reason: reason.trim(),
      details: { kind, filter: checked, cap: cap ?? BULK_CAP.default },
    };
    const row = await this.actions.perform(actor, spec, () =>
      this.transactions.run(async (tx) => {
        const created = await this.bulk.create(tx, {
          kind,
          filter: checked,
          reason: reason.trim(),
          actor: actor.name,
          requestId: actor.requestId,
          cap: cap ?? BULK_CAP.default,
        });
        await this.actions.ok(tx, actor, {
          ...spec,
          targetId: created.id,
          details: { ...spec.details, total: created.total },
        });
        return created;
      }),
    );
    this.worker?.wake();
    return this.view(row);
  }

  /** A bulk action with one page of its rows (arrival order). @throws DomainException NOT_FOUND. */
  async get(
    id: string,
    query: { outcome?: string; limit?: string | number; cursor?: string },
  ): Promise<BulkActionDetailView> {
    const limit = pageSize(query);
    const after = query.cursor === undefined ? 0 : Number(Cursor.decode(query.cursor, [CURSOR_PART.id])[0]);
    const { action, items } = await this.transactions.run(async (tx) => ({
      action: await this.bulk.find(tx, id),
      items: await this.bulk.items(tx, id, query.outcome, after, limit + 1),
    }));
    if (!action) throw notFound(id);
    return {
      ...this.view(action),
      ...toPage(
        items,
        limit,
        (i) => [String(i.seq)],
        (i) => this.itemView(i),
      ),
    };
  }

  /** Bulk actions newest first. */
  async list(query: {
    status?: string;
    limit?: string | number;
    cursor?: string;
  }): Promise<BulkActionPageView> {
    const limit = pageSize(query);
    const before = query.cursor === undefined ? undefined : Cursor.decode(query.cursor, [CURSOR_PART.id])[0];
    const rows = await this.transactions.run((tx) => this.bulk.list(tx, query.status, before, limit + 1));
    return toPage(
      rows,
      limit,
      (r) => [r.id],
      (r) => this.view(r),
    );
  }

  /**
   * Stops a running bulk action before its next row (a row in hand finishes first: the cancel waits
   * for its lock), logged as `bulk_cancel`. @throws DomainException NOT_FOUND, BULK_ACTION_STATE.
   */
  async cancel(id: string, actor: Actor, reason: string | null): Promise<BulkActionView> {
    const spec: ActionSpec = { action: 'bulk_cancel', targetKind: 'bulk_action', targetId: id, reason };
    const row = await this.actions.perform(actor, spec, () =>
      this.transactions.run(async (tx) => {
        const found = await this.bulk.find(tx, id, true);
        if (!found) throw notFound(id);
        const ended = await this.bulk.end(tx, id, 'cancelled', actor.name);
        if (!ended)
          throw new DomainException(
            ErrorCode.BULK_ACTION_STATE,
            `bulk action ${id} is ${found.status}: nothing to cancel`,
          );
        await this.actions.ok(tx, actor, {
          ...spec,
          details: {
            done: ended.doneCount,
            skipped: ended.skippedCount,
            failed: ended.failedCount,
            total: ended.total,
          },
        });
        return ended;
      }),
    );
    return this.view(row);
  }

  /**
   * The filter with only the fields of `kind`, `notReplayed` defaulting to true for quarantine.
   * @throws DomainException VALIDATION_FAILED naming a field of the other kind.
   */
  private checkFilter(kind: BulkKind, filter: BulkFilter): BulkFilter {
    const allowed = FILTER_FIELDS[kind];
    const given = Object.entries(filter ?? {}).filter(([, v]) => v !== undefined);
    const wrong = given.map(([k]) => k).filter((k) => !allowed.includes(k));
    if (wrong.length)
      throw new DomainException(
        ErrorCode.VALIDATION_FAILED,
        `filter fields not used by ${kind}: ${wrong.join(', ')}`,
        wrong.map((k) => ({ path: `filter.${k}`, message: `${k} does not apply to ${kind}` })),
      );
    const checked = Object.fromEntries(
      Object.entries(filter ?? {}).filter(([, v]) => v !== undefined),
    ) as BulkFilter;
    return kind === 'quarantine_replay' ? { notReplayed: true, ...checked } : checked;
  }

  private view(r: BulkActionRow): BulkActionView {
    return {
      id: r.id,
      kind: r.kind,
      filter: r.filter,
      reason: r.reason,
      actor: r.actor,
      cap: r.cap,
      total: r.total,
      status: r.status,
      done: r.doneCount,
      skipped: r.skippedCount,
      failed: r.failedCount,
      pending: r.total - r.doneCount - r.skippedCount - r.failedCount,
      createdAt: new Date(r.createdAt).toISOString(),
      finishedAt: r.finishedAt ? new Date(r.finishedAt).toISOString() : null,
      cancelledBy: r.cancelledBy,
    };
  }

  private itemView(i: BulkItemRow): BulkItemView {
    return {
      seq: i.seq,
      targetId: i.targetId,
      outcome: i.outcome ?? 'pending',
      code: i.code,
      message: i.message,
      groupKeys: i.groupKeys,
      attempts: i.attempts,
      finishedAt: i.finishedAt ? new Date(i.finishedAt).toISOString() : null,
    };
  }
}
