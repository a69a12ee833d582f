import { Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { InboxModule } from '../inbox/inbox.module.js';
import { SettlementModule } from '../../core/settlement/settlement.module.js';
import { CouponsModule } from '../../core/coupons/coupons.module.js';
import { ReconciliationController } from './reconciliation.controller.js';
import { ReconciliationRepository } from './reconciliation.repository.js';
import { ReconciliationService } from './reconciliation.service.js';
import { ResolutionService } from './resolution.service.js';
import { ScheduledReconciliation } from './scheduled-reconciliation.js';
import { SportApiClient } from './sportapi.client.js';

/**
 * Polling fallback and reconciliation (CONTRACT §9): the SportAPI coupon read client, manual
 * reconcile, the scheduled reconciliation and operators' resolutions of flagged coupons.
 */
@Module({
  imports: [ScheduleModule.forRoot(), SettlementModule, InboxModule, CouponsModule],
  controllers: [ReconciliationController],
  providers: [
    SportApiClient,
    ReconciliationRepository,
    ReconciliationService,
    ScheduledReconciliation,
    ResolutionService,
  ],
  exports: [ReconciliationService, ScheduledReconciliation, ResolutionService],
})
export class ReconciliationModule {}
