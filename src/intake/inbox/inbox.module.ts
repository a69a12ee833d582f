import { Module } from '@nestjs/common';
import { LedgerModule } from '../../core/ledger/ledger.module.js';
import { SettlementModule } from '../../core/settlement/settlement.module.js';
import { InboxController } from './inbox.controller.js';
import { InboxRepository } from './inbox.repository.js';
import { InboxService } from './inbox.service.js';
import { InboxWorker } from './inbox.worker.js';

/**
 * Inbox mode (`CALLBACK_MODE=inbox`, docs/inbox-mode.md): the callback commits a batch to
 * `callback_inbox` and answers; the workers apply it through the settlement service. Also the
 * operators' `GET /callbacks/inbox`.
 */
@Module({
  imports: [SettlementModule, LedgerModule],
  controllers: [InboxController],
  providers: [InboxRepository, InboxService, InboxWorker],
  exports: [InboxRepository, InboxService],
})
export class InboxModule {}
