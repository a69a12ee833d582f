import { Controller, Get, Query } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { RequireScope } from '../../platform/auth/require-scope.decorator.js';
import { API_TAGS } from '../../platform/common/api-tags.js';
import { apiError } from '../../platform/common/error-response.dto.js';
import { ConsoleService } from './console.service.js';
import { OverviewView, SearchQueryDto, SearchResultView } from './dto/console.dto.js';

/** The operator console's search and first screen (docs/api.md#operator-console-api). */
@ApiTags(API_TAGS.operatorConsole.name)
@Controller()
export class ConsoleController {
  constructor(private readonly console: ConsoleService) {}

  @Get('search')
  @RequireScope('read')
  @ApiOperation({
    summary:
      'Find any record by its id: batch, coupon, bet, account, operation key, outbox, quarantine, inbox, request id',
    description:
      'Exact match on batch id, coupon code, bet uuid, operation key and request id (delivery attempts, operator actions, ' +
      'wallet delivery attempts); account ids also by prefix; an operation key also finds its wallet and event outbox ' +
      'rows; a number is also looked up as a wallet outbox, event outbox, quarantine and inbox id. Every lookup is an ' +
      'index probe. Each hit has its kind, id, a one-line label and the API path of the record (`link`).',
  })
  @ApiResponse({
    status: 200,
    type: SearchResultView,
    description: 'the matching records (none: an empty list)',
    example: {
      q: 'b-2026-11-30-000123',
      items: [
        {
          kind: 'batch',
          id: 'b-2026-11-30-000123',
          label:
            'batch b-2026-11-30-000123: committed 2026-11-30T12:00:00.500Z, 1 coupon(s), 2 delivery attempt(s)',
          link: '/callbacks/batches/b-2026-11-30-000123',
        },
      ],
    },
  })
  @ApiResponse(apiError(400, 'q missing or longer than 200 characters', 'validation_failed'))
  @ApiResponse(apiError(503, 'temporarily unavailable, retry later', 'transient_failure'))
  search(@Query() query: SearchQueryDto): Promise<SearchResultView> {
    return this.console.find(query.q);
  }

  @Get('overview')
  @RequireScope('read')
  @ApiOperation({
    summary:
      'The first screen: deliveries per minute and outcome, flagged coupons, quarantine, inbox, outbox and event backlogs',
    description:
      'Deliveries by outcome per minute over the last hour and the last day (closed minutes from the rollup job, the ' +
      'last few counted live), coupons flagged needs_review (by reason) and unallocated, quarantined bodies not yet ' +
      'replayed, the inbox backlog and its oldest age, the wallet outbox rows not delivered and the oldest age, and ' +
      'the same per publisher of settlement events (`events`).',
  })
  @ApiResponse({ status: 200, type: OverviewView, description: 'the figures, as of `generatedAt`' })
  @ApiResponse(apiError(503, 'temporarily unavailable, retry later', 'transient_failure'))
  overview(): Promise<OverviewView> {
    return this.console.overview();
  }
}
