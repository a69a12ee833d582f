import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query } from '@nestjs/common';
import { pageSize } from '../../platform/common/pagination.js';
import { ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { Actor, RequireScope } from '../../platform/auth/require-scope.decorator.js';
import { apiError, INVALID_REASON } from '../../platform/common/error-response.dto.js';
import {
  ApiOutboxRow,
  OutboxEntryDetailView,
  OutboxListQueryDto,
  OutboxPageView,
  OUTBOX_ROW_NOT_PARKED,
  outboxRowNotSkippable,
  PauseWalletDto,
  SkipOutboxEntryDto,
  WalletStatusView,
} from '../outbox/dto/outbox.dto.js';
import { outboxRowId as rowId } from '../outbox/outbox.exception.js';
import { OutboxService, OutboxStatusView } from '../outbox/outbox.service.js';
import { WALLET_CONFIG } from './wallet.config.js';
import type { WalletConfig } from './wallet.config.js';
import { WalletOutbox } from './wallet-outbox.js';
import { API_TAGS } from '../../platform/common/api-tags.js';

const NOT_FOUND = apiError(404, 'no such outbox row', 'not_found', 'outbox row 42 not found');

/**
 * The wallet outbox for operators (partner API, bearer key; docs/wallet.md): what waits, what
 * was parked and why, and the actions that release, skip, pause and resume delivery.
 */
@ApiTags(API_TAGS.wallet.name)
@Controller('wallet')
export class WalletController {
  private readonly wallet: OutboxService;

  constructor(
    outbox: WalletOutbox,
    @Inject(WALLET_CONFIG) private readonly config: WalletConfig,
  ) {
    this.wallet = outbox.service;
  }

  /** The status as the wallet's operators see it: with the connector in force. */
  private withConnector(status: Promise<OutboxStatusView>): Promise<WalletStatusView> {
    return status.then((s) => ({ connector: this.config.connector ?? null, ...s }));
  }

  @Get('outbox')
  @RequireScope('read')
  @ApiOperation({
    summary: 'Outbox rows, newest first',
    description:
      'Financial operations pushed to the wallet: pending (with attempts, last answer and next attempt), delivered, ' +
      'parked (refused, conflict, retry budget exhausted) and skipped. Keyset pagination: pass `nextCursor` as `cursor`.',
  })
  @ApiResponse({ status: 200, type: OutboxPageView, description: 'one page of rows' })
  @ApiResponse(apiError(400, 'limit, cursor or status out of range', 'validation_failed'))
  list(@Query() query: OutboxListQueryDto): Promise<OutboxPageView> {
    return this.wallet.list(query.status, pageSize(query), query.cursor);
  }

  @Get('outbox/:id')
  @RequireScope('read')
  @ApiOperation({ summary: 'One outbox row with every delivery attempt and the exact request body' })
  @ApiOutboxRow('the row', NOT_FOUND)
  get(@Param('id') id: string): Promise<OutboxEntryDetailView> {
    return this.wallet.get(rowId(id));
  }

  @Post('outbox/:id/retry')
  @RequireScope('operate')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Release a parked row',
    description:
      'Pending again, due at once, with a new WALLET_RETRY_FOR budget; the same transaction id and body are sent. ' +
      'Recorded with the key name (`retriedBy`). Once delivered, a coupon the row flagged `wallet_refused` is no ' +
      'longer flagged.',
  })
  @ApiOutboxRow('the row after the release', NOT_FOUND)
  @ApiResponse(OUTBOX_ROW_NOT_PARKED)
  retry(@Param('id') id: string, @Actor() actor: Actor): Promise<OutboxEntryDetailView> {
    return this.wallet.retry(rowId(id), actor);
  }

  @Post('outbox/:id/skip')
  @RequireScope('operate')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Mark a row settled by hand in the wallet',
    description:
      'A parked or pending row is never delivered from now on; the account’s later rows go ahead. ' +
      'Recorded with the key name and the reason (`skippedBy`, `skipReason`); `parkedReason` stays. ' +
      'A coupon the row flagged `wallet_refused` is no longer flagged.',
  })
  @ApiOutboxRow('the row after the skip', NOT_FOUND)
  @ApiResponse(apiError(400, 'reason missing or too long', 'validation_failed'))
  @ApiResponse(outboxRowNotSkippable('delivered'))
  skip(
    @Param('id') id: string,
    @Body() body: SkipOutboxEntryDto,
    @Actor() actor: Actor,
  ): Promise<OutboxEntryDetailView> {
    return this.wallet.skip(rowId(id), actor, body.reason);
  }

  @Get('status')
  @RequireScope('read')
  @ApiOperation({ summary: 'The connector, whether delivery is paused, and the backlog' })
  @ApiResponse({ status: 200, type: WalletStatusView, description: 'the outbox state' })
  status(): Promise<WalletStatusView> {
    return this.withConnector(this.wallet.status());
  }

  @Post('pause')
  @RequireScope('operate')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Pause all delivery to the wallet (every replica)',
    description:
      'Rows keep being written with their settlements and wait. Also set by the receiver after a 401/403.',
  })
  @ApiResponse({ status: 200, type: WalletStatusView, description: 'the outbox state after it' })
  @ApiResponse(INVALID_REASON)
  pause(@Body() body: PauseWalletDto, @Actor() actor: Actor): Promise<WalletStatusView> {
    return this.withConnector(this.wallet.setPaused(true, actor, body.reason ?? null));
  }

  @Post('resume')
  @RequireScope('operate')
  @HttpCode(200)
  @ApiOperation({ summary: 'Resume delivery to the wallet' })
  @ApiResponse({ status: 200, type: WalletStatusView, description: 'the outbox state after it' })
  resume(@Actor() actor: Actor): Promise<WalletStatusView> {
    return this.withConnector(this.wallet.setPaused(false, actor, null));
  }
}
