import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_INTERCEPTOR, RouterModule } from '@nestjs/core';
import { AuditModule } from './audit/audit.module.js';
import { AuthModule } from './auth/auth.module.js';
import { BackgroundModule } from './background/background.module.js';
import { CallbacksModule } from './callbacks/callbacks.module.js';
import { CallbackAdminModule } from './callbacks/callback-admin.module.js';
import { AllExceptionsFilter } from './http/all-exceptions.filter.js';
import { RequestDeadlineInterceptor } from './http/request-deadline.interceptor.js';
import { PartnerBodyInterceptor } from './common/partner-body.js';
import { AppConfigModule } from './config/app-config.module.js';
import { AppConfig } from './config/configuration.js';
import { CouponsModule } from './coupons/coupons.module.js';
import { DatabaseModule } from './database/database.module.js';
import { HealthModule } from './health/health.module.js';
import { ObservabilityModule } from './observability/observability.module.js';
import { LedgerModule } from './ledger/ledger.module.js';
import { ReconciliationModule } from './reconciliation/reconciliation.module.js';
import { WalletModule } from './wallet/wallet.module.js';
import { OperatorActionsModule } from './operator-actions/operator-actions.module.js';
import { ConsoleModule } from './console/console.module.js';
import { BulkActionsModule } from './bulk-actions/bulk-actions.module.js';
import type { DestinationStream } from 'pino';

/**
 * The receiver: configuration, database, the callback (mounted at `CALLBACK_PATH`), coupons and
 * the ledger of the partner API, polling fallback and reconciliation (CONTRACT §9), the operator
 * endpoints of the callback (quarantine, inbox), health probes with the graceful-shutdown state,
 * JSON logs and Prometheus metrics, the background-work governor, the delivery audit endpoints,
 * the partner API's keys and scopes, the wallet outbox and its connector, the operator console's
 * API (operator actions log, search, overview, bulk actions), and the one exception filter.
 */
@Module({})
export class AppModule {
  /** @param options.logDestination replaces stdout for the JSON log lines (tests). */
  static forRoot(config: AppConfig, options: { logDestination?: DestinationStream } = {}): DynamicModule {
    return {
      module: AppModule,
      imports: [
        AppConfigModule.forRoot(config),
        AuthModule,
        DatabaseModule,
        ObservabilityModule.forRoot(options),
        BackgroundModule,
        HealthModule,
        LedgerModule,
        CouponsModule,
        CallbacksModule,
        ReconciliationModule,
        AuditModule,
        CallbackAdminModule,
        WalletModule.forRoot(config),
        OperatorActionsModule,
        ConsoleModule,
        BulkActionsModule,
        RouterModule.register([{ path: config.callbackPath, module: CallbacksModule }]),
      ],
      providers: [
        { provide: APP_FILTER, useClass: AllExceptionsFilter },
        { provide: APP_INTERCEPTOR, useClass: RequestDeadlineInterceptor },
        { provide: APP_INTERCEPTOR, useClass: PartnerBodyInterceptor },
      ],
    };
  }
}
