import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_INTERCEPTOR, RouterModule } from '@nestjs/core';
import type { DestinationStream } from 'pino';
import { AuditModule } from './operations/audit/audit.module.js';
import { configSlices } from './app.config.js';
import type { AppConfig } from './app.config.js';
import { AuthModule } from './platform/auth/auth.module.js';
import type { ReceiverSettingsView } from './platform/auth/whoami.controller.js';
import { BackgroundModule } from './platform/background/background.module.js';
import { BulkActionsModule } from './operations/bulk-actions/bulk-actions.module.js';
import { callbackLogFields } from './intake/callbacks/callback-request.js';
import { CallbacksModule } from './intake/callbacks/callbacks.module.js';
import { PartnerBodyInterceptor } from './platform/common/partner-body.js';
import { AppConfigModule } from './platform/config/app-config.module.js';
import { ConsoleModule } from './operations/console/console.module.js';
import { CouponsModule } from './core/coupons/coupons.module.js';
import { DatabaseModule } from './platform/database/database.module.js';
import { extensionSchema } from './platform/database/extension-schema.js';
import { extensionModules, isExtension } from './extension.js';
import type { ExtensionEntry } from './extension.js';
import { MIGRATIONS } from '../migrations/index.js';
import { DeliveriesModule } from './platform/deliveries/deliveries.module.js';
import { EventsModule } from './outbound/events/events.module.js';
import { HealthModule } from './platform/health/health.module.js';
import { AllExceptionsFilter } from './platform/http/all-exceptions.filter.js';
import { RequestDeadlineInterceptor } from './platform/http/request-deadline.interceptor.js';
import { InboxModule } from './intake/inbox/inbox.module.js';
import { LedgerModule } from './core/ledger/ledger.module.js';
import type { LoggingOptions } from './platform/observability/logging.js';
import { ObservabilityModule } from './platform/observability/observability.module.js';
import { OperatorActionsModule } from './platform/operator-actions/operator-actions.module.js';
import { QuarantineModule } from './intake/quarantine/quarantine.module.js';
import { ReconciliationModule } from './intake/reconciliation/reconciliation.module.js';
import { RetentionModule } from './operations/retention/retention.module.js';
import { SettlementModule } from './core/settlement/settlement.module.js';
import { WalletModule } from './outbound/wallet/wallet.module.js';

/** Options of {@link AppModule.forRoot}. */
export interface AppOptions {
  /** Replaces stdout for the JSON log lines (tests). */
  logDestination?: DestinationStream;
  /**
   * The bookmaker's extensions (docs/extending.md): {@link Extension} entries (a module with its
   * migrations, entities, configuration fragment and declared names) or bare modules. Each module
   * is imported into the app, where the receiver finds, by their base class, the
   * `WalletConnector`s (named by `WALLET_CONNECTOR`), the `SettlementHook`s (run in every
   * settlement transaction) and the `EventPublisher`s (named by `EVENT_PUBLISHERS`) they provide;
   * the entries' migrations run with ours. An entry with a configuration fragment needs the
   * configuration of `loadConfig(env, extensions)`. No file of the receiver changes to add one.
   */
  extensions?: ExtensionEntry[];
}

/** What the logs need to know of the features (observability imports none of them). */
export function appLogging(config: AppConfig): LoggingOptions {
  return {
    level: config.logging.logLevel,
    ownSummaryPaths: [config.http.callbackPath.replace(/\/+$/, '').toLowerCase()],
    secretHeaders: [config.callback.signatureHeader],
    requestFields: callbackLogFields,
  };
}

/** What `GET /auth/whoami` says the receiver is set up to do (auth imports none of these features). */
export function receiverSettings(config: AppConfig): ReceiverSettingsView {
  const polling = Boolean(config.sportApi.baseUrl);
  return {
    polling,
    scheduledReconciliation: polling && config.reconciliation.intervalMs > 0,
    walletConnector: config.wallet.connector ?? null,
    statusKinds: Object.fromEntries(Object.entries(config.settlement.statusMap)),
  };
}

/**
 * The receiver: configuration, database, the callback (mounted at `CALLBACK_PATH`) and the
 * settlement service every path applies batches through, the inbox and the quarantine, coupons and
 * the ledger of the partner API, polling fallback and reconciliation (CONTRACT §9), health probes
 * and metrics with the graceful-shutdown state, JSON logs, the background-work governor, the
 * delivery audit endpoints, the partner API's keys and scopes, the outboxes (wallet, settlement
 * events) with their connector and publishers, the operator console's API (operator actions log,
 * search, overview, bulk actions), the one exception filter, and the bookmaker's extensions.
 */
@Module({})
export class AppModule {
  static forRoot(config: AppConfig, options: AppOptions = {}): DynamicModule {
    const entries = (options.extensions ?? []).filter(isExtension);
    const loaded = new Set(config.extensions.settings.map((s) => s.name));
    const unloaded = entries.filter((e) => e.config && !loaded.has(e.name)).map((e) => e.name);
    if (unloaded.length)
      throw new Error(
        `the configuration of extension ${unloaded.join(', ')} was not loaded: pass the extensions to loadConfig(env, extensions)`,
      );
    return {
      module: AppModule,
      imports: [
        AppConfigModule.forRoot(configSlices(config, entries)),
        AuthModule.forRoot(receiverSettings(config)),
        DatabaseModule.forRoot(entries.length ? extensionSchema(entries, MIGRATIONS) : undefined),
        ObservabilityModule.forRoot(appLogging(config), { logDestination: options.logDestination }),
        DeliveriesModule,
        BackgroundModule,
        HealthModule,
        LedgerModule,
        CouponsModule,
        SettlementModule,
        InboxModule,
        QuarantineModule,
        CallbacksModule,
        ReconciliationModule,
        AuditModule,
        WalletModule.forRoot(config.wallet),
        EventsModule.forRoot(config.events),
        OperatorActionsModule,
        ConsoleModule,
        BulkActionsModule,
        RetentionModule,
        RouterModule.register([{ path: config.http.callbackPath, module: CallbacksModule }]),
        ...extensionModules(options.extensions ?? []),
      ],
      providers: [
        { provide: APP_FILTER, useClass: AllExceptionsFilter },
        { provide: APP_INTERCEPTOR, useClass: RequestDeadlineInterceptor },
        { provide: APP_INTERCEPTOR, useClass: PartnerBodyInterceptor },
      ],
    };
  }
}
