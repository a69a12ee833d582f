import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, RouterModule } from '@nestjs/core';
import { CallbacksModule } from './callbacks/callbacks.module.js';
import { CallbackAdminModule } from './callbacks/callback-admin.module.js';
import { AllExceptionsFilter } from './common/all-exceptions.filter.js';
import { AppConfigModule } from './config/app-config.module.js';
import { AppConfig } from './config/configuration.js';
import { CouponsModule } from './coupons/coupons.module.js';
import { DatabaseModule } from './database/database.module.js';
import { LedgerModule } from './ledger/ledger.module.js';

/**
 * The receiver: configuration, database, the callback (mounted at `CALLBACK_PATH`), coupons and
 * the ledger of the partner API, the operator endpoints of the callback (quarantine, inbox), and the one exception filter.
 */
@Module({})
export class AppModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        AppConfigModule.forRoot(config),
        DatabaseModule,
        LedgerModule,
        CouponsModule,
        CallbacksModule,
        CallbackAdminModule,
        RouterModule.register([{ path: config.callbackPath, module: CallbacksModule }]),
      ],
      providers: [{ provide: APP_FILTER, useClass: AllExceptionsFilter }],
    };
  }
}
