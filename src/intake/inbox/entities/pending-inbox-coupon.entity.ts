import { Entity, PrimaryColumn } from 'typeorm';

/**
 * One coupon of a pending inbox row: a row per distinct coupon code of `callback_inbox.coupon_codes`
 * while that row's status is `pending`. Kept by triggers on `callback_inbox` (function
 * `callback_inbox_pending_coupons_sync()`, in the migrations only), in the transaction that writes
 * the inbox row; never written by the application. A worker may claim an inbox row only when none
 * of its coupons has a row here with a smaller `inbox_id` (docs/inbox-mode.md#order): one
 * primary-key probe per coupon, whatever the backlog. `coupon_code` is in the "C" collation
 * (byte order: the probes compare no locale rules).
 */
@Entity('callback_inbox_pending_coupons')
export class PendingInboxCouponEntity {
  @PrimaryColumn('text', {
    name: 'coupon_code',
    collation: 'C',
    primaryKeyConstraintName: 'callback_inbox_pending_coupons_pkey',
  })
  couponCode: string;
  @PrimaryColumn('bigint', {
    name: 'inbox_id',
    primaryKeyConstraintName: 'callback_inbox_pending_coupons_pkey',
  })
  inboxId: string;
}
