import { Controller, Get, Query } from '@nestjs/common';
import { pageSize } from '../../platform/common/pagination.js';
import { ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { RequireScope } from '../../platform/auth/require-scope.decorator.js';
import { ErrorResponseDto } from '../../platform/common/error-response.dto.js';
import { InboxListQueryDto, InboxPageDto } from './dto/inbox.dto.js';
import { InboxService } from './inbox.service.js';
import type { InboxPage } from './inbox.service.js';
import { API_TAGS } from '../../platform/common/api-tags.js';

/** The inbox of `CALLBACK_MODE=inbox` for operators (partner API, bearer key): what waits, what failed. */
@ApiTags(API_TAGS.inbox.name)
@Controller('callbacks/inbox')
export class InboxController {
  constructor(private readonly inbox: InboxService) {}

  @Get()
  @RequireScope('read')
  @ApiOperation({
    summary: 'Batches accepted in inbox mode, newest first',
    description:
      'Pending rows (with attempts, last error and next attempt while they are retried), applied rows and rows moved ' +
      'to the quarantine. Keyset pagination: pass `nextCursor` as `cursor`. Payloads are not listed.',
  })
  @ApiResponse({
    status: 200,
    description: 'one page of inbox rows, with the cursor of the next page',
    type: InboxPageDto,
    example: {
      items: [
        {
          id: '17',
          batchId: 'b-2026-11-30-000124',
          payloadHash: '9c1185a5c5e9fc54612808977ee8f548b2258d31e3d4d0a4e1b0a0f4c6e7a1b2',
          couponCount: 1,
          couponCodes: ['000000000272'],
          status: 'pending',
          attempts: 2,
          nextAttemptAt: '2026-11-30T12:00:03.000Z',
          lastError: '[57014] canceling statement due to lock timeout',
          outcome: null,
          receivedAt: '2026-11-30T12:00:00.000Z',
          finishedAt: null,
        },
      ],
      nextCursor: null,
    },
  })
  @ApiResponse({
    status: 400,
    description: 'limit, cursor or status out of range',
    type: ErrorResponseDto,
    example: {
      success: false,
      error: { code: 'validation_failed', message: 'the request does not match the schema' },
    },
  })
  list(@Query() query: InboxListQueryDto): Promise<InboxPage> {
    return this.inbox.list(pageSize(query), query.cursor, query.status);
  }
}
