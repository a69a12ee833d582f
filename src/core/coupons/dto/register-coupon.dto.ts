import { ApiProperty } from '@nestjs/swagger';
import { IsString, Length, Matches } from 'class-validator';
import { CurrencyProperty, IsDecimalAmount, IsStorableText } from '../../../platform/common/validation.js';

/** `POST /coupons` body (CONTRACT §10): a placed coupon, its owner and stake. */
export class RegisterCouponDto {
  @ApiProperty({
    example: '000000000272',
    description: 'Kept exactly as sent (leading zeros matter), 1..32 chars.',
  })
  @IsString()
  @Length(1, 32)
  @IsStorableText()
  coupon_code: string;

  @ApiProperty({
    example: 'player-42',
    pattern: '^[A-Za-z0-9._@-]{1,64}$',
    description:
      'Player account id, 1..64 of A-Z a-z 0-9 . _ @ -. An unknown id is created on first use with balance 0, so ' +
      'its stake debit answers 422 insufficient_funds until a deposit funds it.',
  })
  @IsString()
  @Matches(/^[A-Za-z0-9._@-]{1,64}$/, { message: 'accountId must be 1..64 of A-Z a-z 0-9 . _ @ -' })
  accountId: string;

  @ApiProperty({
    example: '10.00',
    description:
      'Stake, positive decimal string with at most the currency\'s minor-unit digits ("1500" JPY, "10.00" EUR, ' +
      '"12.345" KWD, "0.00012345" BTC).',
  })
  @IsDecimalAmount({ currencyField: 'currency' })
  stake: string;

  @CurrencyProperty() currency: string;
}
