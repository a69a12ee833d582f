import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnModuleDestroy,
  OnModuleInit,
} from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { Actor, ActionOutcome, BulkRowHooks } from '../../platform/auth/actor.js';
import { QuarantineService } from '../../intake/quarantine/quarantine.service.js';
import { PollingLoops } from '../../platform/background/polling-loops.js';
import { CONSOLE_CONFIG } from '../console/console.config.js';
import type { ConsoleConfig } from '../console/console.config.js';
import { TransactionRunner } from '../../platform/database/transaction.js';
import { refusalCode } from '../../platform/operator-actions/operator-action-log.js';
import type { OutboxService } from '../../outbound/outbox/outbox.service.js';
import { WalletOutbox } from '../../outbound/wallet/wallet-outbox.js';
import { BulkActionRow, BulkActionsRepository, BulkItemRow } from './bulk-actions.repository.js';
import { BulkRowStopped } from './bulk-actions.types.js';

/**
 * Session advisory lock held by the replica running bulk actions (docs/architecture.md, "Locks
 * that are not rows"): one replica works on them at a time; a replica that stops (or dies) lets
 * it go with its connection, and the next one resumes.
 */
export const BULK_ACTION_LOCK_KEY = 727_005;

/** Transient failures of one row (database away, deadline) before it is recorded as failed. */
const MAX_ROW_ATTEMPTS = 5;
/** Pending rows read at a time. */
const ROWS_PER_READ = 100;

/** How a run ended. */
interface DrainResult {
  rows: number;
  /** A row failed transiently: the action waits for the next poll. */
  waiting: boolean;
}

/**
 * Runs bulk actions in the background (docs/api.md#bulk-actions), every replica polling, one at a
 * time holding the advisory lock {@link BULK_ACTION_LOCK_KEY}. Each row goes through the single
 * action's service method (`QuarantineService.replay`, the wallet outbox's `retry` / `skip`) with the
 * same rules and its own operator action; its outcome is written in that action's transaction (a
 * refusal's after the rollback), so a row is never done twice, also across a restart. Rows run in
 * arrival order; when a row fails or is skipped, the later rows of the same coupon (quarantine) or
 * account (outbox) are skipped, naming the row that failed first.
 */
@Injectable()
export class BulkActionWorker implements OnModuleInit, OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('BulkActions');
  private readonly loops = new PollingLoops(this.logger, async () => (await this.runOnce()) > 0);
  private stopping = false;
  private wallet!: OutboxService;

  constructor(
    @Inject(CONSOLE_CONFIG) private readonly config: ConsoleConfig,
    private readonly transactions: TransactionRunner,
    private readonly bulk: BulkActionsRepository,
    private readonly quarantine: QuarantineService,
    private readonly moduleRef: ModuleRef,
  ) {}

  onModuleInit(): void {
    // The wallet module is configured per connector (WalletModule.forRoot): its service is taken
    // from the application rather than imported a second time.
    this.wallet = this.moduleRef.get(WalletOutbox, { strict: false }).service;
  }

  onApplicationBootstrap(): void {
    if (this.config.bulkPollIntervalMs > 0) this.loops.start(1, this.config.bulkPollIntervalMs);
  }

  async onModuleDestroy(): Promise<void> {
    this.stopping = true;
    await this.loops.stop();
  }

  /** Ends the idle worker's sleep (a bulk action was started). */
  wake(): void {
    this.loops.wake();
  }

  /**
   * Works on the running bulk actions, oldest first, under the advisory lock (what the loop calls;
   * tests call it directly), until none is left, a row fails transiently, the process stops or
   * `maxRows` rows have ended. @returns the rows that ended (0: another replica holds the lock).
   */
  async runOnce(maxRows = Number.POSITIVE_INFINITY): Promise<number> {
    // An idle poll is one index probe, without a connection of its own for the lock.
    if (!(await this.transactions.run((tx) => this.bulk.nextRunning(tx, '0')))) return 0;
    const run = await this.transactions.withSessionLock(BULK_ACTION_LOCK_KEY, () => this.drain(maxRows));
    return 'skipped' in run ? 0 : run.result;
  }

  private async drain(maxRows: number): Promise<number> {
    let rows = 0;
    let after = '0';
    while (!this.stopping && rows < maxRows) {
      const action = await this.transactions.run((tx) => this.bulk.nextRunning(tx, after));
      if (!action) break;
      after = action.id;
      const result = await this.drainAction(action, maxRows - rows);
      rows += result.rows;
      if (result.waiting) break;
    }
    return rows;
  }

  private async drainAction(action: BulkActionRow, budget: number): Promise<DrainResult> {
    // Keys of rows that failed or were skipped (a restart reads them back), with the first such row.
    const blocked = await this.transactions.run((tx) => this.bulk.blockedKeys(tx, action.id));
    const block = (keys: string[] | null, seq: number) => {
      for (const key of keys ?? []) if (!blocked.has(key)) blocked.set(key, seq);
    };
    let rows = 0;
    let afterSeq = 0;
    for (;;) {
      const items = await this.transactions.run((tx) =>
        this.bulk.items(tx, action.id, 'pending', afterSeq, ROWS_PER_READ),
      );
      if (!items.length) break;
      for (const item of items) {
        if (this.stopping || rows >= budget) return { rows, waiting: false };
        afterSeq = item.seq;
        const keys = item.groupKeys ?? (await this.keysOf(action, item));
        const first = keys
          .map((k) => [k, blocked.get(k)] as const)
          .filter((e): e is readonly [string, number] => e[1] !== undefined)
          .sort((a, b) => a[1] - b[1])[0];
        try {
          if (first) await this.skip(action, item, keys, first);
          else await this.runRow(action, item, keys);
          rows++;
        } catch (err) {
          if (err instanceof BulkRowStopped) {
            if (err.status !== 'running') return { rows, waiting: false }; // cancelled
            if (err.outcome === 'failed' || err.outcome === 'skipped') block(keys, item.seq);
            continue;
          }
          if (refusalCode(err) !== undefined) {
            block(keys, item.seq); // recorded as failed with the refusal
            rows++;
            continue;
          }
          const attempts = await this.transactions.run((tx) =>
            this.bulk.countAttempt(tx, action.id, item.seq),
          );
          this.logger.warn(
            `bulk action ${action.id} row ${item.seq}: ${(err as Error).message} (try ${attempts})`,
          );
          if (attempts < MAX_ROW_ATTEMPTS) return { rows, waiting: true };
          await this.finish(action, item, keys, {
            ok: false,
            code: 'transient_failure',
            message: `failed ${attempts} times: ${(err as Error).message}`,
          });
          block(keys, item.seq);
          rows++;
        }
      }
    }
    const left = await this.transactions.run((tx) => this.bulk.items(tx, action.id, 'pending', 0, 1));
    if (!left.length && !this.stopping) {
      await this.transactions.run((tx) => this.bulk.end(tx, action.id, 'done', null));
      this.logger.log(`bulk action ${action.id} (${action.kind}) done`);
    }
    return { rows, waiting: false };
  }

  /** The row through the single action, with its outcome written in the action's transaction. */
  private async runRow(action: BulkActionRow, item: BulkItemRow, keys: string[]): Promise<void> {
    const actor: Actor = {
      name: action.actor,
      scopes: ['operate'], // a bulk action is started with scope operate only
      requestId: `bulk-action:${action.id}`,
      clientAddress: null, // the bulk_run action records the address that started it
      row: this.hooks(action, item, keys),
    };
    if (action.kind === 'quarantine_replay') await this.quarantine.replay(item.targetId, actor);
    else if (action.kind === 'outbox_retry') await this.wallet.retry(item.targetId, actor);
    else await this.wallet.skip(item.targetId, actor, action.reason);
  }

  private hooks(action: BulkActionRow, item: BulkItemRow, keys: string[]): BulkRowHooks {
    return {
      bulkActionId: action.id,
      begin: async (tx) => {
        const state = await this.bulk.lockRow(tx, action.id, item.seq);
        if (state.status !== 'running' || state.outcome !== null)
          throw new BulkRowStopped(state.status, state.outcome);
      },
      end: async (tx, outcome) => {
        await this.bulk.finishRow(tx, action.id, item.seq, this.rowOutcome(outcome, keys));
      },
    };
  }

  private rowOutcome(outcome: ActionOutcome, keys: string[]) {
    return outcome.ok
      ? {
          outcome: 'done' as const,
          code: String(outcome.details.outcome ?? 'ok'),
          message: null,
          groupKeys: keys,
        }
      : { outcome: 'failed' as const, code: outcome.code, message: outcome.message, groupKeys: keys };
  }

  /** Records a row's outcome outside an action (a transient failure given up on). */
  private async finish(action: BulkActionRow, item: BulkItemRow, keys: string[], outcome: ActionOutcome) {
    await this.transactions.run((tx) =>
      this.bulk.finishRow(tx, action.id, item.seq, this.rowOutcome(outcome, keys)),
    );
  }

  /** Skips a row whose coupon or account has an earlier row that failed or was skipped. */
  private async skip(
    action: BulkActionRow,
    item: BulkItemRow,
    keys: string[],
    [key, seq]: readonly [string, number],
  ): Promise<void> {
    const what = action.kind === 'quarantine_replay' ? 'coupon' : 'account';
    await this.transactions.run(async (tx) => {
      const state = await this.bulk.lockRow(tx, action.id, item.seq);
      if (state.status !== 'running' || state.outcome !== null)
        throw new BulkRowStopped(state.status, state.outcome);
      await this.bulk.finishRow(tx, action.id, item.seq, {
        outcome: 'skipped',
        code: 'blocked',
        message: `row ${seq} of ${what} ${key} failed or was skipped first: its later rows keep their order`,
        groupKeys: keys,
      });
    });
  }

  /**
   * What order is kept per for a row: the coupon codes of a quarantined body (read leniently: a
   * body refused by validation still names its coupons; none when it is not JSON), or the
   * account of an outbox row (frozen with the row).
   */
  private async keysOf(action: BulkActionRow, item: BulkItemRow): Promise<string[]> {
    if (action.kind !== 'quarantine_replay') return [];
    try {
      const { body } = await this.quarantine.get(item.targetId);
      const parsed = JSON.parse(body) as { coupons?: unknown };
      if (!Array.isArray(parsed.coupons)) return [];
      const codes = parsed.coupons
        .map((c) =>
          c !== null && typeof c === 'object' ? (c as { coupon_code?: unknown }).coupon_code : undefined,
        )
        .filter((code): code is string => typeof code === 'string' && code.length > 0 && code.length <= 200);
      return [...new Set(codes)];
    } catch {
      return [];
    }
  }
}
