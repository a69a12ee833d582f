import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, Matches } from 'class-validator';

/**
 * Query of a list paged by row id, newest first: page size and keyset cursor (the quarantine; the
 * inbox and the outboxes add their status filter to it).
 */
export class IdPageQueryDto {
  // An integer in the API description; read as the query's text, checked by the pattern.
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: 100,
    default: 20,
    example: 20,
    description: 'rows per page, 1..100 (default 20)',
  })
  @IsOptional()
  @Matches(/^(?:[1-9]\d?|100)$/, { message: 'limit must be an integer from 1 to 100' })
  limit?: string;

  @ApiPropertyOptional({
    description: '`nextCursor` of the previous page: rows with a smaller id',
    example: '41',
  })
  @IsOptional()
  @Matches(/^[1-9]\d{0,17}$/, { message: 'cursor must be a row id' })
  cursor?: string;
}
