import { Injectable, Logger } from '@nestjs/common';
import type { Actor } from '../auth/actor.js';
import { DomainException, HTTP_STATUS_OF } from '../common/domain.exception.js';
import { TransactionRunner, Tx } from '../database/transaction.js';
import { OperatorActionsRepository } from './operator-actions.repository.js';
import type { ActionSpec } from './operator-actions.types.js';

/** Milliseconds given to the short transaction that records a refusal after the rollback. */
const REFUSAL_DEADLINE_MS = 2000;

/** The error code of a refused action (a 4xx DomainException), else undefined (503, 500: not decided). */
export function refusalCode(err: unknown): string | undefined {
  if (!(err instanceof DomainException)) return undefined;
  const status = HTTP_STATUS_OF[err.code];
  return status >= 400 && status < 500 ? err.code : undefined;
}

/**
 * The operator actions log (docs/api.md#operator-actions): every service that acts for a partner
 * API key records through here, so one rule decides what is logged and one statement writes it.
 * Actions of keys holding scope `money` or `operate` are logged; a registration by a key that
 * holds neither (the bet-placement service) is not. A successful action is written in the
 * action's own transaction ({@link ok}); a refused one (4xx) in a short transaction of its own
 * after the rollback ({@link refused}), with its error code as outcome. A bulk action's row
 * (`actor.row`) is begun and ended in the same transactions.
 */
@Injectable()
export class OperatorActionLog {
  private readonly logger = new Logger('OperatorActions');

  constructor(
    private readonly transactions: TransactionRunner,
    private readonly actions: OperatorActionsRepository,
  ) {}

  /** Whether actions of `actor` are logged: its key holds scope money or operate. */
  static logs(actor: Actor): boolean {
    return actor.scopes.includes('money') || actor.scopes.includes('operate');
  }

  /**
   * First thing in the action's transaction: a bulk action's row checks it is still to do
   * (throws `BulkRowStopped` otherwise, which is no refusal). Nothing for a request.
   */
  async begin(tx: Tx, actor: Actor): Promise<void> {
    await actor.row?.begin(tx);
  }

  /** Records the successful action `spec` of `actor` in the action's transaction `tx`. */
  async ok(tx: Tx, actor: Actor, spec: ActionSpec): Promise<void> {
    if (OperatorActionLog.logs(actor)) await this.actions.insert(tx, this.row(actor, spec, 'ok'));
    await actor.row?.end(tx, { ok: true, details: spec.details ?? {} });
  }

  /**
   * Records `err` as the refusal of `spec` when it is one (a 4xx DomainException), in a short
   * transaction of its own (the action's was rolled back). A failure to record is logged, never
   * answered: the caller rethrows `err` whatever happens here.
   */
  async refused(actor: Actor, spec: ActionSpec, err: unknown): Promise<void> {
    const code = refusalCode(err);
    if (code === undefined) return;
    try {
      await this.transactions.run(
        async (tx) => {
          if (OperatorActionLog.logs(actor)) await this.actions.insert(tx, this.row(actor, spec, code));
          await actor.row?.end(tx, { ok: false, code, message: (err as Error).message });
        },
        { deadline: Date.now() + REFUSAL_DEADLINE_MS, retries: 1 },
      );
    } catch (writeError) {
      this.logger.error(
        `could not record the refused ${spec.action} of ${actor.name} (${code}): ${(writeError as Error).message}`,
      );
    }
  }

  /**
   * Runs `work` (the action, which records its success with {@link ok}); when it throws a refusal,
   * records that with {@link refused} and rethrows. `spec` may be completed by `work` as it learns
   * (a target found in the body).
   */
  async perform<T>(actor: Actor, spec: ActionSpec, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      await this.refused(actor, spec, err);
      throw err;
    }
  }

  private row(actor: Actor, spec: ActionSpec, outcome: string) {
    const bulk = actor.row ? { bulkActionId: actor.row.bulkActionId } : {};
    return {
      actor: actor.name,
      action: spec.action,
      targetKind: spec.targetKind,
      targetId: spec.targetId,
      reason: spec.reason ?? null,
      requestId: actor.requestId,
      clientAddress: actor.clientAddress,
      outcome,
      details: { ...(spec.details ?? {}), ...bulk },
    };
  }
}
