import { Global, Module } from '@nestjs/common';
import { BearerKeyGuard } from './bearer-key.guard.js';
import { PartnerAuthenticator } from './partner-authenticator.js';
import { WhoAmIController } from './whoami.controller.js';

/**
 * Keys and scopes of the partner API (CONTRACT §10): one {@link PartnerAuthenticator} per process
 * (its failed-authentication counts are shared by every route), the guard of `@RequireScope()`,
 * and `GET /auth/whoami` (a key's name and scopes, for the operator console's sign-in).
 */
@Global()
@Module({
  controllers: [WhoAmIController],
  providers: [PartnerAuthenticator, BearerKeyGuard],
  exports: [PartnerAuthenticator, BearerKeyGuard],
})
export class AuthModule {}
