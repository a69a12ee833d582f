import { ApiProperty } from '@nestjs/swagger';
import { IsInt, IsOptional, IsString, ValidateIf } from 'class-validator';
import {
  IsDecimalAmount,
  IsStorableText,
  TextLength,
  textSchema,
} from '../../../platform/common/validation.js';
import { CouponView } from '../../../core/coupons/dto/coupon-view.dto.js';

/** `POST /coupons/{coupon_code}/resolution` body: an operator's result for a flagged coupon. */
export class ResolutionDto {
  @ApiProperty({
    example: '12.50',
    type: String,
    nullable: true,
    description:
      "amount to credit for the result (stake included), at most the minor-unit digits of the coupon's currency; null: a loss (0)",
  })
  @ValidateIf((_, v) => v !== null)
  @IsDecimalAmount({ allowZero: true })
  realWin: string | null;

  @ApiProperty({
    example: 2,
    required: false,
    description:
      'status code to record (must map to WIN, REFUND or LOSS); default: the WIN code when realWin > 0, else the LOSS code',
  })
  @IsOptional()
  @IsInt()
  status?: number;

  @ApiProperty({ ...textSchema(1, 1000), example: 'confirmed with SportAPI support, ticket 4711' })
  @IsString()
  @TextLength(1, 1000)
  @IsStorableText()
  reason: string;

  @ApiProperty({
    ...textSchema(1, 200),
    example: 'jane.doe@bookmaker.example',
    description: 'who resolved it (recorded for audit)',
  })
  @IsString()
  @TextLength(1, 200)
  @IsStorableText()
  resolvedBy: string;
}

/** A recorded resolution (append-only), returned again for the same `Idempotency-Key` and body. */
export class ResolutionView {
  @ApiProperty({ example: 'res-2026-11-30-0001' }) idempotencyKey: string;
  @ApiProperty({ example: '000000000272' }) coupon_code: string;
  @ApiProperty({ example: 2 }) status: number;
  @ApiProperty({ example: '12.50' }) realWin: string;
  @ApiProperty({ example: 'confirmed with SportAPI support, ticket 4711' }) reason: string;
  @ApiProperty({ example: 'jane.doe@bookmaker.example' }) resolvedBy: string;
  @ApiProperty({
    example: 'ops-desk',
    type: String,
    nullable: true,
    description:
      'name of the partner API key that made it, next to the free-text resolvedBy (null for resolutions from before keys had names)',
  })
  actor: string | null;
  @ApiProperty({
    example: 'resolution:000000000272:5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8',
    description: 'the synthetic batch that applied it',
  })
  batchId: string;
  @ApiProperty({ example: 'resettled', description: 'settlement transition (CONTRACT §6, §9)' })
  transition: string;
  @ApiProperty({ example: 1, description: 'settlement generation after the resolution' }) generation: number;
  @ApiProperty({
    example: ['000000000272:1:recalculation_debit=185.50', '000000000272:1:final_credit=12.50'],
    description: 'operation keys and amounts it decided (`<key>=<amount>`)',
  })
  operations: string[];
  @ApiProperty({ example: '2026-11-30T12:00:00.000Z' }) resolvedAt: string;
}

/** Answer of a resolution: the record and the coupon as it is now. */
export class ResolutionResultView {
  @ApiProperty({ type: ResolutionView }) resolution: ResolutionView;
  @ApiProperty({ type: CouponView }) coupon: CouponView;
}
