/**
 * The extension API of the receiver (docs/extending.md), in one place for the bookmaker's modules:
 * list a module in `AppModule.forRoot(config, { extensions: [...] })` (or
 * `startReceiver({ extensions: [...] })`) and the providers it holds that extend these classes are
 * found at start: wallet connectors (named by `WALLET_CONNECTOR`), settlement hooks (all run),
 * event publishers (named by `EVENT_PUBLISHERS`) and archive connectors (named by
 * `RETENTION_ARCHIVE_CONNECTOR`). No file of the receiver changes to add one. An extension entry
 * (`defineExtension`) also brings its migrations, entities and configuration fragment.
 */
export { AppModule } from './app.module.js';
export type { AppOptions } from './app.module.js';
export { loadConfig } from './app.config.js';
export type { AppConfig } from './app.config.js';
export { main, startReceiver } from './main.js';
export { defineExtension } from './extension.js';
export type { Extension, ExtensionEntry } from './extension.js';
export type { MigrationClass } from './platform/database/extension-schema.js';
export { configFragment, csv, duration } from './platform/config/config-fragment.js';
export type { ConfigFragment } from './platform/config/config-fragment.js';
export { default as Joi } from 'joi';
export { WalletConnector } from './outbound/wallet/wallet-connector.js';
export type {
  WalletBatchItem,
  WalletBatchRequest,
  WalletDelivery,
  WalletDeliveryRequest,
  WalletTransaction,
} from './outbound/wallet/wallet-connector.js';
export { SettlementHook } from './core/settlement/settlement-hook.js';
export type {
  CouponTransition,
  HookTx,
  SettlementHookContext,
  TransitionOperation,
} from './core/settlement/settlement-hook.js';
export { TransitionName, SnapshotSource } from './core/settlement-rules/settlement.types.js';
export { EventPublisher } from './outbound/events/event-publisher.js';
export type { PublishedEvent, PublishRequest, SettlementEvent } from './outbound/events/event-publisher.js';
export type { OutboxDelivery } from './outbound/outbox/outbox.types.js';
export { OperationType } from './core/ledger/ledger.types.js';
export { ArchiveConnector } from './operations/retention/archive-connector.js';
export type { ArchiveManifest } from './operations/retention/archive-connector.js';
export type { SqlResult, Statement, Tx } from './platform/database/transaction.js';
