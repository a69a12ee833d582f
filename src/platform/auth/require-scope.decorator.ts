import {
  applyDecorators,
  createParamDecorator,
  ExecutionContext,
  SetMetadata,
  UseGuards,
} from '@nestjs/common';
import { ApiBearerAuth, ApiExtension, ApiResponse } from '@nestjs/swagger';
import { apiError } from '../common/error-response.dto.js';
import { clientAddressOf } from '../observability/client-address.js';
import { requestIdOf } from '../observability/request-id.js';
import type { Actor as ActingKey } from './actor.js';
import type { Scope } from './api-keys.js';
import { BearerKeyGuard, REQUIRED_SCOPE } from './bearer-key.guard.js';
import type { AuthenticatedRequest } from './partner-authenticator.js';

/**
 * The OpenAPI side of a scope: the bearer scheme, `x-required-scope` and the 401, 403 and 429
 * answers (CONTRACT §10; docs/api.md#keys-and-scopes).
 */
export function ApiScope(scope: Scope) {
  return applyDecorators(
    ApiBearerAuth(),
    ApiExtension('x-required-scope', scope),
    ApiResponse(apiError(401, 'a valid bearer key is required', 'unauthorized')),
    ApiResponse(
      apiError(
        403,
        `the key has no scope ${scope}`,
        'insufficient_scope',
        `this route needs scope ${scope}; ${scope === 'read' ? 'key placement has register' : 'key reader has read'}`,
      ),
    ),
    ApiResponse({
      ...apiError(
        429,
        'too many failed authentications from this address (AUTH_FAILURE_LIMIT per AUTH_FAILURE_WINDOW)',
        'too_many_auth_failures',
        'too many failed authentications from this address; retry in 42 s',
      ),
      headers: {
        'Retry-After': { description: 'seconds until the window ends', schema: { type: 'integer' } },
      },
    }),
  );
}

/**
 * A partner API route needing `scope` (`read`, `register`, `money`, `operate`): the guard, the
 * scope for it, and the OpenAPI description. One line on each route.
 */
export function RequireScope(scope: Scope) {
  return applyDecorators(SetMetadata(REQUIRED_SCOPE, scope), UseGuards(BearerKeyGuard), ApiScope(scope));
}

/**
 * The key that authenticated the request (a route with `@RequireScope()`): its name, recorded as
 * the actor of what it does, its scopes, the request id and the client address (`Actor` of
 * `src/platform/auth/actor.ts`).
 * Never the secret.
 */
export const Actor = createParamDecorator((_: unknown, ctx: ExecutionContext): ActingKey => {
  const req = ctx.switchToHttp().getRequest<AuthenticatedRequest>();
  if (req.apiKey === undefined) throw new Error('@Actor() on a route without @RequireScope()');
  return {
    name: req.apiKey.name,
    scopes: req.apiKey.scopes,
    requestId: requestIdOf(req),
    clientAddress: clientAddressOf(req),
  };
});

/** The type of what `@Actor()` gives: `Actor` of `src/platform/auth/actor.ts`. */
export type Actor = ActingKey;
