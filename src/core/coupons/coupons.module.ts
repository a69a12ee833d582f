import { Module } from '@nestjs/common';
import { LedgerModule } from '../ledger/ledger.module.js';
import { CouponMetrics } from './coupon-metrics.js';
import { CouponRepository } from './coupon.repository.js';
import { CouponsController } from './coupons.controller.js';
import { CouponsService } from './coupons.service.js';

/** Coupons, bets and snapshot history; registration and reads of the partner API. */
@Module({
  imports: [LedgerModule],
  controllers: [CouponsController],
  providers: [CouponRepository, CouponsService, CouponMetrics],
  exports: [CouponRepository, CouponsService],
})
export class CouponsModule {}
