import { Global, Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { HealthController } from './health.controller.js';
import { MetricsAccessGuard } from './metrics-access.guard.js';
import { MetricsController } from './metrics.controller.js';
import { ReadinessIndicators } from './readiness.indicators.js';
import { ShutdownState } from './shutdown-state.js';

/**
 * Liveness and readiness probes and the graceful-shutdown state ({@link ShutdownState}), which
 * `configureApp` installs as the first middleware and `main.ts` starts on SIGTERM/SIGINT.
 */
@Global()
@Module({
  imports: [TerminusModule.forRoot({ errorLogStyle: 'json' })],
  controllers: [HealthController, MetricsController],
  providers: [ShutdownState, ReadinessIndicators, MetricsAccessGuard],
  exports: [ShutdownState],
})
export class HealthModule {}
