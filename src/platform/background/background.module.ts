import { Global, Module } from '@nestjs/common';
import { getDataSourceToken } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { BACKGROUND_PROBES, BackgroundGovernor, realProbes } from './background-governor.js';

/**
 * The background-work governor (docs/background-work.md), one per process, for every module whose
 * loops take background work (wallet outbox, inbox, scheduled reconciliation), with the probes it
 * reads (the pool of the one DataSource, the event loop; tests replace them).
 */
@Global()
@Module({
  providers: [
    {
      provide: BACKGROUND_PROBES,
      inject: [getDataSourceToken()],
      useFactory: (dataSource: DataSource) => realProbes(dataSource),
    },
    BackgroundGovernor,
  ],
  exports: [BackgroundGovernor],
})
export class BackgroundModule {}
