import { applyDecorators } from '@nestjs/common';
import { ApiParam, ApiProperty, ApiPropertyOptional, ApiResponse } from '@nestjs/swagger';
import { ApiNextCursor } from '../../../platform/common/pagination.js';
import { IsIn, IsOptional } from 'class-validator';
import { ActionReason } from '../../../platform/common/validation.js';
import { IdPageQueryDto } from '../../../platform/common/id-page-query.dto.js';
import { apiError } from '../../../platform/common/error-response.dto.js';
import { OUTBOX_STATUSES } from '../outbox.types.js';
import type { OutboxStatus } from '../outbox.types.js';

/** Query of `GET /wallet/outbox`: page size, keyset cursor (newest first), status filter. */
export class OutboxListQueryDto extends IdPageQueryDto {
  @ApiPropertyOptional({ enum: OUTBOX_STATUSES, description: 'only rows in this state' })
  @IsOptional()
  @IsIn(OUTBOX_STATUSES)
  status?: OutboxStatus;
}

/** Body of `POST /wallet/outbox/{id}/skip`. */
export class SkipOutboxEntryDto {
  @ActionReason(
    'credited by hand in the wallet, ticket OPS-4711',
    'why the row needs no delivery (1..500 characters), recorded with the key name',
  )
  reason: string;
}

/** Body of `POST /wallet/pause` (optional). */
export class PauseWalletDto {
  @ActionReason('wallet maintenance 02:00-02:30', 'why (at most 500 characters)', true) reason?: string;
}

/** An outbox row: the operation it pushes and where its delivery stands. */
export class OutboxEntryView {
  @ApiProperty({ example: '42' }) id: string;
  @ApiProperty({
    example: '000000000272:0:final_credit',
    description: 'the operation key: the wallet transaction id',
  })
  operationKey: string;
  @ApiProperty({ example: 'final_credit' }) type: string;
  @ApiProperty({ example: 'player-17' }) accountId: string;
  @ApiProperty({ example: '190.00', description: "at the currency's minor units" }) amount: string;
  @ApiProperty({ example: 'EUR' }) currency: string;
  @ApiProperty({ example: '000000000272', type: String, nullable: true }) couponCode: string | null;
  @ApiProperty({ example: 'pending', enum: OUTBOX_STATUSES }) status: OutboxStatus;
  @ApiProperty({ example: 2, description: 'delivery attempts so far' }) attempts: number;
  @ApiProperty({ example: '2026-12-01T12:00:04.000Z', description: 'when a pending row is due next' })
  nextAttemptAt: Date;
  @ApiProperty({ example: null, type: Date, nullable: true, description: 'set while a worker delivers it' })
  leasedUntil: Date | null;
  @ApiProperty({ example: 503, type: Number, nullable: true, description: "the wallet's last HTTP status" })
  lastStatus: number | null;
  @ApiProperty({ example: 'HTTP 503: {"error":"unavailable"}', type: String, nullable: true })
  lastError: string | null;
  @ApiProperty({
    example: null,
    type: String,
    nullable: true,
    enum: ['refused', 'conflict', 'retry_budget_exhausted', null],
    description: 'why the row is parked; kept when it is skipped',
  })
  parkedReason: string | null;
  @ApiProperty({ example: '2026-12-01T12:00:00.000Z' }) createdAt: Date;
  @ApiProperty({ example: null, type: Date, nullable: true }) deliveredAt: Date | null;
  @ApiProperty({ example: null, type: Date, nullable: true }) parkedAt: Date | null;
  @ApiProperty({ example: null, type: Date, nullable: true }) skippedAt: Date | null;
  @ApiProperty({ example: null, type: String, nullable: true, description: 'key name of the skip' })
  skippedBy: string | null;
  @ApiProperty({ example: null, type: String, nullable: true }) skipReason: string | null;
  @ApiProperty({ example: null, type: Date, nullable: true, description: "last operator's retry" })
  retriedAt: Date | null;
  @ApiProperty({ example: null, type: String, nullable: true }) retriedBy: string | null;
  @ApiProperty({
    example: null,
    type: String,
    nullable: true,
    description:
      "a pending row behind its account's parked row: that row's id; it goes once that one is retried and delivered, or skipped",
  })
  heldBy: string | null;
}

/** One delivery attempt of an outbox row. */
export class WalletAttemptView {
  @ApiProperty({ example: 1 }) attempt: number;
  @ApiProperty({ example: '5b0f1f7e-8d7b-4c0e-9a51-0f2b8f1c2d3e' }) requestId: string;
  @ApiProperty({ example: 'http' }) connector: string;
  @ApiProperty({ example: '2026-12-01T12:00:00.100Z' }) startedAt: Date;
  @ApiProperty({ example: 48 }) durationMs: number;
  @ApiProperty({ example: 'retry', enum: ['delivered', 'retry', 'refused', 'conflict', 'unauthorized'] })
  outcome: string;
  @ApiProperty({ example: 503, type: Number, nullable: true }) httpStatus: number | null;
  @ApiProperty({ example: 'HTTP 503: {"error":"unavailable"}', type: String, nullable: true })
  answer: string | null;
  @ApiProperty({
    example: '4bf92f3577b34da6a3ce929d0e0e4736',
    type: String,
    nullable: true,
    description: "the attempt's OpenTelemetry trace id (32 hex) when tracing was on, else null",
  })
  traceId: string | null;
}

/** An outbox row with every attempt and the exact request body once one was recorded. */
export class OutboxEntryDetailView extends OutboxEntryView {
  @ApiProperty({ type: [WalletAttemptView] }) deliveryAttempts: WalletAttemptView[];
  @ApiProperty({
    example: '{"transactionId":"000000000272:0:final_credit","direction":"credit",…}',
    type: String,
    nullable: true,
    description: 'the body sent on every attempt (null before the first recorded one)',
  })
  body: string | null;
}

/** A page of the outbox, newest first. */
export class OutboxPageView {
  @ApiProperty({ type: [OutboxEntryView] }) items: OutboxEntryView[];
  @ApiNextCursor(null, 'pass as `cursor` for the next page') nextCursor: string | null;
}

/** Whether an outbox's delivery runs, and its backlog: the wallet's, or a publisher's. */
export class OutboxStateView {
  @ApiProperty({ example: false }) paused: boolean;
  @ApiProperty({ example: null, type: String, nullable: true }) reason: string | null;
  @ApiProperty({
    example: null,
    type: Date,
    nullable: true,
    description: 'when it was last paused or resumed; null: never',
  })
  changedAt: Date | null;
  @ApiProperty({ example: null, type: String, nullable: true, description: 'key name; null: the receiver' })
  changedBy: string | null;
  @ApiProperty({ example: 3 }) pending: number;
  @ApiProperty({ example: 0 }) parked: number;
  @ApiProperty({ example: 1.25, description: 'seconds' }) oldestPendingAgeSeconds: number;
}

/** Whether delivery to the wallet runs, and the backlog. */
export class WalletStatusView extends OutboxStateView {
  @ApiProperty({
    example: 'http',
    type: String,
    nullable: true,
    description: 'null: no connector configured',
  })
  connector: string | null;
}

/** The 409 of a retry (`POST …/outbox/{id}/retry`) of a row that is not parked. */
export const OUTBOX_ROW_NOT_PARKED = apiError(
  409,
  'the row is not parked',
  'outbox_entry_state',
  'outbox row 42 is delivered: only a parked row can be retried',
);

/**
 * The 409 of a skip (`POST …/outbox/{id}/skip`) of a row that is delivered or skipped, or that a
 * worker is `sending` ("delivered", "published") right now.
 */
export function outboxRowNotSkippable(sending: string) {
  return apiError(
    409,
    `the row is delivered or skipped, or being ${sending} right now`,
    'outbox_entry_state',
    'outbox row 42 is delivered: nothing to skip',
  );
}

/**
 * The OpenAPI of an endpoint on one outbox row (`…/outbox/{id}`, the wallet's and the publishers'):
 * its `id` parameter, 200 with the row (`answer`: "the row", "the row after the release") and the
 * controller's 404 (`notFound`).
 */
export function ApiOutboxRow(answer: string, notFound: ReturnType<typeof apiError>) {
  return applyDecorators(
    ApiParam({ name: 'id', example: '42' }),
    ApiResponse({ status: 200, type: OutboxEntryDetailView, description: answer }),
    ApiResponse(notFound),
  );
}
