import { Global, Module } from '@nestjs/common';
import { BearerKeyGuard } from './bearer-key.guard.js';
import { PartnerAuthenticator } from './partner-authenticator.js';
import { WhoAmIController } from './whoami.controller.js';

/**
 * Keys and scopes of the partner API (CONTRACT §10): one {@link PartnerAuthenticator} per process
 * (its failed-authentication counts are shared by every route), the guard of `@RequireScope()`.
 */
@Global()
@Module({
  controllers: [WhoAmIController],
  providers: [PartnerAuthenticator, BearerKeyGuard],
  exports: [PartnerAuthenticator, BearerKeyGuard],
})
export class AuthModule {}
