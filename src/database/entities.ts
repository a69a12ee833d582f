import { AccountEntity } from '../ledger/entities/account.entity.js';
import { AccountAdjustmentEntity } from '../ledger/entities/account-adjustment.entity.js';
import { FinancialOperationEntity } from '../ledger/entities/financial-operation.entity.js';
import { LedgerEntryEntity } from '../ledger/entities/ledger-entry.entity.js';
import { BetEntity } from '../coupons/entities/bet.entity.js';
import { CouponEntity } from '../coupons/entities/coupon.entity.js';
import { CouponSnapshotEntity } from '../coupons/entities/coupon-snapshot.entity.js';
import { CallbackBatchEntity } from '../settlement/entities/callback-batch.entity.js';
import { DeliveryAttemptEntity } from '../deliveries/entities/delivery-attempt.entity.js';
import { InboxEntryEntity } from '../inbox/entities/inbox-entry.entity.js';
import { PendingInboxCouponEntity } from '../inbox/entities/pending-inbox-coupon.entity.js';
import { QuarantinedBodyEntity } from '../quarantine/entities/quarantined-body.entity.js';
import { CouponResolutionEntity } from '../reconciliation/entities/coupon-resolution.entity.js';
import { WalletDeliveryAttemptEntity } from '../wallet/entities/wallet-delivery-attempt.entity.js';
import { WalletOutboxEntryEntity } from '../wallet/entities/wallet-outbox-entry.entity.js';
import { WalletOutboxStateEntity } from '../wallet/entities/wallet-outbox-state.entity.js';
import { EventDeliveryAttemptEntity } from '../events/entities/event-delivery-attempt.entity.js';
import { EventOutboxEntryEntity } from '../events/entities/event-outbox-entry.entity.js';
import { EventOutboxStateEntity } from '../events/entities/event-outbox-state.entity.js';
import { OperatorActionEntity } from '../operator-actions/entities/operator-action.entity.js';
import { DeliveryMinuteEntity } from '../console/entities/delivery-minute.entity.js';
import { BulkActionEntity } from '../bulk-actions/entities/bulk-action.entity.js';
import { BulkActionItemEntity } from '../bulk-actions/entities/bulk-action-item.entity.js';
import { RetentionHorizonEntity } from '../retention/entities/retention-horizon.entity.js';

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
