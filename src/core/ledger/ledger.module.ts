import { Module } from '@nestjs/common';
import { AccountsController } from './accounts.controller.js';
import { LedgerMetrics } from './ledger-metrics.js';
import { LedgerRepository } from './ledger.repository.js';
import { LedgerService } from './ledger.service.js';
import { PostedOperationWriters } from './posted-operation-writers.js';

/** Accounts, financial operations and ledger entries (CONTRACT §7); account endpoints (§10). */
@Module({
  controllers: [AccountsController],
  providers: [LedgerRepository, LedgerService, LedgerMetrics, PostedOperationWriters],
  exports: [LedgerRepository, LedgerService, PostedOperationWriters],
})
export class LedgerModule {}
