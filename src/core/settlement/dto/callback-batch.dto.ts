import { ApiProperty } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { isLosslessNumber } from 'lossless-json';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsInt,
  IsString,
  Max,
  Min,
  ValidateBy,
  ValidateNested,
} from 'class-validator';
import { CurrencyTable } from '../../../platform/common/currency.js';
import { IsIdentifier, STORABLE_TEXT_PATTERN } from '../../../platform/common/validation.js';

const INT4 = { min: -2147483648, max: 2147483647 };

/** Schema of a status code: an integer the database's `integer` holds. */
const STATUS_SCHEMA = { type: 'integer', format: 'int32', minimum: INT4.min, maximum: INT4.max } as const;

/** Schema of an identifier of 1..`max` characters (code points) PostgreSQL can store. */
const identifierSchema = (max: number) =>
  ({ type: 'string', minLength: 1, maxLength: max, pattern: STORABLE_TEXT_PATTERN }) as const;

/** Largest number of coupons in one batch (CONTRACT §3). */
export const MAX_BATCH_COUPONS = 100;

/**
 * The schema of `realWin` when no allowed currency has more than `maxMinorUnits` fraction digits
 * (CONTRACT §3; `parseAmount` with `CurrencyTable.maxMinorUnits`): null, a decimal string of 1..13
 * integer digits whose value needs at most that many fraction digits (`"185.50"`, `"1500.000"`),
 * or such a JSON number. The document of a receiver carries its own configuration's digits.
 */
export function realWinSchema(maxMinorUnits: number) {
  const fraction = maxMinorUnits > 0 ? `\\d{1,${maxMinorUnits}}0*` : '0+';
  return {
    oneOf: [
      { type: 'string', nullable: true, pattern: `^\\d{1,13}(?:\\.${fraction})?$` },
      {
        type: 'number',
        minimum: 0,
        maximum: 1e13,
        exclusiveMaximum: true,
        multipleOf: Number(`1e-${maxMinorUnits}`),
      },
    ],
    description:
      `amount to credit (stake included): a decimal string or a JSON number (no sign, no exponent) of at most 13 ` +
      `integer digits whose value needs at most ${maxMinorUnits} fraction digits, the most any accepted currency ` +
      `has (the coupon's own currency is checked at settlement, CONTRACT §3: "1500" JPY, "12.345" KWD); ` +
      'null or missing while not settled',
  };
}

/** A bet (event, selection) of a coupon; other fields are accepted and stored as sent (CONTRACT §3). */
export class CallbackEventDto {
  @ApiProperty({
    ...identifierSchema(64),
    example: '9b2f6a1e-3c1d-4c55-9d0e-0d6f3f1a2b01',
    description: 'unique within the coupon; 1..64 characters, no U+0000 or unpaired surrogate',
  })
  @IsString()
  @IsIdentifier(64)
  uuid: string;

  @ApiProperty({ ...STATUS_SCHEMA, example: 2, description: 'event status code' })
  @IsInt()
  @Min(INT4.min)
  @Max(INT4.max)
  status: number;
}

/** One coupon snapshot of a batch (CONTRACT §3). */
export class CallbackCouponDto {
  @ApiProperty({
    ...identifierSchema(32),
    example: '000000000272',
    description:
      'not twice in one batch; 1..32 characters, no U+0000 or unpaired surrogate, kept exactly as sent',
  })
  @IsString()
  @IsIdentifier(32)
  coupon_code: string;

  @ApiProperty({
    ...STATUS_SCHEMA,
    example: 2,
    description: 'coupon status code: 1 pending, 2 win, 3 refund, 4 loss, 15 recalculation (CONTRACT §6)',
  })
  @IsInt()
  @Min(INT4.min)
  @Max(INT4.max)
  status: number;

  @ApiProperty({ ...realWinSchema(CurrencyTable.of().maxMinorUnits), example: '185.50', required: false })
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

  @ApiProperty({ type: [CallbackEventDto], maxItems: 1000 })
  @IsArray()
  @ArrayMaxSize(1000)
  @ValidateNested({ each: true })
  @Type(() => CallbackEventDto)
  events: CallbackEventDto[];
}

/** A batch of 1..100 coupon snapshots (CONTRACT §3). Unknown fields anywhere are kept. */
export class CallbackBatchDto {
  @ApiProperty({
    ...identifierSchema(64),
    example: 'b-2026-11-30-000123',
    description:
      'the same for every delivery of one batch; 1..64 characters, no U+0000 or unpaired surrogate',
  })
  @IsString()
  @IsIdentifier(64)
  batchId: string;

  @ApiProperty({
    type: 'integer',
    minimum: 1,
    maximum: MAX_BATCH_COUPONS,
    example: 1,
    description: 'equals the number of entries in `coupons`',
  })
  @IsInt()
  couponCount: number;

  @ApiProperty({
    type: [CallbackCouponDto],
    minItems: 1,
    maxItems: MAX_BATCH_COUPONS,
    description: 'no `coupon_code` twice; no `uuid` twice within one coupon',
  })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(MAX_BATCH_COUPONS)
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
