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
