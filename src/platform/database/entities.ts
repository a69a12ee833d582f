import { AccountEntity } from '../../core/ledger/entities/account.entity.js';
import { AccountAdjustmentEntity } from '../../core/ledger/entities/account-adjustment.entity.js';
import { FinancialOperationEntity } from '../../core/ledger/entities/financial-operation.entity.js';
import { LedgerEntryEntity } from '../../core/ledger/entities/ledger-entry.entity.js';
import { BetEntity } from '../../core/coupons/entities/bet.entity.js';
import { CouponEntity } from '../../core/coupons/entities/coupon.entity.js';
import { CouponSnapshotEntity } from '../../core/coupons/entities/coupon-snapshot.entity.js';
import { CallbackBatchEntity } from '../../core/settlement/entities/callback-batch.entity.js';
import { DeliveryAttemptEntity } from '../deliveries/entities/delivery-attempt.entity.js';
import { InboxEntryEntity } from '../../intake/inbox/entities/inbox-entry.entity.js';
import { PendingInboxCouponEntity } from '../../intake/inbox/entities/pending-inbox-coupon.entity.js';
import { QuarantinedBodyEntity } from '../../intake/quarantine/entities/quarantined-body.entity.js';
import { CouponResolutionEntity } from '../../intake/reconciliation/entities/coupon-resolution.entity.js';
import { WalletDeliveryAttemptEntity } from '../../outbound/wallet/entities/wallet-delivery-attempt.entity.js';
import { WalletOutboxEntryEntity } from '../../outbound/wallet/entities/wallet-outbox-entry.entity.js';
import { WalletOutboxStateEntity } from '../../outbound/wallet/entities/wallet-outbox-state.entity.js';
import { EventDeliveryAttemptEntity } from '../../outbound/events/entities/event-delivery-attempt.entity.js';
import { EventOutboxEntryEntity } from '../../outbound/events/entities/event-outbox-entry.entity.js';
import { EventOutboxStateEntity } from '../../outbound/events/entities/event-outbox-state.entity.js';
import { OperatorActionEntity } from '../operator-actions/entities/operator-action.entity.js';
import { DeliveryMinuteEntity } from '../../operations/console/entities/delivery-minute.entity.js';
import { BulkActionEntity } from '../../operations/bulk-actions/entities/bulk-action.entity.js';
import { BulkActionItemEntity } from '../../operations/bulk-actions/entities/bulk-action-item.entity.js';
import { RetentionHorizonEntity } from '../retention-horizons/entities/retention-horizon.entity.js';

/**
 * Every entity of the schema (the tables themselves come only from `migrations/`), each declaring
 * exactly what the migrations create (docs/schema-changes.md). Not modelled by TypeORM, so only in
 * the migrations: the functions `forbid_ledger_mutation()` (append-only triggers, `operator_actions` included), `receiver_assert()` and
 * `callback_inbox_pending_coupons_sync()` (the triggers that keep `callback_inbox_pending_coupons`).
 */
export const ENTITIES = [
  AccountEntity,
  AccountAdjustmentEntity,
  FinancialOperationEntity,
  LedgerEntryEntity,
  CouponEntity,
  BetEntity,
  CouponSnapshotEntity,
  CallbackBatchEntity,
  DeliveryAttemptEntity,
  QuarantinedBodyEntity,
  CouponResolutionEntity,
  InboxEntryEntity,
  PendingInboxCouponEntity,
  WalletOutboxEntryEntity,
  WalletDeliveryAttemptEntity,
  WalletOutboxStateEntity,
  EventOutboxEntryEntity,
  EventDeliveryAttemptEntity,
  EventOutboxStateEntity,
  OperatorActionEntity,
  DeliveryMinuteEntity,
  BulkActionEntity,
  BulkActionItemEntity,
  RetentionHorizonEntity,
];
