import { BlockList, isIPv4 } from 'node:net';
import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { Response } from 'express';
import { AuthenticatedRequest, PartnerAuthenticator } from '../auth/partner-authenticator.js';
import { clientAddressOf } from '../observability/client-address.js';
import { METRICS_CONFIG } from './metrics.config.js';
import type { MetricsConfig } from './metrics.config.js';

/** `a.b.c.d`, `a.b.c.d/n`, an IPv6 address or `addr/n` as a BlockList rule. */
export function networkList(entries: string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const [address, bits] = entry.split('/');
    const type = isIPv4(address) ? 'ipv4' : 'ipv6';
    if (bits === undefined) list.addAddress(address, type);
    else list.addSubnet(address, Number(bits), type);
  }
  return list;
}

/** `::ffff:10.0.0.1` (IPv4 on a dual-stack socket) as `10.0.0.1`. */
function plainAddress(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped ? mapped[1] : address;
}

/**
 * `GET /metrics` access: a client address inside `METRICS_ALLOWED_NETWORKS` ({@link clientAddressOf}:
 * the TCP peer, or `X-Forwarded-For` from one of `TRUSTED_PROXIES` only), or else a bearer key with
 * scope `read`, as for the partner API.
 * @throws DomainException UNAUTHORIZED (401), INSUFFICIENT_SCOPE (403), TOO_MANY_AUTH_FAILURES (429).
 */
@Injectable()
export class MetricsAccessGuard implements CanActivate {
  private readonly allowed: BlockList;

  constructor(
    @Inject(METRICS_CONFIG) config: MetricsConfig,
    private readonly auth: PartnerAuthenticator,
  ) {
    this.allowed = networkList(config.metricsAllowedNetworks);
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const req = http.getRequest<AuthenticatedRequest>();
    const peer = clientAddressOf(req);
    if (peer) {
      const address = plainAddress(peer);
      if (this.allowed.check(address, isIPv4(address) ? 'ipv4' : 'ipv6')) return true;
    }
    await this.auth.authenticate(req, http.getResponse<Response>(), 'read');
    return true;
  }
}
