import { Controller, Get, UseFilters } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import type { HealthCheckResult, HealthIndicatorResult } from '@nestjs/terminus';
import { HealthResultFilter } from './health-result.filter.js';
import { READINESS_DB_TIMEOUT_MS, ReadinessIndicators } from './readiness.indicators.js';
import { API_TAGS } from '../common/api-tags.js';

const healthSchema = {
  type: 'object',
  required: ['status'],
  properties: {
    status: { type: 'string', enum: ['ok', 'error', 'shutting_down'] },
    info: { type: 'object', additionalProperties: { type: 'object' } },
    error: { type: 'object', additionalProperties: { type: 'object' } },
    details: { type: 'object', additionalProperties: { type: 'object' } },
  },
};

const READY = {
  status: 'ok',
  info: { shutdown: { status: 'up' }, database: { status: 'up' }, migrations: { status: 'up', applied: 1 } },
  error: {},
  details: {
    shutdown: { status: 'up' },
    database: { status: 'up' },
    migrations: { status: 'up', applied: 1 },
  },
};

/**
 * Probes (`@nestjs/terminus`), unauthenticated: `GET /health/live` answers 200 while the process
 * runs (even while shutting down, so an orchestrator does not kill a draining process);
 * `GET /health/ready` answers 200 only when PostgreSQL answers within 1.5 s, every migration is
 * applied and no shutdown has begun, else 503 with the failing indicator.
 */
@ApiTags(API_TAGS.healthAndMetrics.name)
@Controller('health')
@UseFilters(HealthResultFilter)
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    private readonly readiness: ReadinessIndicators,
  ) {}

  @Get('live')
  @HealthCheck({ noCache: true, swaggerDocumentation: false })
  @ApiOperation({ summary: 'Liveness: the process is up (no dependency is checked)' })
  @ApiResponse({
    status: 200,
    description: 'the process runs',
    schema: healthSchema,
    example: { status: 'ok', info: { process: { status: 'up', uptimeSeconds: 42 } }, error: {}, details: {} },
  })
  live(): { status: 'ok'; info: HealthIndicatorResult; error: object; details: HealthIndicatorResult } {
    const process = this.indicators
      .check('process')
      .up({ uptimeSeconds: Math.round(globalThis.process.uptime()) });
    return { status: 'ok', info: process, error: {}, details: process };
  }

  @Get('ready')
  @HealthCheck({ noCache: true, swaggerDocumentation: false })
  @ApiOperation({
    summary: 'Readiness: PostgreSQL reachable, migrations applied, not shutting down',
    description: `503 at once from the first SIGTERM/SIGINT on, and within ${READINESS_DB_TIMEOUT_MS} ms when PostgreSQL does not answer.`,
  })
  @ApiResponse({ status: 200, description: 'ready to take callbacks', schema: healthSchema, example: READY })
  @ApiResponse({
    status: 503,
    description: 'not ready: the failing indicators are under `error`',
    schema: healthSchema,
    example: {
      status: 'error',
      info: { shutdown: { status: 'up' } },
      error: {
        database: { status: 'down', message: `no answer within ${READINESS_DB_TIMEOUT_MS} ms` },
        migrations: { status: 'down', message: `no answer within ${READINESS_DB_TIMEOUT_MS} ms` },
      },
      details: {
        shutdown: { status: 'up' },
        database: { status: 'down', message: `no answer within ${READINESS_DB_TIMEOUT_MS} ms` },
        migrations: { status: 'down', message: `no answer within ${READINESS_DB_TIMEOUT_MS} ms` },
      },
    },
  })
  ready(): Promise<HealthCheckResult> {
    return this.health.check([
      () => this.readiness.notShuttingDown(),
      () => this.readiness.database(),
      () => this.readiness.migrations(),
    ]);
  }
}
