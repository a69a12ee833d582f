import { Module } from '@nestjs/common';
import { ConsoleController } from './console.controller.js';
import { ConsoleService } from './console.service.js';
import { DeliveryRollupJob } from './delivery-rollup.job.js';
import { OverviewRepository } from './overview.repository.js';
import { SearchRepository } from './search.repository.js';

/**
 * The operator console's search and overview (docs/api.md#operator-console-api), with the rollup
 * job that keeps the overview's delivery counts per minute.
 */
@Module({
  controllers: [ConsoleController],
  providers: [ConsoleService, SearchRepository, OverviewRepository, DeliveryRollupJob],
})
export class ConsoleModule {}
