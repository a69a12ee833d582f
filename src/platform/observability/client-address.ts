import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';

/**
 * The address of the client that sent `req`: Express's `req.ip`, which is the TCP peer unless that
 * peer is one of `TRUSTED_PROXIES` (Express `trust proxy`, set by `configureApp`), and then the
 * nearest untrusted address of `X-Forwarded-For` (docs/configuration.md#client-address). A
 * forwarded value that is no IP address (`unknown`, `host:port`, junk a trusted hop passed on) is
 * not taken: the TCP peer stands instead. The one rule the failed-authentication limit, the log
 * lines and the operator actions log go by; the socket's peer for a request that has not been
 * through Express (tests, `null` when gone).
 */
export function clientAddressOf(req: IncomingMessage): string | null {
  const ip = (req as IncomingMessage & { ip?: string }).ip;
  if (ip !== undefined && isIP(ip) !== 0) return ip;
  return req.socket?.remoteAddress ?? null;
}
