import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  IsBoolean,
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Length,
  Matches,
  Max,
  Min,
  ValidateNested,
} from 'class-validator';
import { ApiNextCursor, DateTimeFilter, PageQueryDto } from '../../../platform/common/pagination.js';
import { ActionReason, IsStorableText } from '../../../platform/common/validation.js';
import { BULK_CAP, BULK_KINDS } from '../bulk-actions.types.js';
import type { BulkKind } from '../bulk-actions.types.js';

/**
 * Which rows a bulk action touches. Quarantine replays take the `quarantine*`, `batchIdPrefix`,
 * `received*` and `notReplayed` fields; outbox retries and skips (parked rows only) the `parked*`
 * and `accountId` fields. Times are ISO 8601, `…From` inclusive, `…To` exclusive.
 */
export class BulkFilterDto {
  @ApiPropertyOptional({ example: 'batch_conflict', description: 'quarantine: the refusal it was kept for' })
  @IsOptional()
  @Matches(/^[a-z_]{1,64}$/, { message: 'quarantineReason must be an error code (a-z and _)' })
  quarantineReason?: string;

  @ApiPropertyOptional({ example: 'b-2026-11-29-', description: 'quarantine: batch ids starting with this' })
  @IsOptional()
  @IsString()
  @Length(1, 128)
  @IsStorableText()
  batchIdPrefix?: string;

  @DateTimeFilter('2026-11-29T22:00:00Z', 'quarantine: received at or after') receivedFrom?: string;

  @DateTimeFilter('2026-11-30T02:00:00Z', 'quarantine: received before') receivedTo?: string;

  @ApiPropertyOptional({
    example: true,
    default: true,
    description: 'quarantine: only bodies never replayed',
  })
  @IsOptional()
  @IsBoolean()
  notReplayed?: boolean;

  @ApiPropertyOptional({
    enum: ['refused', 'conflict', 'retry_budget_exhausted'],
    description: 'outbox: why parked',
  })
  @IsOptional()
  @IsIn(['refused', 'conflict', 'retry_budget_exhausted'])
  parkedReason?: string;

  @ApiPropertyOptional({ example: 'player-42', description: 'outbox: one account' })
  @IsOptional()
  @Matches(/^[A-Za-z0-9._@-]{1,64}$/, { message: 'accountId must be 1..64 of A-Z a-z 0-9 . _ @ -' })
  accountId?: string;

  @DateTimeFilter('2026-11-29T22:00:00Z', 'outbox: parked at or after') parkedFrom?: string;

  @DateTimeFilter('2026-11-30T02:00:00Z', 'outbox: parked before') parkedTo?: string;
}

/** Body of `POST /bulk-actions/plan`. */
export class BulkPlanDto {
  @ApiProperty({ enum: BULK_KINDS, example: 'quarantine_replay' })
  @IsIn(BULK_KINDS)
  kind: BulkKind;

  @ApiProperty({ type: BulkFilterDto })
  @IsObject()
  @ValidateNested()
  @Type(() => BulkFilterDto)
  filter: BulkFilterDto;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: BULK_CAP.max,
    default: BULK_CAP.default,
    description: `rows the run would touch at most (1..${BULK_CAP.max}, default ${BULK_CAP.default})`,
  })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(BULK_CAP.max)
  cap?: number;
}

/** Body of `POST /bulk-actions`. */
export class BulkRunDto extends BulkPlanDto {
  @ActionReason(
    'bodies refused by the bad deploy of 2026-11-29, fixed in 4.2.1',
    'why (1..500 characters), recorded with the key name',
  )
  reason: string;
}

/** Body of `POST /bulk-actions/{id}/cancel` (optional). */
export class BulkCancelDto {
  @ActionReason('wrong filter', 'why (at most 500 characters)', true) reason?: string;
}

/** Query of `GET /bulk-actions`. */
export class BulkListQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ enum: ['running', 'done', 'cancelled'] })
  @IsOptional()
  @IsIn(['running', 'done', 'cancelled'])
  status?: string;
}

/** Query of `GET /bulk-actions/{id}`: the rows' page (arrival order) and an outcome filter. */
export class BulkItemsQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ enum: ['pending', 'done', 'skipped', 'failed'] })
  @IsOptional()
  @IsIn(['pending', 'done', 'skipped', 'failed'])
  outcome?: string;
}

/** What a plan found: how many rows match now and which come first; nothing touched. */
export class BulkPlanView {
  @ApiProperty({ enum: BULK_KINDS, example: 'quarantine_replay' }) kind: string;
  @ApiProperty({ type: BulkFilterDto }) filter: BulkFilterDto;
  @ApiProperty({ example: 37, description: 'rows the filter matches now' }) matched: number;
  @ApiProperty({ example: 1000 }) cap: number;
  @ApiProperty({ example: 37, description: 'rows a run with this cap would touch: min(matched, cap)' })
  wouldTouch: number;
  @ApiProperty({
    example: ['41', '42', '45'],
    description:
      'ids of the first rows a run with this cap would take, in arrival order (at most 10 and at most wouldTouch)',
  })
  sample: string[];
}

/** A bulk action and its progress. */
export class BulkActionView {
  @ApiProperty({ example: '7' }) id: string;
  @ApiProperty({ enum: BULK_KINDS, example: 'quarantine_replay' }) kind: string;
  @ApiProperty({ type: BulkFilterDto }) filter: BulkFilterDto;
  @ApiProperty({ example: 'bodies refused by the bad deploy of 2026-11-29, fixed in 4.2.1' }) reason: string;
  @ApiProperty({ example: 'ops-desk', description: 'name of the key that started it' }) actor: string;
  @ApiProperty({ example: 1000 }) cap: number;
  @ApiProperty({ example: 37, description: 'rows frozen when it started' }) total: number;
  @ApiProperty({ example: 'running', enum: ['running', 'done', 'cancelled'] }) status: string;
  @ApiProperty({ example: 30 }) done: number;
  @ApiProperty({ example: 2 }) skipped: number;
  @ApiProperty({ example: 1 }) failed: number;
  @ApiProperty({ example: 4 }) pending: number;
  @ApiProperty({ example: '2026-11-30T09:00:00.000Z' }) createdAt: string;
  @ApiProperty({ example: null, type: String, nullable: true }) finishedAt: string | null;
  @ApiProperty({ example: null, type: String, nullable: true }) cancelledBy: string | null;
}

/** One row of a bulk action and how it ended. */
export class BulkItemView {
  @ApiProperty({ example: 3, description: 'arrival order within the bulk action (1, 2, …)' }) seq: number;
  @ApiProperty({ example: '45', description: 'the quarantine entry or outbox row' }) targetId: string;
  @ApiProperty({ example: 'failed', enum: ['pending', 'done', 'skipped', 'failed'] }) outcome: string;
  @ApiProperty({
    example: 'replay_rejected',
    type: String,
    nullable: true,
    description:
      'done: what the action answered (`processed`, `duplicate`, `ok`); failed: the error code; skipped: `blocked`',
  })
  code: string | null;
  @ApiProperty({
    example: 'the quarantined body is still refused: the batch does not match the contract',
    type: String,
    nullable: true,
    description: 'why it failed or was skipped',
  })
  message: string | null;
  @ApiProperty({
    example: ['000000000272'],
    type: [String],
    nullable: true,
    description: 'what order is kept per: the coupons of a body, the account of an outbox row',
  })
  groupKeys: string[] | null;
  @ApiProperty({ example: 0, description: 'transient failures so far (the row is tried again)' })
  attempts: number;
  @ApiProperty({ example: '2026-11-30T09:00:01.200Z', type: String, nullable: true }) finishedAt:
    string | null;
}

/** A bulk action with one page of its rows. */
export class BulkActionDetailView extends BulkActionView {
  @ApiProperty({ type: [BulkItemView], description: 'rows in arrival order' }) items: BulkItemView[];
  @ApiNextCursor('100') nextCursor: string | null;
}

/** One page of bulk actions, newest first. */
export class BulkActionPageView {
  @ApiProperty({ type: [BulkActionView] }) items: BulkActionView[];
  @ApiNextCursor('6') nextCursor: string | null;
}
