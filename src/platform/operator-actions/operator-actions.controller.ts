import { Controller, Get, Query } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { RequireScope } from '../auth/require-scope.decorator.js';
import { API_TAGS } from '../common/api-tags.js';
import { apiError, TRANSIENT_FAILURE } from '../common/error-response.dto.js';
import { Cursor, CURSOR_PART, pageSize, toPage } from '../common/pagination.js';
import { TransactionRunner } from '../database/transaction.js';
import {
  OperatorActionPageView,
  OperatorActionQueryDto,
  OperatorActionView,
} from './dto/operator-action.dto.js';
import { OperatorActionsRepository, StoredOperatorAction } from './operator-actions.repository.js';

function view(r: StoredOperatorAction): OperatorActionView {
  return { ...r, at: r.at.toISOString() };
}

/** `GET /operator-actions` (docs/api.md#operator-actions): the append-only log of operators' actions. */
@ApiTags(API_TAGS.operatorActions.name)
@Controller('operator-actions')
export class OperatorActionsController {
  constructor(
    private readonly transactions: TransactionRunner,
    private readonly actions: OperatorActionsRepository,
  ) {}

  @Get()
  @RequireScope('read')
  @ApiOperation({
    summary: 'Actions taken with keys of scope money or operate, newest first; keyset-paginated',
    description:
      'Adjustments, registrations (by keys that also hold money or operate), resolutions, reconciles, quarantine replays, ' +
      'wallet outbox retries and skips, pause and resume, bulk runs and cancels: who (the key), what, on what, why, the ' +
      'request id and the outcome (`ok` or the error code of a refusal). Filter by key, action, target and time ' +
      '(`from` inclusive, `to` exclusive). Append-only.',
  })
  @ApiResponse({
    status: 200,
    type: OperatorActionPageView,
    description: 'one page of actions, newest first',
    example: {
      items: [
        {
          id: '1207',
          at: '2026-11-30T12:00:00.512Z',
          actor: 'ops-desk',
          action: 'replay',
          targetKind: 'quarantine',
          targetId: '42',
          reason: null,
          requestId: 'c9a8531c-c1d5-4ddc-b67c-5358ad98ccde',
          clientAddress: '203.0.113.7',
          outcome: 'ok',
          details: { batchId: 'b-2026-11-30-000123', outcome: 'processed' },
        },
      ],
      nextCursor: null,
    },
  })
  @ApiResponse(apiError(400, 'invalid filter, limit or cursor', 'validation_failed'))
  @ApiResponse(TRANSIENT_FAILURE)
  async list(@Query() q: OperatorActionQueryDto): Promise<OperatorActionPageView> {
    const limit = pageSize(q);
    const before = q.cursor === undefined ? undefined : Cursor.decode(q.cursor, [CURSOR_PART.id])[0];
    const rows = await this.transactions.run((tx) =>
      this.actions.list(tx, {
        actor: q.actor,
        action: q.action,
        targetKind: q.targetKind,
        targetId: q.targetId,
        from: q.from ? new Date(q.from) : undefined,
        to: q.to ? new Date(q.to) : undefined,
        before,
        limit: limit + 1,
      }),
    );
    return toPage(rows, limit, (r) => [r.id], view);
  }
}
