import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { ArchiveConnectors } from './archive-connectors.js';
import { RetentionJob } from './retention.job.js';

/**
 * The retention policy's maintenance job and its archive connectors (docs/retention.md); the
 * policy itself is `retention-engine.ts` (with `retention-plan.ts`, `retention-partitions.ts` and
 * `retention-report.ts`), shared with `npm run retention`.
 */
@Module({
  imports: [DiscoveryModule],
  providers: [ArchiveConnectors, RetentionJob],
})
export class RetentionModule {}
