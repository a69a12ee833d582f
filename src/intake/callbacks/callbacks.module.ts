import { Module } from '@nestjs/common';
import { InboxModule } from '../inbox/inbox.module.js';
import { QuarantineModule } from '../quarantine/quarantine.module.js';
import { SettlementModule } from '../../core/settlement/settlement.module.js';
import { CallbackController } from './callback.controller.js';
import { CallbackService } from './callback.service.js';
import { DeliveryAuditService } from './delivery-audit.service.js';

/**
 * SportAPI's settlement callback, the HTTP edge only (mounted at `CALLBACK_PATH`): body
 * middleware, signature guard, controller, parser, response interceptor and exception filter with
 * its failure audit; the batch is applied by the settlement service, or committed to the inbox.
 */
@Module({
  imports: [SettlementModule, InboxModule, QuarantineModule],
  controllers: [CallbackController],
  providers: [CallbackService, DeliveryAuditService],
  exports: [DeliveryAuditService],
})
export class CallbacksModule {}
