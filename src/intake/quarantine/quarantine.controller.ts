import { Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { pageSize } from '../../platform/common/pagination.js';
import { ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import { Actor, RequireScope } from '../../platform/auth/require-scope.decorator.js';
import { rowIdParam } from '../../platform/common/id-page-query.dto.js';
import { apiError, apiErrors, TRANSIENT_FAILURE } from '../../platform/common/error-response.dto.js';
import {
  QuarantineEntryDetailView,
  QuarantineListQueryDto,
  QuarantinePageView,
  QuarantineReplayView,
} from './dto/quarantine.dto.js';
import { QuarantineService } from './quarantine.service.js';
import type { QuarantinePage, ReplayResult } from './quarantine.service.js';
import { API_TAGS } from '../../platform/common/api-tags.js';

/**
 * The quarantine (CONTRACT §8) on the partner API (bearer key, §10): list the kept bodies and
 * replay one through the pipeline once the cause is fixed.
 */
@ApiTags(API_TAGS.quarantine.name)
@Controller('callbacks/quarantine')
export class QuarantineController {
  constructor(private readonly quarantine: QuarantineService) {}

  @Get()
  @RequireScope('read')
  @ApiOperation({
    summary: 'Quarantined callback bodies, newest first',
    description:
      'Signed bodies refused with 400/409, and inbox batches whose application failed INBOX_MAX_ATTEMPTS times. ' +
      'Keyset pagination: pass `nextCursor` as `cursor`. Bodies are cut to a 256-byte `bodyPreview`.',
  })
  @ApiResponse({
    status: 200,
    description: 'one page of quarantined deliveries, with the cursor of the next page',
    type: QuarantinePageView,
    example: {
      items: [
        {
          id: '42',
          batchId: 'b-2026-11-30-000123',
          reason: 'batch_conflict',
          details: { message: 'batch b-2026-11-30-000123 was delivered before with a different body' },
          httpStatus: 409,
          contentType: 'application/json',
          payloadHash: '9c1185a5c5e9fc54612808977ee8f548b2258d31e3d4d0a4e1b0a0f4c6e7a1b2',
          receivedAt: '2026-11-30T12:00:00.000Z',
          bodyBytes: 180,
          bodyPreview:
            '{"batchId":"b-2026-11-30-000123","couponCount":1,"coupons":[{"coupon_code":"000000000272","status":2,"realWin":"190.00","events":[]}]}',
          replayedAt: null,
          replayOutcome: null,
          replayCount: 0,
          inboxId: null,
          replayedBy: null,
        },
      ],
      nextCursor: null,
    },
  })
  @ApiResponse(apiError(400, 'limit or cursor out of range', 'validation_failed'))
  list(@Query() query: QuarantineListQueryDto): Promise<QuarantinePage> {
    return this.quarantine.list(pageSize(query), query.cursor);
  }

  @Get(':id')
  @RequireScope('read')
  @ApiOperation({ summary: 'One quarantined body with its bytes (UTF-8 text and base64)' })
  @ApiParam({ name: 'id', example: '42' })
  @ApiResponse({ status: 200, type: QuarantineEntryDetailView, description: 'the entry with its raw body' })
  @ApiResponse(apiError(404, 'no such entry', 'not_found', 'quarantine entry 42 not found'))
  get(@Param('id') id: string): Promise<QuarantineEntryDetailView> {
    return this.quarantine.get(rowIdParam(id, 'quarantine entry'));
  }

  @Post(':id/replay')
  @RequireScope('operate')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Replay a quarantined body through the pipeline',
    description:
      'Parses, validates and applies the stored bytes (the signature was verified on arrival) in one transaction. ' +
      'The batch id dedup makes replays safe: replaying twice applies the batch once (`processed`, then `duplicate`). ' +
      'Every replay is recorded on the entry (replayedAt, replayOutcome, replayCount) and as a delivery attempt; ' +
      'the entry stays listed. A body that is still invalid answers 422 `replay_rejected` (outcome `rejected`); ' +
      'a batch id accepted with another body answers 409 `batch_conflict` (outcome `conflict`).',
  })
  @ApiParam({ name: 'id', example: '42' })
  @ApiResponse({
    status: 200,
    description: 'what the replay did, and the entry after it',
    type: QuarantineReplayView,
    example: {
      outcome: 'processed',
      entry: {
        id: '42',
        batchId: 'b-2026-11-30-000124',
        reason: 'apply_failed',
        details: { attempts: 10, lastError: '[57014] canceling statement due to lock timeout' },
        httpStatus: 200,
        contentType: null,
        payloadHash: '9c1185a5c5e9fc54612808977ee8f548b2258d31e3d4d0a4e1b0a0f4c6e7a1b2',
        receivedAt: '2026-11-30T12:00:00.000Z',
        bodyBytes: 180,
        bodyPreview: '{"batchId":"b-2026-11-30-000124","couponCount":1,"coupons":[…',
        replayedAt: '2026-11-30T12:30:00.000Z',
        replayOutcome: 'processed',
        replayCount: 1,
        inboxId: '17',
        replayedBy: 'ops-desk',
      },
    },
  })
  @ApiResponse(apiError(404, 'no such entry', 'not_found', 'quarantine entry 42 not found'))
  @ApiResponse(
    apiErrors(
      409,
      'the batch id was accepted with another body, or pending inbox batches of its coupons apply first',
      {
        batch_conflict: 'batch b-2026-11-30-000123 was delivered before with a different body',
        coupon_inbox_pending:
          "the inbox holds 1 pending batch(es) of this batch's coupons; replay after they are applied",
      },
    ),
  )
  @ApiResponse(
    apiError(
      422,
      'the body is still refused by validation',
      'replay_rejected',
      'the quarantined body is still refused: the batch does not match the contract',
    ),
  )
  @ApiResponse(TRANSIENT_FAILURE)
  replay(@Param('id') id: string, @Actor() actor: Actor): Promise<ReplayResult> {
    return this.quarantine.replay(rowIdParam(id, 'quarantine entry'), actor);
  }
}
