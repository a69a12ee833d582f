import { ApiProperty } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { isLosslessNumber } from 'lossless-json';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsInt,
  IsString,
  Length,
  Max,
  Min,
  ValidateBy,
  ValidateNested,
} from 'class-validator';

const INT4 = { min: -2147483648, max: 2147483647 };

/** A bet (event, selection) of a coupon; other fields are accepted and stored as sent (CONTRACT §3). */
export class CallbackEventDto {
  @ApiProperty({
    example: '9b2f6a1e-3c1d-4c55-9d0e-0d6f3f1a2b01',
    description: 'unique within the coupon, 1..64 chars',
  })
  @IsString()
  @Length(1, 64)
  uuid: string;

  @ApiProperty({ example: 2, description: 'event status code' })
  @IsInt()
  @Min(INT4.min)
  @Max(INT4.max)
  status: number;
}

/** One coupon snapshot of a batch (CONTRACT §3). */
export class CallbackCouponDto {
  @ApiProperty({ example: '000000000272', description: '1..32 chars, kept exactly as sent' })
  @IsString()
  @Length(1, 32)
  coupon_code: string;

  @ApiProperty({
    example: 2,
    description: 'coupon status code: 1 pending, 2 win, 3 refund, 4 loss, 15 recalculation (CONTRACT §6)',
  })
  @IsInt()
  @Min(INT4.min)
  @Max(INT4.max)
  status: number;

  @ApiProperty({
    example: '185.50',
    oneOf: [{ type: 'string' }, { type: 'number' }],
    nullable: true,
    required: false,
    description:
      'amount to credit (stake included); decimal string or number, at most the minor-unit digits of the coupon currency ("1500" JPY, "12.345" KWD, "0.00012345" BTC); null while not settled',
  })
  @ValidateBy({
    name: 'isRealWin',
    validator: {
      validate: (v: unknown) =>
        v === null ||
        v === undefined ||
        typeof v === 'string' ||
        typeof v === 'number' ||
        isLosslessNumber(v),
      defaultMessage: () => 'realWin must be a decimal string, a number or null',
    },
  })
  realWin?: string | number | null;

  @ApiProperty({ type: [CallbackEventDto] })
  @IsArray()
  @ArrayMaxSize(1000)
  @ValidateNested({ each: true })
  @Type(() => CallbackEventDto)
  events: CallbackEventDto[];
}

/** A batch of 1..100 coupon snapshots (CONTRACT §3). Unknown fields anywhere are kept. */
export class CallbackBatchDto {
  @ApiProperty({
    example: 'b-2026-11-30-000123',
    description: '1..64 chars; the same for every delivery of one batch',
  })
  @IsString()
  @Length(1, 64)
  batchId: string;

  @ApiProperty({ example: 1, description: 'must equal coupons.length' })
  @IsInt()
  couponCount: number;

  @ApiProperty({ type: [CallbackCouponDto], minItems: 1, maxItems: 100 })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(100)
  @ValidateNested({ each: true })
  @Type(() => CallbackCouponDto)
  coupons: CallbackCouponDto[];
}

/** `200` answer of the callback (CONTRACT §5). */
export class CallbackAckDto {
  @ApiProperty({ example: true }) success: true;
  @ApiProperty({ example: 1, description: 'equals couponCount' }) processed: number;
  @ApiProperty({
    example: true,
    required: false,
    description: 'present when the batch had already been committed',
  })
  duplicate?: boolean;
}
