import type { WalletConfig } from './wallet.config.js';

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
