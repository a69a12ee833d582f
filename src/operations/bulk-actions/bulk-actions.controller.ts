import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import { Actor, RequireScope } from '../../platform/auth/require-scope.decorator.js';
import { rowIdParam } from '../../platform/common/id-page-query.dto.js';
import { API_TAGS } from '../../platform/common/api-tags.js';
import { apiError, INVALID_REASON } from '../../platform/common/error-response.dto.js';
import { BulkActionsService } from './bulk-actions.service.js';
import { BULK_CAP } from './bulk-actions.types.js';
import {
  BulkActionDetailView,
  BulkActionPageView,
  BulkActionView,
  BulkCancelDto,
  BulkItemsQueryDto,
  BulkListQueryDto,
  BulkPlanDto,
  BulkPlanView,
  BulkRunDto,
} from './dto/bulk-action.dto.js';

const RUNNING_EXAMPLE = {
  id: '7',
  kind: 'quarantine_replay',
  filter: { notReplayed: true, quarantineReason: 'validation_failed', batchIdPrefix: 'b-2026-11-29-' },
  reason: 'bodies refused by the bad deploy of 2026-11-29, fixed in 4.2.1',
  actor: 'ops-desk',
  cap: 1000,
  total: 37,
  status: 'running',
  done: 30,
  skipped: 2,
  failed: 1,
  pending: 4,
  createdAt: '2026-11-30T09:00:00.000Z',
  finishedAt: null,
  cancelledBy: null,
};

/**
 * Bulk actions (docs/api.md#bulk-actions): plan with a count, run capped in the background in
 * arrival order keeping per-coupon and per-account order, watch, cancel.
 */
@ApiTags(API_TAGS.bulkActions.name)
@Controller('bulk-actions')
export class BulkActionsController {
  constructor(private readonly bulk: BulkActionsService) {}

  @Post('plan')
  @RequireScope('operate')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Count the rows a bulk action would touch, touching nothing',
    description:
      'kind `quarantine_replay` (quarantined bodies: by refusal, batch id prefix, received time, not yet replayed by ' +
      'default), `outbox_retry` or `outbox_skip` (parked wallet outbox rows: by parked reason, account, parked time). ' +
      'Answers the rows matched now, how many a run with `cap` would touch and the first ids in arrival order.',
  })
  @ApiResponse({
    status: 200,
    type: BulkPlanView,
    description: 'what a run would touch',
    example: {
      kind: 'quarantine_replay',
      filter: { notReplayed: true, quarantineReason: 'validation_failed', batchIdPrefix: 'b-2026-11-29-' },
      matched: 37,
      cap: 1000,
      wouldTouch: 37,
      sample: ['41', '42', '45'],
    },
  })
  @ApiResponse(apiError(400, 'unknown kind, or a filter field of another kind', 'validation_failed'))
  plan(@Body() dto: BulkPlanDto): Promise<BulkPlanView> {
    return this.bulk.plan(dto.kind, dto.filter, dto.cap);
  }

  @Post()
  @RequireScope('operate')
  @HttpCode(202)
  @ApiOperation({
    summary: 'Start a bulk action: freeze the matching rows (at most `cap`) and run them in the background',
    description:
      `The first \`cap\` rows (default ${BULK_CAP.default}, at most ${BULK_CAP.max}) the filter matches, in arrival order, are ` +
      'frozen and run one by one through the single action (replay, retry, skip: same rules, and an operator action ' +
      'per row with `bulkActionId`). When a row fails, the later rows of the same coupon (quarantine) or account (outbox) ' +
      'are skipped, saying which row failed first. Survives a restart without doing a row twice. Watch it with ' +
      'GET /bulk-actions/{id}; logged as `bulk_run`.',
  })
  @ApiResponse({ status: 202, type: BulkActionView, description: 'started', example: RUNNING_EXAMPLE })
  @ApiResponse(apiError(400, 'invalid kind, filter, cap or reason', 'validation_failed'))
  start(@Body() dto: BulkRunDto, @Actor() actor: Actor): Promise<BulkActionView> {
    return this.bulk.start(dto.kind, dto.filter, dto.reason, dto.cap, actor);
  }

  @Get()
  @RequireScope('read')
  @ApiOperation({ summary: 'Bulk actions, newest first, with their progress; keyset-paginated' })
  @ApiResponse({
    status: 200,
    type: BulkActionPageView,
    description: 'one page',
    example: { items: [RUNNING_EXAMPLE], nextCursor: null },
  })
  @ApiResponse(apiError(400, 'invalid status, limit or cursor', 'validation_failed'))
  list(@Query() query: BulkListQueryDto): Promise<BulkActionPageView> {
    return this.bulk.list(query);
  }

  @Get(':id')
  @RequireScope('read')
  @ApiOperation({
    summary: 'A bulk action: status, progress and one page of its rows with their outcomes (arrival order)',
  })
  @ApiResponse(apiError(400, 'limit, cursor or outcome out of range', 'validation_failed'))
  @ApiParam({ name: 'id', example: '7' })
  @ApiResponse({
    status: 200,
    type: BulkActionDetailView,
    description: 'the bulk action and its rows',
    example: {
      ...RUNNING_EXAMPLE,
      items: [
        {
          seq: 1,
          targetId: '41',
          outcome: 'done',
          code: 'processed',
          message: null,
          groupKeys: ['000000000272'],
          attempts: 0,
          finishedAt: '2026-11-30T09:00:00.200Z',
        },
        {
          seq: 2,
          targetId: '42',
          outcome: 'failed',
          code: 'replay_rejected',
          message: 'the quarantined body is still refused: the batch does not match the contract',
          groupKeys: ['000000000273'],
          attempts: 0,
          finishedAt: '2026-11-30T09:00:00.300Z',
        },
        {
          seq: 3,
          targetId: '45',
          outcome: 'skipped',
          code: 'blocked',
          message:
            'row 2 of coupon 000000000273 failed or was skipped first: its later rows keep their order',
          groupKeys: ['000000000273'],
          attempts: 0,
          finishedAt: '2026-11-30T09:00:00.310Z',
        },
      ],
      nextCursor: '3',
    },
  })
  @ApiResponse(apiError(404, 'no such bulk action', 'not_found', 'bulk action 7 not found'))
  get(@Param('id') id: string, @Query() query: BulkItemsQueryDto): Promise<BulkActionDetailView> {
    return this.bulk.get(rowIdParam(id, 'bulk action'), query);
  }

  @Post(':id/cancel')
  @RequireScope('operate')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Cancel a running bulk action before its next row',
    description: 'A row in hand finishes first; rows not run stay `pending`. Logged as `bulk_cancel`.',
  })
  @ApiParam({ name: 'id', example: '7' })
  @ApiResponse({
    status: 200,
    type: BulkActionView,
    description: 'the bulk action, cancelled',
    example: {
      ...RUNNING_EXAMPLE,
      status: 'cancelled',
      finishedAt: '2026-11-30T09:00:02.000Z',
      cancelledBy: 'ops-desk',
    },
  })
  @ApiResponse(INVALID_REASON)
  @ApiResponse(apiError(404, 'no such bulk action', 'not_found', 'bulk action 7 not found'))
  @ApiResponse(
    apiError(
      409,
      'the bulk action has ended',
      'bulk_action_state',
      'bulk action 7 is done: nothing to cancel',
    ),
  )
  cancel(
    @Param('id') id: string,
    @Body() dto: BulkCancelDto,
    @Actor() actor: Actor,
  ): Promise<BulkActionView> {
    return this.bulk.cancel(rowIdParam(id, 'bulk action'), actor, dto?.reason ?? null);
  }
}
