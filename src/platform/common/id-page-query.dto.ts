import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, Matches } from 'class-validator';
import { DomainException, ErrorCode } from './domain.exception.js';
import { PageLimit } from './pagination.js';

/** A row id as a list's cursor and a path take it: a positive `bigint`'s digits, at most 18. */
export const ROW_ID = /^[1-9]\d{0,17}$/;

/**
 * A row id path parameter, checked before any SQL: `id` when it is a {@link ROW_ID}.
 * @throws DomainException NOT_FOUND (404) "<what> <id> not found" otherwise (never a database error).
 */
export function rowIdParam(id: string, what: string): string {
  if (!ROW_ID.test(id)) throw new DomainException(ErrorCode.NOT_FOUND, `${what} ${id} not found`);
  return id;
}

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
  @Matches(ROW_ID, { message: 'cursor must be a row id' })
  cursor?: string;
}
