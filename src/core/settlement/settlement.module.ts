import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { CouponsModule } from '../coupons/coupons.module.js';
import { LedgerModule } from '../ledger/ledger.module.js';
import { BatchRepository } from './batch.repository.js';
import { SettlementHooks } from './settlement-hooks.js';
import { SettlementService } from './settlement.service.js';

/**
 * Applying a batch (CONTRACT §4–§7): {@link SettlementService}, used by the callback, the inbox
 * workers, quarantine replays, reconciliation and resolutions; `callback_batches`
 * ({@link BatchRepository}); the settlement hooks of any module ({@link SettlementHooks}).
 */
@Module({
  imports: [DiscoveryModule, CouponsModule, LedgerModule],
  providers: [BatchRepository, SettlementHooks, SettlementService],
  exports: [BatchRepository, SettlementService],
})
export class SettlementModule {}
