import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Response } from 'express';
import type { Scope } from './api-keys.js';
import { AuthenticatedRequest, PartnerAuthenticator } from './partner-authenticator.js';

/** Metadata key of the scope a route needs, set by `@RequireScope()`. */
export const REQUIRED_SCOPE = 'partner-api:required-scope';

/**
 * Partner API guard (CONTRACT §10), installed by `@RequireScope(scope)` on each route: a bearer
 * key of `OPS_API_KEYS` holding the route's scope ({@link PartnerAuthenticator}).
 * @throws DomainException UNAUTHORIZED (401), INSUFFICIENT_SCOPE (403), TOO_MANY_AUTH_FAILURES (429);
 *   Error when the route declares no scope (fails closed).
 */
@Injectable()
export class BearerKeyGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly auth: PartnerAuthenticator,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const scope = this.reflector.get<Scope | undefined>(REQUIRED_SCOPE, context.getHandler());
    if (!scope) throw new Error(`${context.getClass().name}.${context.getHandler().name} declares no scope`);
    const http = context.switchToHttp();
    await this.auth.authenticate(
      http.getRequest<AuthenticatedRequest>(),
      http.getResponse<Response>(),
      scope,
    );
    return true;
  }
}
