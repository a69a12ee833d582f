import { ApiProperty } from '@nestjs/swagger';

/** A financial operation of a coupon: positive amount, the type gives the direction. */
export class CouponOperationView {
  @ApiProperty({ example: '000000000272:0:final_credit' }) key: string;
  @ApiProperty({ example: 'final_credit', enum: ['stake_debit', 'final_credit', 'recalculation_debit'] })
  type: string;
  @ApiProperty({ example: 0, type: Number, nullable: true }) generation: number | null;
  @ApiProperty({ example: '185.50' }) amount: string;
}

/** `GET /coupons/{coupon_code}` (CONTRACT §10). */
export class CouponView {
  @ApiProperty({ example: '000000000272' }) coupon_code: string;
  @ApiProperty({ example: 'player-42', type: String, nullable: true, description: 'null while unallocated' })
  accountId: string | null;
  @ApiProperty({ example: '10.00', type: String, nullable: true }) stake: string | null;
  @ApiProperty({ example: 'EUR', type: String, nullable: true }) currency: string | null;
  @ApiProperty({ example: 2, type: Number, nullable: true, description: 'null until a callback arrives' })
  status: number | null;
  @ApiProperty({ example: '185.50', type: String, nullable: true }) realWin: string | null;
  @ApiProperty({ example: 0 }) settlementGeneration: number;
  @ApiProperty({ example: true, description: 'whether the current generation is settled' }) settled: boolean;
  @ApiProperty({ example: false }) recalculationOpen: boolean;
  @ApiProperty({ example: false }) needsReview: boolean;
  @ApiProperty({ example: null, type: String, nullable: true }) reviewReason: string | null;
  @ApiProperty({ example: false, description: 'a callback arrived before registration' })
  unallocated: boolean;
  @ApiProperty({
    example: 'placement-service',
    type: String,
    nullable: true,
    description:
      'name of the partner API key that registered it (null while unallocated, and for registrations from before keys had names)',
  })
  registeredBy: string | null;
  @ApiProperty({
    example: [{ uuid: '9b2f6a1e-3c1d-4c55-9d0e-0d6f3f1a2b01', status: 2 }],
    description: 'bets as last applied, with every field the callback sent',
    type: 'array',
    items: { type: 'object', additionalProperties: true },
  })
  events: Record<string, unknown>[];
  @ApiProperty({ type: [CouponOperationView] }) operations: CouponOperationView[];
}
