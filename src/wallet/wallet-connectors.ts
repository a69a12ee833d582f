import type { Type } from '@nestjs/common';
import type { WalletConfig } from '../config/configuration.js';
import { HttpWalletConnectorModule } from './connectors/http-wallet.connector.js';
import { PartnerTableWalletModule } from '../../examples/partner-module/partner-table-wallet.connector.js';

/**
 * The wallet connectors `WALLET_CONNECTOR` can name: each a NestJS module that provides and
 * exports {@link WalletConnector}. A partner's connector module is added here, one line
 * (docs/wallet.md, "Writing a connector module").
 */
export const WALLET_CONNECTORS: Readonly<Record<string, Type<unknown>>> = {
  http: HttpWalletConnectorModule,
  'partner-table': PartnerTableWalletModule,
};

/**
 * The wallet connector in force, as the start line says it: `wallet connector: none`,
 * `wallet connector: http → http://127.0.0.1:3918` (the URL's origin and path: never its
 * credentials, query or fragment, nor `WALLET_SECRET`), or `wallet connector: <name>`.
 */
export function describeWalletConnector(wallet: Pick<WalletConfig, 'connector' | 'url'>): string {
  if (!wallet.connector) return 'wallet connector: none';
  if (wallet.connector !== 'http' || !wallet.url) return `wallet connector: ${wallet.connector}`;
  const url = new URL(wallet.url);
  return `wallet connector: http → ${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}
