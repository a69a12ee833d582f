import { DynamicModule, Global, Module } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import type { DestinationStream } from 'pino';
import { loggerParams, LoggingOptions } from './logging.js';
import { MetricsRegistry } from './metrics-registry.js';

/**
 * Structured JSON logs (`nestjs-pino`, see {@link loggerParams}) and the Prometheus registry every
 * feature registers its metrics with ({@link MetricsRegistry}; served by `GET /metrics`, in the
 * health module). `logDestination` replaces stdout (the tests capture log lines with it). Imports
 * no feature module: what the logs need of the features comes in `logging`.
 */
@Global()
@Module({})
export class ObservabilityModule {
  static forRoot(
    logging: LoggingOptions,
    options: { logDestination?: DestinationStream } = {},
  ): DynamicModule {
    return {
      module: ObservabilityModule,
      imports: [LoggerModule.forRoot(loggerParams(logging, options.logDestination))],
      providers: [MetricsRegistry],
      exports: [MetricsRegistry],
    };
  }
}
