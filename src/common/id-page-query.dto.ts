import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, Matches } from 'class-validator';
import { PageLimit } from './pagination.js';

/**
 * Query of a list paged by row id, newest first (the quarantine, the delivery log; the inbox and
 * the outboxes add their status filter to it): the page rule of every list ({@link PageLimit},
 * read with `pageSize`), the cursor a row id.
 */
export class IdPageQueryDto {
  @PageLimit() limit?: string | number;

  @ApiPropertyOptional({
    description: '`nextCursor` of the previous page: rows with a smaller id',
    example: '41',
    pattern: '^[1-9]\\d{0,17}$',
  })
  @IsOptional()
  @Matches(/^[1-9]\d{0,17}$/, { message: 'cursor must be a row id' })
  cursor?: string;
}
