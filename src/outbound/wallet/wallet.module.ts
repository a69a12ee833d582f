import { DynamicModule, Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { OutboxModule } from '../outbox/outbox.js';
import { HttpWalletConnectorModule } from './connectors/http-wallet.connector.js';
import { WalletController } from './wallet.controller.js';
import { WalletOutbox } from './wallet-outbox.js';
import type { WalletConfig } from './wallet.config.js';

/**
 * Settlement beyond the ledger (docs/wallet.md): the wallet outbox's operator endpoints and gauges
 * always; with a connector its delivery workers too. The built-in HTTP connector is added when
 * `WALLET_CONNECTOR` is `http` (or `WALLET_URL` is set); any other name is a connector of a module
 * the app was given (`AppModule.forRoot(config, { extensions })`, docs/extending.md).
 */
@Module({})
export class WalletModule {
  static forRoot(config: WalletConfig): DynamicModule {
    return {
      module: WalletModule,
      imports: [
        DiscoveryModule,
        OutboxModule,
        ...(config.connector === 'http' ? [HttpWalletConnectorModule] : []),
      ],
      controllers: [WalletController],
      providers: [WalletOutbox],
      exports: [WalletOutbox],
    };
  }
}
