import { Module } from '@nestjs/common';
import { WalletConnector } from '../../src/extensions.js';
import { LoyaltyPointsHook } from './loyalty-points.hook.js';
import { PartnerTablePublisher } from './partner-table.publisher.js';
import { PartnerTableWalletConnector } from './partner-table-wallet.connector.js';

/**
 * The bookmaker's module of the example (docs/extending.md): a wallet connector (`partner-table`),
 * a settlement hook (loyalty points) and an event publisher (`partner-table`), given to the
 * receiver in its extension entry (`extension.ts`, with its migrations, entities and settings):
 * `AppModule.forRoot(loadConfig(env, extensions), { extensions })` (or
 * `startReceiver({ extensions })`, see `main.ts` here) and chosen with
 * `WALLET_CONNECTOR=partner-table EVENT_PUBLISHERS=partner-table`. No file of the receiver knows it.
 */
@Module({
  providers: [
    { provide: WalletConnector, useClass: PartnerTableWalletConnector },
    LoyaltyPointsHook,
    PartnerTablePublisher,
  ],
})
export class PartnerModule {}
