import type { Type } from '@nestjs/common';
import { HttpWalletConnectorModule } from './connectors/http-wallet.connector.js';
import { PartnerTableWalletModule } from './connectors/partner-table/partner-table-wallet.connector.js';

/**
 * The wallet connectors `WALLET_CONNECTOR` can name: each a NestJS module that provides and
 * exports {@link WalletConnector}. A partner's connector module is added here, one line
 * (docs/wallet.md, "Writing a connector module").
 */
export const WALLET_CONNECTORS: Readonly<Record<string, Type<unknown>>> = {
  http: HttpWalletConnectorModule,
  'partner-table': PartnerTableWalletModule,
};
