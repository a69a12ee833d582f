import { Inject, Injectable, Module } from '@nestjs/common';
import { CouponRepository } from '../../core/coupons/coupon.repository.js';
import { CouponsModule } from '../../core/coupons/coupons.module.js';
import { LedgerModule } from '../../core/ledger/ledger.module.js';
import { MONEY_CONFIG } from '../../core/ledger/money.config.js';
import type { MoneyConfig } from '../../core/ledger/money.config.js';
import { PostedOperationWriters } from '../../core/ledger/posted-operation-writers.js';
import { BackgroundGovernor, WorkGate } from '../../platform/background/background-governor.js';
import type { CurrencyTable } from '../../platform/common/currency.js';
import { TransactionRunner } from '../../platform/database/transaction.js';
import { MetricsRegistry } from '../../platform/observability/metrics-registry.js';
import { OperatorActionLog } from '../../platform/operator-actions/operator-action-log.js';
import { OutboxMetricNames, OutboxMetrics } from './outbox-metrics.js';
import { OutboxRepository } from './outbox.repository.js';
import { OutboxActionKinds, OutboxService } from './outbox.service.js';
import type { OutboxDeliverer, OutboxDestination } from './outbox.types.js';
import { OutboxWorker } from './outbox.worker.js';

/**
 * One destination's outbox (docs/extending.md, "Outboxes"): its SQL, registered with the posting
 * statement; its operators' service; and, once {@link deliverThrough} names its deliverer, its
 * delivery workers, which its module starts and stops. Opened by {@link OutboxParts.open}.
 */
export class Outbox {
  readonly repository: OutboxRepository;
  readonly service: OutboxService;
  private worker?: OutboxWorker;

  constructor(
    private readonly parts: OutboxParts,
    destination: OutboxDestination,
    kinds: OutboxActionKinds,
    private readonly metrics: OutboxMetrics,
  ) {
    const repository = new OutboxRepository(destination, parts.coupons);
    parts.writers.register({
      name: destination.name,
      insertSql: (inserted) => repository.insertSql(inserted),
    });
    this.repository = repository;
    this.service = new OutboxService(
      repository,
      parts.transactions,
      parts.actions,
      parts.currencies,
      kinds,
      metrics,
      () => this.wake(),
    );
  }

  /** Delivers this outbox's rows through `deliverer`, each claim after a permit of `gate`. */
  deliverThrough(deliverer: OutboxDeliverer, gate: WorkGate): void {
    this.worker = new OutboxWorker(this.repository, deliverer, this.parts.transactions, this.metrics, gate);
  }

  /** Starts the delivery workers (at bootstrap). @returns false when it has no deliverer. */
  start(): boolean {
    this.worker?.start();
    return this.worker !== undefined;
  }

  /** Stops the delivery workers, letting claims in flight finish. */
  async stop(): Promise<void> {
    await this.worker?.stop();
  }

  /** Ends the sleep of idle delivery workers (operators' releases and resumes, tests). */
  wake(): void {
    this.worker?.wake();
  }
}

/**
 * What every outbox is built with: the currencies, coupons, transactions, operator actions, the
 * posting statement's writers, metrics and the background-work governor. Provided by
 * {@link OutboxModule} to the wallet's and the events' modules.
 */
@Injectable()
export class OutboxParts {
  constructor(
    @Inject(MONEY_CONFIG) private readonly money: MoneyConfig,
    readonly coupons: CouponRepository,
    readonly transactions: TransactionRunner,
    readonly actions: OperatorActionLog,
    readonly writers: PostedOperationWriters,
    private readonly registry: MetricsRegistry,
    readonly governor: BackgroundGovernor,
  ) {}

  /** The configured currencies (`MONEY_*`): the messages' amounts are formatted by them. */
  get currencies(): CurrencyTable {
    return this.money.currencies;
  }

  /** A kind of outbox's metrics (one set for the wallet, one for all publishers, labelled by `label`). */
  metrics(names: OutboxMetricNames, label: string | null, target: string): OutboxMetrics {
    return new OutboxMetrics(this.registry, names, label, target);
  }

  /** Opens `destination`'s outbox, its operator actions recorded as `kinds`. */
  open(destination: OutboxDestination, kinds: OutboxActionKinds, metrics: OutboxMetrics): Outbox {
    return new Outbox(this, destination, kinds, metrics);
  }
}

/** Provides {@link OutboxParts} (with the coupons and ledger it needs) to an outbox's module. */
@Module({
  imports: [CouponsModule, LedgerModule],
  providers: [OutboxParts],
  exports: [OutboxParts],
})
export class OutboxModule {}
