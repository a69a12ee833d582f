import { Module } from '@nestjs/common';
import { CouponsModule } from '../coupons/coupons.module.js';
import { LedgerModule } from '../ledger/ledger.module.js';
import { BatchRepository } from './batch.repository.js';
import { CallbackController } from './callback.controller.js';
import { CallbackService } from './callback.service.js';
import { DeliveryAuditRepository } from './delivery-audit.repository.js';
import { DeliveryAuditService } from './delivery-audit.service.js';

/** SportAPI's settlement callback: signature, validation, the one-transaction pipeline, audit. */
@Module({
  imports: [CouponsModule, LedgerModule],
  controllers: [CallbackController],
  providers: [CallbackService, BatchRepository, DeliveryAuditRepository, DeliveryAuditService],
  exports: [DeliveryAuditService, CallbackService],
})
export class CallbacksModule {}
