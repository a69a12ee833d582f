import { Controller, Get, Res, UseGuards } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { ApiScope } from '../auth/require-scope.decorator.js';
import { MetricsAccessGuard } from './metrics-access.guard.js';
import { MetricsRegistry } from '../observability/metrics-registry.js';
import { API_TAGS } from '../common/api-tags.js';

const SAMPLE = `# HELP settlement_callback_deliveries_total Callback deliveries answered, by outcome (CONTRACT §8)
# TYPE settlement_callback_deliveries_total counter
settlement_callback_deliveries_total{outcome="processed"} 1520
settlement_callback_deliveries_total{outcome="duplicate"} 31
settlement_callback_deliveries_total{outcome="conflict"} 0
settlement_callback_deliveries_total{outcome="rejected"} 2
settlement_callback_deliveries_total{outcome="unauthorized"} 0
settlement_callback_deliveries_total{outcome="failed"} 4
# HELP settlement_coupons_needing_review Coupons flagged needs_review (CONTRACT §6), counted at scrape time
# TYPE settlement_coupons_needing_review gauge
settlement_coupons_needing_review 0
`;

/** Prometheus scrape endpoint (see {@link MetricsRegistry} for the series). */
@ApiTags(API_TAGS.healthAndMetrics.name)
@UseGuards(MetricsAccessGuard)
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: MetricsRegistry) {}

  @Get()
  @ApiOperation({
    summary: 'Prometheus metrics (text format 0.0.4)',
    description:
      'Readable from a network of METRICS_ALLOWED_NETWORKS, or with a bearer key of OPS_API_KEYS with scope read.',
  })
  @ApiScope('read')
  @ApiResponse({
    status: 200,
    description: 'the exposition text',
    content: { 'text/plain': { schema: { type: 'string' }, example: SAMPLE } },
  })
  async scrape(@Res() res: Response): Promise<void> {
    const { contentType, body } = await this.metrics.render();
    res.status(200).type(contentType).send(body);
  }
}
