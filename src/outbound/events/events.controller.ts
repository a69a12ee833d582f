import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { pageSize } from '../../platform/common/pagination.js';
import { ApiOperation, ApiParam, ApiProperty, ApiResponse, ApiTags } from '@nestjs/swagger';
import { Actor, RequireScope } from '../../platform/auth/require-scope.decorator.js';
import { API_TAGS } from '../../platform/common/api-tags.js';
import { ErrorCode } from '../../platform/common/domain.exception.js';
import { apiError, INVALID_REASON } from '../../platform/common/error-response.dto.js';
import {
  ApiOutboxRow,
  OutboxEntryDetailView,
  OutboxListQueryDto,
  OutboxPageView,
  OUTBOX_ROW_NOT_PARKED,
  outboxRowNotSkippable,
  OutboxStateView,
  PauseWalletDto,
  SkipOutboxEntryDto,
} from '../outbox/dto/outbox.dto.js';
import { OutboxException, outboxRowId as rowId } from '../outbox/outbox.exception.js';
import { OutboxService } from '../outbox/outbox.service.js';
import { EventOutboxes } from './event-outboxes.js';

/** Whether a publisher's delivery runs, and its backlog. */
export class PublisherStatusView extends OutboxStateView {
  @ApiProperty({ example: 'rabbitmq' }) publisher: string;
}

const NOT_FOUND = apiError(404, 'no such publisher or outbox row', 'not_found', 'outbox row 42 not found');
const PUBLISHER = { name: 'publisher', example: 'rabbitmq', description: 'a name of EVENT_PUBLISHERS' };

/**
 * The settlement events' outbox for operators (partner API, bearer key; docs/events.md): per
 * publisher, what waits, what was parked and why, and the actions that release, skip, pause and
 * resume its delivery: the wallet outbox's endpoints, per publisher.
 */
@ApiTags(API_TAGS.events.name)
@Controller('events')
export class EventsController {
  constructor(private readonly outboxes: EventOutboxes) {}

  /** The operators' service of `publisher`. @throws OutboxException NOT_FOUND. */
  private of(publisher: string): OutboxService {
    const outbox = this.outboxes.of(publisher);
    if (!outbox)
      throw new OutboxException(ErrorCode.NOT_FOUND, `no publisher ${publisher} in EVENT_PUBLISHERS`);
    return outbox.outbox.service;
  }

  @Get('status')
  @RequireScope('read')
  @ApiOperation({ summary: 'Every publisher: whether its delivery is paused, and its backlog' })
  @ApiResponse({ status: 200, type: [PublisherStatusView], description: 'one entry per publisher' })
  async status(): Promise<PublisherStatusView[]> {
    return Promise.all(
      this.outboxes.names.map(async (publisher) => ({ publisher, ...(await this.of(publisher).status()) })),
    );
  }

  @Get(':publisher/outbox')
  @RequireScope('read')
  @ApiOperation({
    summary: "A publisher's outbox rows, newest first",
    description:
      'Settlement events (one per financial operation, id = operation key): pending, delivered (confirmed by the ' +
      'broker), parked and skipped. Keyset pagination: pass `nextCursor` as `cursor`.',
  })
  @ApiParam(PUBLISHER)
  @ApiResponse({ status: 200, type: OutboxPageView, description: 'one page of rows' })
  @ApiResponse(apiError(400, 'limit, cursor or status out of range', 'validation_failed'))
  @ApiResponse(NOT_FOUND)
  list(@Param('publisher') publisher: string, @Query() query: OutboxListQueryDto): Promise<OutboxPageView> {
    return this.of(publisher).list(query.status, pageSize(query), query.cursor);
  }

  @Get(':publisher/outbox/:id')
  @RequireScope('read')
  @ApiOperation({ summary: 'One event row with every publish attempt and the exact message body' })
  @ApiParam(PUBLISHER)
  @ApiOutboxRow('the row', NOT_FOUND)
  get(@Param('publisher') publisher: string, @Param('id') id: string): Promise<OutboxEntryDetailView> {
    return this.of(publisher).get(rowId(id));
  }

  @Post(':publisher/outbox/:id/retry')
  @RequireScope('operate')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Release a parked event',
    description:
      'Pending again, due at once, with a new EVENT_RETRY_FOR budget; the same id and bytes are published.',
  })
  @ApiParam(PUBLISHER)
  @ApiOutboxRow('the row after the release', NOT_FOUND)
  @ApiResponse(OUTBOX_ROW_NOT_PARKED)
  retry(
    @Param('publisher') publisher: string,
    @Param('id') id: string,
    @Actor() actor: Actor,
  ): Promise<OutboxEntryDetailView> {
    return this.of(publisher).retry(rowId(id), actor);
  }

  @Post(':publisher/outbox/:id/skip')
  @RequireScope('operate')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Mark an event as never to be published',
    description: "A parked or pending row is not published from now on; the account's later events go ahead.",
  })
  @ApiParam(PUBLISHER)
  @ApiOutboxRow('the row after the skip', NOT_FOUND)
  @ApiResponse(apiError(400, 'reason missing or too long', 'validation_failed'))
  @ApiResponse(outboxRowNotSkippable('published'))
  skip(
    @Param('publisher') publisher: string,
    @Param('id') id: string,
    @Body() body: SkipOutboxEntryDto,
    @Actor() actor: Actor,
  ): Promise<OutboxEntryDetailView> {
    return this.of(publisher).skip(rowId(id), actor, body.reason);
  }

  @Post(':publisher/pause')
  @RequireScope('operate')
  @HttpCode(200)
  @ApiOperation({
    summary: "Pause a publisher's delivery (every replica)",
    description:
      'Events keep being written with their settlements and wait. Also set by the receiver after an unauthorized answer.',
  })
  @ApiParam(PUBLISHER)
  @ApiResponse({ status: 200, type: PublisherStatusView, description: 'the state after it' })
  @ApiResponse(INVALID_REASON)
  @ApiResponse(NOT_FOUND)
  async pause(
    @Param('publisher') publisher: string,
    @Body() body: PauseWalletDto,
    @Actor() actor: Actor,
  ): Promise<PublisherStatusView> {
    return { publisher, ...(await this.of(publisher).setPaused(true, actor, body.reason ?? null)) };
  }

  @Post(':publisher/resume')
  @RequireScope('operate')
  @HttpCode(200)
  @ApiOperation({ summary: "Resume a publisher's delivery" })
  @ApiParam(PUBLISHER)
  @ApiResponse({ status: 200, type: PublisherStatusView, description: 'the state after it' })
  @ApiResponse(NOT_FOUND)
  async resume(@Param('publisher') publisher: string, @Actor() actor: Actor): Promise<PublisherStatusView> {
    return { publisher, ...(await this.of(publisher).setPaused(false, actor, null)) };
  }
}
