import { ApiProperty } from '@nestjs/swagger';
import { IsString } from 'class-validator';
import {
  CurrencyProperty,
  IsDecimalAmount,
  IsStorableText,
  TextLength,
  textSchema,
} from '../../../platform/common/validation.js';

/** `POST /accounts/{id}/adjustments` body (CONTRACT §10). */
export class AdjustmentDto {
  @ApiProperty({
    example: '100.00',
    description:
      "Deposit (positive) or withdrawal (negative), not zero, at most the currency's minor-unit digits " +
      '("1500" JPY, "100.00" EUR, "12.345" KWD, "0.00012345" BTC).',
  })
  @IsDecimalAmount({ allowNegative: true, currencyField: 'currency' })
  amount: string;

  @CurrencyProperty() currency: string;

  @ApiProperty({ ...textSchema(1, 500), example: 'cashier deposit' })
  @IsString()
  @TextLength(1, 500)
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
