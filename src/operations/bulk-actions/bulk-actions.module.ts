import { Module } from '@nestjs/common';
import { QuarantineModule } from '../../intake/quarantine/quarantine.module.js';
import { BulkActionWorker } from './bulk-action.worker.js';
import { BulkActionsController } from './bulk-actions.controller.js';
import { BulkActionsRepository } from './bulk-actions.repository.js';
import { BulkActionsService } from './bulk-actions.service.js';

/**
 * Bulk replays of quarantined bodies and bulk retries and skips of parked wallet outbox rows
 * (docs/api.md#bulk-actions): the endpoints and the background worker.
 */
@Module({
  imports: [QuarantineModule],
  controllers: [BulkActionsController],
  providers: [BulkActionsRepository, BulkActionsService, BulkActionWorker],
})
export class BulkActionsModule {}
