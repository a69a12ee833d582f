import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, Matches } from 'class-validator';
import { ApiNextCursor, DateTimeFilter, PageQueryDto } from '../../common/pagination.js';
import { OPERATOR_ACTIONS, TARGET_KINDS } from '../operator-actions.types.js';

/** Query of `GET /operator-actions`: filters, then the page. */
export class OperatorActionQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ example: 'ops-desk', description: 'name of the key (exact)' })
  @IsOptional()
  @Matches(/^[A-Za-z0-9._-]{1,64}$/, { message: 'actor must be a key name (1..64 of A-Z a-z 0-9 . _ -)' })
  actor?: string;

  @ApiPropertyOptional({ enum: OPERATOR_ACTIONS })
  @IsOptional()
  @IsIn(OPERATOR_ACTIONS)
  action?: string;

  @ApiPropertyOptional({ enum: TARGET_KINDS, description: 'kind of the target' })
  @IsOptional()
  @IsIn(TARGET_KINDS)
  targetKind?: string;

  @ApiPropertyOptional({
    example: '000000000272',
    description: 'id of the target (exact; with or without targetKind)',
  })
  @IsOptional()
  @Matches(/^.{1,200}$/s, { message: 'targetId must be 1..200 characters' })
  targetId?: string;

  @DateTimeFilter('2026-11-30T00:00:00Z', 'at or after (RFC 3339 date-time)') from?: string;

  @DateTimeFilter('2026-12-01T00:00:00Z', 'before (RFC 3339 date-time)') to?: string;
}

/** One operator action: who did what to what, why, and how it ended. */
export class OperatorActionView {
  @ApiProperty({ example: '1207' }) id: string;
  @ApiProperty({ example: '2026-11-30T12:00:00.512Z' }) at: string;
  @ApiProperty({ example: 'ops-desk', description: 'name of the partner API key' }) actor: string;
  @ApiProperty({ example: 'replay', enum: OPERATOR_ACTIONS }) action: string;
  @ApiProperty({ example: 'quarantine', enum: [...TARGET_KINDS, null], nullable: true, type: String })
  targetKind: string | null;
  @ApiProperty({ example: '42', type: String, nullable: true }) targetId: string | null;
  @ApiProperty({ example: 'bad deploy 2026-11-29, fixed in 4.2.1', type: String, nullable: true })
  reason: string | null;
  @ApiProperty({
    example: 'c9a8531c-c1d5-4ddc-b67c-5358ad98ccde',
    type: String,
    nullable: true,
    description:
      'X-Request-Id of the request; `bulk-action:<id>` for a row of a bulk action; null when backfilled',
  })
  requestId: string | null;
  @ApiProperty({
    example: '203.0.113.7',
    type: String,
    nullable: true,
    description:
      'client address of the request: the TCP peer, or X-Forwarded-For when the peer is one of TRUSTED_PROXIES; ' +
      'null for a row of a bulk action (see its bulk_run) and for actions from before the address was recorded',
  })
  clientAddress: string | null;
  @ApiProperty({ example: 'ok', description: '`ok`, or the error code the action was refused with' })
  outcome: string;
  @ApiProperty({
    example: { batchId: 'b-2026-11-30-000123', outcome: 'processed' },
    description:
      'what the action did (amount and currency, batch id, counts…); `bulkActionId` for a bulk row, `backfilled: true` for history from before the log',
    type: 'object',
    additionalProperties: true,
  })
  details: Record<string, unknown>;
}

/** One page of operator actions, newest first. */
export class OperatorActionPageView {
  @ApiProperty({ type: [OperatorActionView] }) items: OperatorActionView[];
  @ApiNextCursor('1206') nextCursor: string | null;
}
