import { Module } from '@nestjs/common';
import { InboxModule } from '../inbox/inbox.module.js';
import { SettlementModule } from '../../core/settlement/settlement.module.js';
import { QuarantineController } from './quarantine.controller.js';
import { QuarantineRepository } from './quarantine.repository.js';
import { QuarantineService } from './quarantine.service.js';

/**
 * The quarantine (CONTRACT §8): refused signed bodies and failed inbox batches, the operators'
 * list, view and replay (`/callbacks/quarantine`), a replay applied through the settlement service.
 */
@Module({
  imports: [SettlementModule, InboxModule],
  controllers: [QuarantineController],
  providers: [QuarantineRepository, QuarantineService],
  exports: [QuarantineRepository, QuarantineService],
})
export class QuarantineModule {}
