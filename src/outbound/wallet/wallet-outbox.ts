import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnModuleDestroy,
  OnModuleInit,
  Optional,
} from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { discoverExtensions } from '../../platform/common/extension-discovery.js';
import type { CurrencyTable } from '../../platform/common/currency.js';
import { WALLET_CONFIG } from './wallet.config.js';
import type { WalletConfig } from './wallet.config.js';
import { WALLET_METRIC } from '../outbox/outbox-metrics.js';
import { Outbox, OutboxParts } from '../outbox/outbox.js';
import { OutboxRepository } from '../outbox/outbox.repository.js';
import { OutboxService } from '../outbox/outbox.service.js';
import { OutboxDeliverer, OutboxDestination, WALLET_REFUSED_REVIEW_REASON } from '../outbox/outbox.types.js';
import { WalletConnector, WalletTransaction } from './wallet-connector.js';
import { unknownWalletConnector } from './wallet-connectors.js';
import { walletTransactionOf } from './wallet-transaction.js';

/** The wallet as an outbox destination: `wallet_outbox` (every row its own), `WALLET_*` settings. */
export function walletDestination(w: WalletConfig, currencies: CurrencyTable): OutboxDestination {
  return {
    name: 'wallet',
    statementPrefix: 'wo',
    tables: { outbox: 'wallet_outbox', attempts: 'wallet_delivery_attempts', state: 'wallet_outbox_state' },
    scope: null,
    operationTypes: w.operationTypes,
    flagReason: WALLET_REFUSED_REVIEW_REASON,
    messageOf: (op) => walletTransactionOf(op, (amount, currency) => currencies.format(amount, currency)),
    settings: w,
  };
}

/** A wallet connector as the outbox's deliverer: the transaction and its exact bytes, per row or batch. */
export function connectorDeliverer(connector: WalletConnector): OutboxDeliverer {
  return {
    name: connector.name,
    deliver: (m, requestId, signal) =>
      connector.deliver({
        transaction: m.message as WalletTransaction,
        body: m.body,
        requestId,
        outboxId: m.outboxId,
        attempt: m.attempt,
        signal,
      }),
    deliverMany: connector.deliverMany
      ? (messages, requestId, signal) =>
          (connector.deliverMany as NonNullable<WalletConnector['deliverMany']>)({
            items: messages.map((m) => ({
              transaction: m.message as WalletTransaction,
              body: m.body,
              outboxId: m.outboxId,
              attempt: m.attempt,
            })),
            requestId,
            signal,
          })
      : undefined,
  };
}

/**
 * The wallet outbox (docs/wallet.md): its rows written by the posting statement for the pushed
 * operation types, its operators' service and gauges always; with a connector
 * (`WALLET_CONNECTOR`: any registered {@link WalletConnector}, found by its name among the app's
 * providers, the bookmaker's modules included), its delivery workers too.
 */
@Injectable()
export class WalletOutbox implements OnModuleInit, OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('WalletOutbox');
  private readonly outbox: Outbox;
  /** The connector in force, once found (undefined: none configured). */
  connector?: WalletConnector;

  constructor(
    @Inject(WALLET_CONFIG) private readonly config: WalletConfig,
    private readonly parts: OutboxParts,
    private readonly discovery: DiscoveryService,
    /** The connector this module imports for `http` (the HTTP one, or a test's replacement). */
    @Optional() @Inject(WalletConnector) private readonly imported?: WalletConnector,
  ) {
    this.outbox = parts.open(
      walletDestination(config, parts.currencies),
      {
        row: 'outbox',
        pause: 'wallet_pause',
        resume: 'wallet_resume',
        pauseTarget: { kind: 'wallet', id: null },
      },
      parts.metrics(WALLET_METRIC, null, 'the wallet'),
    );
  }

  get repository(): OutboxRepository {
    return this.outbox.repository;
  }

  get service(): OutboxService {
    return this.outbox.service;
  }

  /**
   * Finds the connector `WALLET_CONNECTOR` names among the app's providers: `http` is the one this
   * module imports (a test may replace it), any other name one a module provides.
   * @throws Error naming `WALLET_CONNECTOR` and the known connectors when none has that name.
   */
  onModuleInit(): void {
    const name = this.config.connector;
    if (name === undefined) return;
    const connectors = discoverExtensions(this.discovery, WalletConnector);
    this.connector = name === 'http' ? this.imported : connectors.find((c) => c.name === name);
    if (!this.connector)
      throw unknownWalletConnector(
        name,
        connectors.map((c) => c.name),
      );
    // Each claim waits for a permit of the governor: pushes back off while the callback is slow.
    const gate = this.parts.governor.register('wallet', this.config.concurrency);
    this.outbox.deliverThrough(connectorDeliverer(this.connector), gate);
  }

  onApplicationBootstrap(): void {
    if (this.outbox.start()) this.logger.log(`wallet connector ${this.connector?.name}`);
  }

  async onModuleDestroy(): Promise<void> {
    await this.outbox.stop();
  }

  /** Ends the sleep of idle delivery workers (tests; operators' actions do it themselves). */
  wake(): void {
    this.outbox.wake();
  }
}
