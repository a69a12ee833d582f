import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ApiNextCursor } from '../../../platform/common/pagination.js';
import { IsIn, IsOptional } from 'class-validator';
import { IdPageQueryDto } from '../../../platform/common/id-page-query.dto.js';

/** Query of `GET /callbacks/inbox`: page size, keyset cursor (newest first), status filter. */
export class InboxListQueryDto extends IdPageQueryDto {
  @ApiPropertyOptional({ enum: ['pending', 'done', 'quarantined'], description: 'only rows in this state' })
  @IsOptional()
  @IsIn(['pending', 'done', 'quarantined'])
  status?: 'pending' | 'done' | 'quarantined';
}

/** An inbox row (inbox mode) without its payload. */
export class InboxEntryDto {
  @ApiProperty({ example: '17' }) id: string;
  @ApiProperty({ example: 'b-2026-11-30-000124' }) batchId: string;
  @ApiProperty({ example: '9c1185a5c5e9fc54612808977ee8f548b2258d31e3d4d0a4e1b0a0f4c6e7a1b2' })
  payloadHash: string;
  @ApiProperty({ example: 1 }) couponCount: number;
  @ApiProperty({ example: ['000000000272'] }) couponCodes: string[];
  @ApiProperty({ example: 'pending', enum: ['pending', 'done', 'quarantined'] }) status: string;
  @ApiProperty({ example: 2, description: 'failed applications so far' }) attempts: number;
  @ApiProperty({
    example: '2026-11-30T12:00:03.000Z',
    type: Date,
    nullable: true,
    description: 'when a pending row is due next',
  })
  nextAttemptAt: Date | null;
  @ApiProperty({ example: '[57014] canceling statement due to lock timeout', type: String, nullable: true })
  lastError: string | null;
  @ApiProperty({
    example: null,
    type: String,
    nullable: true,
    enum: ['processed', 'duplicate', 'conflict', 'failed', null],
    description: 'how a finished row ended',
  })
  outcome: string | null;
  @ApiProperty({ example: '2026-11-30T12:00:00.000Z' }) receivedAt: Date;
  @ApiProperty({ example: null, type: Date, nullable: true }) finishedAt: Date | null;
}

/** A page of the inbox, newest first. */
export class InboxPageDto {
  @ApiProperty({ type: [InboxEntryDto] }) items: InboxEntryDto[];
  @ApiNextCursor(null, 'pass as `cursor` for the next page') nextCursor: string | null;
}
