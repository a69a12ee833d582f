import { timingSafeEqual } from 'node:crypto';
import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import type { Request, Response } from 'express';
import ipaddr from 'ipaddr.js';
import { RateLimiterMemory } from 'rate-limiter-flexible';
import { DomainException, ErrorCode } from '../common/domain.exception.js';
import { AUTH_CONFIG } from './auth.config.js';
import type { AuthConfig } from './auth.config.js';
import { clientAddressOf } from '../observability/client-address.js';
import { ApiKey, Scope, SCOPES, sha256 } from './api-keys.js';

/** The key that authenticated a request: its name (the actor) and scopes, never its secret. */
export interface RequestKey {
  name: string;
  scopes: readonly Scope[];
}

/** Express request carrying the key that authenticated it (set by {@link PartnerAuthenticator}). */
export type AuthenticatedRequest = Request & { apiKey?: RequestKey };

/**
 * The rate limiter's key of a peer: an IPv4 address (also one mapped into IPv6), or the /64 of an
 * IPv6 address (one host usually holds a whole /64).
 */
export function clientAddressKey(address: string | null | undefined): string {
  if (!address || !ipaddr.isValid(address)) return address ?? 'unknown';
  const parsed = ipaddr.process(address);
  if (parsed instanceof ipaddr.IPv4) return parsed.toString();
  return `${new ipaddr.IPv6([...parsed.parts.slice(0, 4), 0, 0, 0, 0]).toString()}/64`;
}

/**
 * Authentication of the partner API and `/metrics` (CONTRACT §10): `Authorization: Bearer <key>`
 * compared in constant time with every configured key (SHA-256 of both sides, no early exit),
 * then the route's scope. A known key always passes. Failed authentications (401) are counted per
 * client address ({@link clientAddressOf}: the TCP peer, or `X-Forwarded-For` from one of
 * `TRUSTED_PROXIES`): past `AUTH_FAILURE_LIMIT` in `AUTH_FAILURE_WINDOW` a missing or unknown key
 * from it is answered 429 with `Retry-After` until the window ends (docs/api.md#keys-and-scopes).
 */
@Injectable()
export class PartnerAuthenticator implements OnModuleInit {
  private readonly logger = new Logger('Auth');
  private readonly keys: readonly ApiKey[];
  private readonly limit: number;
  private readonly failures: RateLimiterMemory;

  constructor(@Inject(AUTH_CONFIG) config: AuthConfig) {
    this.keys = config.opsApiKeys;
    this.limit = config.authFailureLimit;
    this.failures = new RateLimiterMemory({
      keyPrefix: 'auth-failures',
      points: config.authFailureLimit,
      duration: Math.ceil(config.authFailureWindowMs / 1000),
    });
  }

  /** One warning at start-up for bare entries of OPS_API_KEYS (every scope). */
  onModuleInit(): void {
    const legacy = this.keys.filter((k) => k.legacy).map((k) => k.name);
    if (legacy.length)
      this.logger.warn(
        `OPS_API_KEYS has ${legacy.length} bare key(s) with every scope (${SCOPES.join(', ')}), named ${legacy.join(', ')}: ` +
          'give each key a name and only the scopes it needs, as name:scopes:secret (docs/api.md#keys-and-scopes)',
      );
  }

  /**
   * The configured key matching the `Authorization` header, compared with every key.
   * @returns undefined without a `Bearer` credential or when no key matches.
   */
  match(authorization: string | undefined): ApiKey | undefined {
    const presented = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
    if (presented === undefined) return undefined;
    const digest = sha256(presented);
    let found: ApiKey | undefined;
    for (const key of this.keys) if (timingSafeEqual(digest, key.digest)) found = key;
    return found;
  }

  /**
   * Authenticates `req` for a route needing `scope`; notes the key on `req.apiKey`. A known key
   * passes whatever the failures of its address: on a shared address (a balancer without
   * `TRUSTED_PROXIES`, a NAT) one client's wrong keys do not lock the others out.
   * @throws DomainException UNAUTHORIZED (401: no or unknown key, counted), TOO_MANY_AUTH_FAILURES
   *   (429 instead, `Retry-After` set on `res`, once the address has had `AUTH_FAILURE_LIMIT`),
   *   INSUFFICIENT_SCOPE (403: not counted).
   */
  async authenticate(req: AuthenticatedRequest, res: Response, scope: Scope): Promise<RequestKey> {
    const key = this.match(req.headers.authorization);
    if (!key) {
      // The window runs from the address's first failure; a refused request still counts.
      const counted = await this.failures.penalty(clientAddressKey(clientAddressOf(req)));
      if (counted.consumedPoints > this.limit) throw this.tooMany(res, counted.msBeforeNext);
      throw new DomainException(ErrorCode.UNAUTHORIZED, 'a valid bearer key is required');
    }
    req.apiKey = { name: key.name, scopes: key.scopes };
    if (!key.scopes.includes(scope))
      throw new DomainException(
        ErrorCode.INSUFFICIENT_SCOPE,
        `this route needs scope ${scope}; key ${key.name} has ${key.scopes.join('+')}`,
      );
    return req.apiKey;
  }

  private tooMany(res: Response, msBeforeNext: number): DomainException {
    const seconds = Math.max(1, Math.ceil(msBeforeNext / 1000));
    res.setHeader('Retry-After', String(seconds));
    return new DomainException(
      ErrorCode.TOO_MANY_AUTH_FAILURES,
      `too many failed authentications from this address; retry in ${seconds} s`,
    );
  }
}
