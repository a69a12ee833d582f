import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsRFC3339, Length, registerDecorator, ValidationOptions } from 'class-validator';
import { DomainException, ErrorCode } from './domain.exception.js';

/** Rows per page of a list when none is asked for, and the most one page holds. */
export const PAGE_SIZE = { default: 50, max: 200 } as const;

/**
 * Property is an integer from `min` to `max`, as a query string (`"50"`, digits only) or a number.
 * Query values reach the DTOs as strings; a number is accepted too, so the rule holds whether or
 * not the validation pipe converts them.
 */
export function IsIntegerFrom(min: number, max: number, options?: ValidationOptions): PropertyDecorator {
  return (object: object, propertyName: string | symbol) =>
    registerDecorator({
      name: 'isIntegerFrom',
      target: object.constructor,
      propertyName: propertyName as string,
      options: { message: `$property must be an integer from ${min} to ${max}`, ...options },
      validator: {
        validate(value: unknown): boolean {
          const n =
            typeof value === 'number'
              ? value
              : typeof value === 'string' && /^\d{1,9}$/.test(value)
                ? +value
                : NaN;
          return Number.isInteger(n) && n >= min && n <= max;
        },
      },
    });
}

/**
 * The `limit` of a list's query: rows per page, 1..`PAGE_SIZE.max`, `PAGE_SIZE.default` when
 * absent (read with {@link pageSize}); anything else is a 400 `validation_failed`.
 */
export function PageLimit(): PropertyDecorator {
  return applyDecorators(
    ApiPropertyOptional({
      type: 'integer',
      minimum: 1,
      maximum: PAGE_SIZE.max,
      default: PAGE_SIZE.default,
      example: PAGE_SIZE.default,
      description: `rows per page, 1..${PAGE_SIZE.max} (default ${PAGE_SIZE.default})`,
    }),
    IsOptional(),
    IsIntegerFrom(1, PAGE_SIZE.max),
  );
}

/**
 * Property is `true` or `false` (a query string, or a boolean). Read it with {@link queryFlag}.
 */
export function IsQueryFlag(options?: ValidationOptions): PropertyDecorator {
  return (object: object, propertyName: string | symbol) =>
    registerDecorator({
      name: 'isQueryFlag',
      target: object.constructor,
      propertyName: propertyName as string,
      options: { message: '$property must be true or false', ...options },
      validator: { validate: (value: unknown) => [true, false, 'true', 'false'].includes(value as string) },
    });
}

/** A validated {@link IsQueryFlag} value as a boolean (undefined when absent). */
export function queryFlag(value: string | boolean | undefined): boolean | undefined {
  return value === undefined ? undefined : value === true || value === 'true';
}

/**
 * `limit` and `cursor` of every keyset-paginated list of the operator console (newest first):
 * `limit` 1..200 (default 50), `cursor` the `nextCursor` of the previous page. Lists add their
 * filters by extending it.
 */
export class PageQueryDto {
  @PageLimit() limit?: string | number;

  @ApiPropertyOptional({
    type: 'string',
    example: '1841',
    description: '`nextCursor` of the previous page (opaque); absent for the first page',
    minLength: 1,
    maxLength: 512,
    pattern: '^[A-Za-z0-9_-]+$',
  })
  @IsOptional()
  @Length(1, 512)
  cursor?: string;
}

/** The page size a {@link PageQueryDto} asks for. */
export function pageSize(query: { limit?: string | number }): number {
  return query.limit === undefined ? PAGE_SIZE.default : Number(query.limit);
}

/**
 * The one cursor codec of the keyset-paginated lists: a cursor names the last row of a page by its
 * sort key. A key that is one row id (digits) is the id itself, as the older lists
 * (`GET /callbacks/deliveries`, quarantine, inbox, outbox) have always answered; a key of several
 * parts (a time and a code) is the base64url of their JSON array. Either is opaque to clients.
 */
export const Cursor = {
  /** The cursor of a row whose sort key is `parts` (each a string). */
  encode(parts: readonly string[]): string {
    if (parts.length === 1 && /^[1-9]\d{0,18}$/.test(parts[0])) return parts[0];
    return Buffer.from(JSON.stringify(parts)).toString('base64url');
  },

  /**
   * The sort key of `cursor`, checked against `shape` (one pattern per part).
   * @throws DomainException VALIDATION_FAILED (400, at `cursor`) when it is not a cursor of this list.
   */
  decode(cursor: string, shape: readonly RegExp[]): string[] {
    let parts: unknown = undefined;
    if (shape.length === 1 && /^[1-9]\d{0,18}$/.test(cursor)) parts = [cursor];
    else if (/^[A-Za-z0-9_-]+$/.test(cursor)) {
      try {
        parts = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
      } catch {
        parts = undefined;
      }
    }
    if (
      !Array.isArray(parts) ||
      parts.length !== shape.length ||
      !parts.every((p, i) => typeof p === 'string' && shape[i].test(p))
    ) {
      throw new DomainException(ErrorCode.VALIDATION_FAILED, 'the request does not match the schema', [
        { path: 'cursor', message: 'cursor must be the nextCursor of a page of this list' },
      ]);
    }
    return parts as string[];
  },
};

/** Patterns of cursor parts: a row id, an ISO 8601 time as the lists write it, any text. */
export const CURSOR_PART = {
  id: /^[1-9]\d{0,18}$/,
  time: /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/,
  text: /^[\s\S]{1,200}$/,
} as const;

/** One page of a list, newest first; `nextCursor` is null on the last page. */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/**
 * The page of `rows` (fetched with `limit + 1` rows, so a further page shows as one more row):
 * the first `limit`, and the cursor of the last of them when more follow.
 */
export function toPage<R, T>(
  rows: R[],
  limit: number,
  keyOf: (row: R) => readonly string[],
  view: (row: R) => T,
): Page<T> {
  const kept = rows.slice(0, limit);
  return {
    items: kept.map(view),
    nextCursor: rows.length > limit && kept.length ? Cursor.encode(keyOf(kept[kept.length - 1])) : null,
  };
}

/** Swagger's `nextCursor` property of a page: nullable string, with `example` and `description`. */
export function ApiNextCursor(
  example: string | null = '1792',
  description = 'pass as `cursor` for the next (older) page; null on the last page',
) {
  return ApiProperty({ example, type: String, nullable: true, description });
}

/**
 * An optional filter of a list's query that takes an RFC 3339 date-time (`2026-11-30T00:00:00Z`),
 * documented with `example` and `description`; anything else is a 400 `validation_failed`.
 */
export function DateTimeFilter(example: string, description: string): PropertyDecorator {
  return applyDecorators(
    ApiPropertyOptional({ example, format: 'date-time', description }),
    IsOptional(),
    IsRFC3339(),
  );
}
