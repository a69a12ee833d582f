import { DynamicModule, Module } from '@nestjs/common';
import type { AppConfig } from '../config/configuration.js';
import { CouponsModule } from '../coupons/coupons.module.js';
import { OutboxRepository } from '../outbox/outbox.repository.js';
import { OutboxWorker } from '../outbox/outbox.worker.js';
import { WALLET_CONNECTORS } from './wallet-connectors.js';
import { WalletController } from './wallet.controller.js';
import { WalletMetrics } from '../outbox/outbox-metrics.js';
import { WalletService } from '../outbox/outbox.service.js';

/**
 * Settlement beyond the ledger (docs/wallet.md): the outbox's operator endpoints and gauges
 * always; with a connector (`WALLET_CONNECTOR`, or `WALLET_URL` for the HTTP one) its delivery
 * workers too. The posting statement writes the outbox rows (LedgerService, `WALLET_OPERATION_TYPES`).
 */
@Module({})
export class WalletModule {
  /** @throws Error naming `WALLET_CONNECTOR` when it names no connector of {@link WALLET_CONNECTORS}. */
  static forRoot(config: AppConfig): DynamicModule {
    const base = {
      module: WalletModule,
      imports: [CouponsModule],
      controllers: [WalletController],
      providers: [OutboxRepository, WalletMetrics, WalletService],
    };
    const name = config.wallet.connector;
    if (name === undefined) return base;
    const connector = WALLET_CONNECTORS[name];
    if (!connector) {
      throw new Error(
        `Invalid configuration:\n  - WALLET_CONNECTOR: no connector '${name}' (known: ${Object.keys(WALLET_CONNECTORS).join(', ')}, none)`,
      );
    }
    return { ...base, imports: [...base.imports, connector], providers: [...base.providers, OutboxWorker] };
  }
}
