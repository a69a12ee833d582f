import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { APP_CONFIG } from '../../config/configuration.js';
import type { AppConfig } from '../../config/configuration.js';
import { InboxService } from './inbox.service.js';

/**
 * The inbox workers of this process: `INBOX_CONCURRENCY` loops, each applying one inbox row at a
 * time through {@link InboxService.applyNext} until none is due, then sleeping
 * `INBOX_POLL_INTERVAL_MS` (woken early when this process accepts a batch). Every replica runs
 * them; `FOR UPDATE SKIP LOCKED` and the per-coupon order of the claim keep them apart. A plain
 * loop rather than a scheduler interval: a worker drains the backlog back to back, never runs
 * twice at once, and stops cleanly (the batch in hand is finished) when the module is destroyed.
 * Started in inbox mode, and in inline mode too while rows are left from an earlier inbox run.
 */
@Injectable()
export class InboxWorker implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('InboxWorker');
  private running = false;
  private loops: Promise<void>[] = [];
  private readonly sleepers = new Set<() => void>();
  private unsubscribe?: () => void;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly inbox: InboxService,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.callbackMode === 'inbox') return this.start();
    // Inline mode: a batch handed to the inbox (earlier rows of its coupons pending, see
    // InboxPendingError) starts the workers too.
    this.unsubscribe = this.inbox.onAccepted(() => this.start());
    const left = await this.inbox.pendingCount().catch(() => 0);
    if (left > 0) {
      this.logger.warn(`CALLBACK_MODE=inline but ${left} inbox row(s) are pending: applying them`);
      this.start();
    }
  }

  async onModuleDestroy(): Promise<void> {
    this.running = false;
    this.unsubscribe?.();
    this.wake();
    await Promise.all(this.loops);
    this.loops = [];
  }

  /** Ends the current sleep of every idle worker. */
  wake(): void {
    for (const wakeUp of [...this.sleepers]) wakeUp();
  }

  private start(): void {
    if (this.running) return this.wake();
    this.running = true;
    this.unsubscribe?.();
    this.unsubscribe = this.inbox.onAccepted(() => this.wake());
    for (let i = 0; i < this.config.inboxConcurrency; i++) this.loops.push(this.loop());
  }

  private async loop(): Promise<void> {
    while (this.running) {
      let found = false;
      try {
        found = await this.inbox.applyNext();
      } catch (err) {
        this.logger.error(`inbox worker: ${(err as Error).message}`);
      }
      if (!found && this.running) await this.sleep(this.config.inboxPollIntervalMs);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.sleepers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.sleepers.add(done);
    });
  }
}
