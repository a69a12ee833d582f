import { DynamicModule, Global, Module } from '@nestjs/common';
import { BearerKeyGuard } from './bearer-key.guard.js';
import { PartnerAuthenticator } from './partner-authenticator.js';
import { RECEIVER_SETTINGS, WhoAmIController } from './whoami.controller.js';
import type { ReceiverSettingsView } from './whoami.controller.js';

/**
 * Keys and scopes of the partner API (CONTRACT §10): one {@link PartnerAuthenticator} per process
 * (its failed-authentication counts are shared by every route), the guard of `@RequireScope()`,
 * and `GET /auth/whoami` (a key's name and scopes, for the operator console's sign-in, with what
 * the receiver is set up to do: `receiver`, given by the app).
 */
@Global()
@Module({})
export class AuthModule {
  static forRoot(receiver: ReceiverSettingsView): DynamicModule {
    return {
      module: AuthModule,
      controllers: [WhoAmIController],
      providers: [PartnerAuthenticator, BearerKeyGuard, { provide: RECEIVER_SETTINGS, useValue: receiver }],
      exports: [PartnerAuthenticator, BearerKeyGuard],
    };
  }
}
