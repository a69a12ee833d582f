import { ApiProperty } from '@nestjs/swagger';
import { IsString, Length, Matches } from 'class-validator';
import { IsDecimalAmount, IsStorableText } from '../../common/validation.js';

/** `POST /accounts/{id}/adjustments` body (CONTRACT §10). */
export class AdjustmentDto {
  @ApiProperty({
    example: '100.00',
    description: 'Deposit (positive) or withdrawal (negative), not zero, at most 2 fraction digits.',
  })
  @IsDecimalAmount({ allowNegative: true })
  amount: string;

  @ApiProperty({ example: 'EUR' })
  @Matches(/^[A-Z]{3}$/, { message: 'currency must be three upper-case letters' })
  currency: string;

  @ApiProperty({ example: 'cashier deposit' })
  @IsString()
  @Length(1, 500)
  @IsStorableText()
  reason: string;
}

/** An account (CONTRACT §10); `balance` is a decimal string. */
export class AccountViewDto {
  @ApiProperty({ example: 'player-42' }) id: string;
  @ApiProperty({ example: 'EUR' }) currency: string;
  @ApiProperty({ example: '115.50' }) balance: string;
}

/** The result of an adjustment, returned again for the same `Idempotency-Key` and body. */
export class AdjustmentViewDto {
  @ApiProperty({ example: 'player-42' }) accountId: string;
  @ApiProperty({ example: 'dep-2026-11-30-0001' }) idempotencyKey: string;
  @ApiProperty({ example: '100.00' }) amount: string;
  @ApiProperty({ example: 'EUR' }) currency: string;
  @ApiProperty({ example: 'cashier deposit' }) reason: string;
  @ApiProperty({ example: 'adjustment:dep-2026-11-30-0001' }) operationKey: string;
  @ApiProperty({ example: '100.00', description: 'balance right after this adjustment' }) balance: string;
  @ApiProperty({ example: '2026-11-30T10:00:00.000Z' }) createdAt: string;
  @ApiProperty({
    example: 'cashier',
    type: String,
    nullable: true,
    description: 'name of the partner API key that made it (null for adjustments from before keys had names)',
  })
  actor: string | null;
}
