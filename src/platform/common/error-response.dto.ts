import { ApiProperty } from '@nestjs/swagger';

/** A failing field of a request body. */
export class FieldErrorDto {
  @ApiProperty({ example: 'coupons[0].realWin' }) path: string;
  @ApiProperty({ example: 'realWin must be a decimal string or number with at most 2 fraction digits' })
  message: string;
}

/** The error detail of every non-2xx answer. */
export class ErrorDetailDto {
  @ApiProperty({ example: 'validation_failed' }) code: string;
  @ApiProperty({ example: 'the batch does not match the contract' }) message: string;
  @ApiProperty({ type: [FieldErrorDto], required: false }) fields?: FieldErrorDto[];
}

/** Body of every error answer: never a stack trace, SQL or secret (CONTRACT §5). */
export class ErrorResponseDto {
  @ApiProperty({ example: false }) success: false;
  @ApiProperty({ type: ErrorDetailDto }) error: ErrorDetailDto;
}

/**
 * `@ApiResponse` options of one error answer: the {@link ErrorResponseDto} schema with an example
 * of `code` (its message defaults to the description).
 */
export function apiError(status: number, description: string, code: string, message = description) {
  return {
    status,
    description,
    type: ErrorResponseDto,
    example: { success: false, error: { code, message } },
  };
}

/** `@ApiResponse` options of one status with several error codes: one named example per code. */
export function apiErrors(status: number, description: string, cases: Record<string, string>) {
  return {
    status,
    description,
    type: ErrorResponseDto,
    examples: Object.fromEntries(
      Object.entries(cases).map(([code, message]) => [
        code,
        { summary: code, value: { success: false, error: { code, message } } },
      ]),
    ),
  };
}

/** The 503 of a route whose database work failed for now (`TransientError`): the client retries later. */
export const TRANSIENT_FAILURE = apiError(503, 'temporarily unavailable, retry later', 'transient_failure');

/** The 400 of an action whose optional body is `{ reason }` (1..500 characters): pause, cancel. */
export const INVALID_REASON = apiError(
  400,
  'the body is not an object, or reason is not 1..500 characters',
  'validation_failed',
);
