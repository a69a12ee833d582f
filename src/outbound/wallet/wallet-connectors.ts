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

/** The connectors of the receiver itself; `WALLET_CONNECTOR` may also be `none`. */
export const BUILT_IN_WALLET_CONNECTORS = ['http'] as const;

/**
 * The error of a `WALLET_CONNECTOR` that names no connector (`known`: the names found, built-in
 * ones first), refused before the database when no extension module is given, else at start-up.
 */
export function unknownWalletConnector(name: string, known: readonly string[]): Error {
  const names = [...new Set([...BUILT_IN_WALLET_CONNECTORS, ...known])];
  return new Error(
    `Invalid configuration:\n  - WALLET_CONNECTOR: no connector '${name}' (known: ${names.join(', ')}, none)`,
  );
}
