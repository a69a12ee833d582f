import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { discoverExtensions } from '../../platform/common/extension-discovery.js';
import { TransientError } from '../../platform/common/transient-error.js';
import { isRetryable } from '../../platform/database/pg-errors.js';
import { DeadlineExceededError, Statement, StatementGroup, Tx } from '../../platform/database/transaction.js';
import { CouponTransition, HookTx, SettlementHook, SettlementHookContext } from './settlement-hook.js';

/**
 * Transaction-control and session statements, anywhere a statement may start: a hook's query or
 * write that is one is refused (the batch commits or rolls back as a whole; SET would outlive it).
 */
const CONTROL =
  /(^|;)\s*(commit|rollback|abort|begin|start\s+transaction|end|savepoint|release|prepare\s+transaction|set|reset|discard|listen|unlisten)\b/i;

/** @throws Error when `text` is a statement a hook may not send ({@link CONTROL}). */
function refuseControl(text: string): void {
  const found = CONTROL.exec(text);
  if (found)
    throw new Error(
      `a hook may not send ${found[2].toUpperCase()} (the batch commits or rolls back as a whole)`,
    );
}

/** The batch's transaction as a hook sees it: its own queries and the time left (CONTRACT §5 deadline). */
function hookTx(tx: Tx): HookTx {
  return Object.freeze({
    deadline: tx.deadline,
    timeLeft: () => tx.timeLeft(),
    query: <R>(text: string, values?: unknown[]) => {
      refuseControl(text);
      return tx.query<R>(text, values);
    },
  });
}

/**
 * A settlement hook threw (or answered after the deadline's statement failed): the batch is
 * rolled back and tried again (the callback answers 503). Names the hook and the coupon.
 */
export class SettlementHookError extends TransientError {
  constructor(hook: string, transition: CouponTransition, cause: unknown) {
    super(
      `settlement hook ${hook} failed on coupon ${transition.couponCode} (${transition.transition}, batch ${transition.batchId}): ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
    this.name = 'SettlementHookError';
  }
}

/**
 * The settlement hooks of the application ({@link SettlementHook}s of any module, found at start)
 * and their runner: each hook for each transition, in order, each call cut at the batch's deadline.
 */
@Injectable()
export class SettlementHooks implements OnModuleInit {
  private readonly logger = new Logger('SettlementHooks');
  private hooks: SettlementHook[] = [];

  constructor(private readonly discovery: DiscoveryService) {}

  onModuleInit(): void {
    this.hooks = discoverExtensions(this.discovery, SettlementHook);
    if (this.hooks.length) this.logger.log(`settlement hooks: ${this.hooks.map((h) => h.name).join(', ')}`);
  }

  /** Whether any hook is registered (none: the apply collects no transitions for them). */
  get any(): boolean {
    return this.hooks.length > 0;
  }

  /**
   * Calls every hook for every transition inside `tx`, in order.
   * @returns the statements the hooks asked to write, to send with the batch's writes.
   * @throws DeadlineExceededError past the deadline (the hook's call is abandoned and its
   *   `signal` aborted); a retryable PostgreSQL error of a hook's statement as it is (the whole
   *   transaction is re-run); {@link SettlementHookError} for anything else a hook threw.
   */
  async run(tx: Tx, transitions: CouponTransition[]): Promise<StatementGroup> {
    const writes: Statement[] = [];
    const abort = new AbortController();
    const context: SettlementHookContext = {
      tx: hookTx(tx),
      deadline: tx.deadline,
      signal: abort.signal,
      write: (statement) => {
        refuseControl(statement.text);
        writes.push(statement);
      },
    };
    try {
      for (const transition of transitions)
        for (const hook of this.hooks) await this.call(hook, transition, context, abort);
    } finally {
      abort.abort();
    }
    const group: StatementGroup = {};
    writes.forEach((statement, i) => (group[`hook_${i}`] = statement));
    return group;
  }

  private async call(
    hook: SettlementHook,
    transition: CouponTransition,
    context: SettlementHookContext,
    abort: AbortController,
  ): Promise<void> {
    const left = context.tx.timeLeft();
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        Promise.resolve().then(() => hook.onTransition(transition, context)),
        new Promise<never>((_, fail) => {
          timer = setTimeout(() => {
            abort.abort();
            fail(new DeadlineExceededError());
          }, left);
        }),
      ]);
    } catch (err) {
      if (err instanceof DeadlineExceededError || isRetryable(err)) throw err;
      throw new SettlementHookError(hook.name, transition, err);
    } finally {
      clearTimeout(timer);
    }
  }
}
