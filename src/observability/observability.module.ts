import { DynamicModule, Global, Module } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import type { DestinationStream } from 'pino';
import { APP_CONFIG } from '../config/configuration.js';
import type { AppConfig } from '../config/configuration.js';
import { DeliveryObserver } from '../deliveries/delivery-observer.js';
import { loggerParams } from './logging.js';
import { MetricsAccessGuard } from '../health/metrics-access.guard.js';
import { MetricsController } from '../health/metrics.controller.js';
import { SettlementMetrics } from './settlement-metrics.js';

/**
 * Structured JSON logs (`nestjs-pino`, see {@link loggerParams}), Prometheus metrics at
 * `GET /metrics` ({@link SettlementMetrics}) and the per-delivery observer ({@link DeliveryObserver}).
 * `logDestination` replaces stdout (the tests capture log lines with it).
 */
@Global()
@Module({})
export class ObservabilityModule {
  static forRoot(options: { logDestination?: DestinationStream } = {}): DynamicModule {
    return {
      module: ObservabilityModule,
      imports: [
        LoggerModule.forRootAsync({
          inject: [APP_CONFIG],
          useFactory: (config: AppConfig) => loggerParams(config, options.logDestination),
        }),
      ],
      controllers: [MetricsController],
      providers: [SettlementMetrics, DeliveryObserver, MetricsAccessGuard],
      exports: [SettlementMetrics, DeliveryObserver],
    };
  }
}
