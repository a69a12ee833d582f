import { BlockList, isIPv4 } from 'node:net';
import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { BearerKeyGuard } from '../auth/bearer-key.guard.js';
import { APP_CONFIG } from '../config/configuration.js';
import type { AppConfig } from '../config/configuration.js';

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
 * `GET /metrics` access: a peer address inside `METRICS_ALLOWED_NETWORKS` (the TCP peer, never
 * `X-Forwarded-For`), or else a bearer key of `OPS_API_KEYS` like the partner API.
 * @throws DomainException UNAUTHORIZED (401) otherwise.
 */
@Injectable()
export class MetricsAccessGuard implements CanActivate {
  private readonly allowed: BlockList;
  private readonly bearer: BearerKeyGuard;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.allowed = networkList(config.metricsAllowedNetworks);
    this.bearer = new BearerKeyGuard(config);
  }

  canActivate(context: ExecutionContext): boolean {
    const peer = context.switchToHttp().getRequest<Request>().socket.remoteAddress;
    if (peer) {
      const address = plainAddress(peer);
      if (this.allowed.check(address, isIPv4(address) ? 'ipv4' : 'ipv6')) return true;
    }
    return this.bearer.canActivate(context);
  }
}
