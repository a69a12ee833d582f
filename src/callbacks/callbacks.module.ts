import { Module } from '@nestjs/common';
import { CouponsModule } from '../coupons/coupons.module.js';
import { LedgerModule } from '../ledger/ledger.module.js';
import { BatchRepository } from '../settlement/batch.repository.js';
import { CallbackController } from './callback.controller.js';
import { CallbackService } from './callback.service.js';
import { DeliveryAttemptWriter } from '../deliveries/delivery-attempt.writer.js';
import { DeliveryAuditRepository } from '../deliveries/delivery-attempt.repository.js';
import { DeliveryAuditService } from './delivery-audit.service.js';
import { InboxRepository } from '../inbox/inbox.repository.js';
import { InboxService } from '../inbox/inbox.service.js';
import { InboxWorker } from '../inbox/inbox.worker.js';
import { QuarantineRepository } from '../quarantine/quarantine.repository.js';
import { QuarantineService } from '../quarantine/quarantine.service.js';

/**
 * SportAPI's settlement callback: signature, validation, the one-transaction pipeline, audit;
 * the inbox (CALLBACK_MODE=inbox) and its workers; the quarantine service.
 */
@Module({
  imports: [CouponsModule, LedgerModule],
  controllers: [CallbackController],
  providers: [
    CallbackService,
    BatchRepository,
    DeliveryAttemptWriter,
    DeliveryAuditRepository,
    DeliveryAuditService,
    InboxRepository,
    InboxService,
    InboxWorker,
    QuarantineRepository,
    QuarantineService,
  ],
  exports: [DeliveryAuditService, CallbackService, InboxRepository, InboxService, QuarantineService],
})
export class CallbacksModule {}
