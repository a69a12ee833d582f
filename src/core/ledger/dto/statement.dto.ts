import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, Matches } from 'class-validator';
import { ApiNextCursor, DateTimeFilter, PageQueryDto } from '../../../platform/common/pagination.js';

/** Query of `GET /accounts`: an id prefix, then the page. */
export class AccountListQueryDto extends PageQueryDto {
  @ApiPropertyOptional({
    example: 'player-4',
    description: 'accounts whose id starts with this (1..64 characters)',
  })
  @IsOptional()
  @Matches(/^[A-Za-z0-9._@-]{1,64}$/, { message: 'q must be 1..64 of A-Z a-z 0-9 . _ @ -' })
  q?: string;
}

/** A player account in a list. */
export class AccountSummaryView {
  @ApiProperty({ example: 'player-42' }) id: string;
  @ApiProperty({ example: 'EUR' }) currency: string;
  @ApiProperty({ example: '115.50' }) balance: string;
  @ApiProperty({ example: '2026-11-01T09:00:00.000Z' }) createdAt: string;
  @ApiProperty({ example: '2026-11-30T12:00:00.512Z', description: 'last change of its balance' })
  updatedAt: string;
}

/** One page of player accounts, by id. */
export class AccountPageView {
  @ApiProperty({ type: [AccountSummaryView] }) items: AccountSummaryView[];
  @ApiNextCursor('WyJwbGF5ZXItNDIiXQ') nextCursor: string | null;
}

/** Query of `GET /accounts/{id}/statement`: a time range, the page, and the format. */
export class StatementQueryDto extends PageQueryDto {
  @DateTimeFilter('2026-11-01T00:00:00Z', 'entries at or after (RFC 3339 date-time)') from?: string;

  @DateTimeFilter('2026-12-01T00:00:00Z', 'entries before (RFC 3339 date-time)') to?: string;

  @ApiPropertyOptional({
    enum: ['json', 'csv'],
    description: '`csv`: every entry of the range as text/csv (as `Accept: text/csv`), not one page',
  })
  @IsOptional()
  @IsIn(['json', 'csv'])
  format?: 'json' | 'csv';
}

/** One ledger entry of an account with its operation and the balance right after it. */
export class StatementEntryView {
  @ApiProperty({ example: '88412' }) entryId: string;
  @ApiProperty({ example: '2026-11-30T12:00:00.512Z' }) at: string;
  @ApiProperty({ example: '000000000272:0:final_credit' }) operationKey: string;
  @ApiProperty({
    example: 'final_credit',
    enum: ['stake_debit', 'final_credit', 'recalculation_debit', 'deposit', 'withdrawal'],
  })
  type: string;
  @ApiProperty({ example: '000000000272', type: String, nullable: true }) couponCode: string | null;
  @ApiProperty({ example: '185.50', description: 'signed: positive credits the account' }) amount: string;
  @ApiProperty({ example: '301.00', description: 'the balance right after this entry' }) balanceAfter: string;
  @ApiProperty({ example: 'EUR' }) currency: string;
}

/** One page of an account's statement, newest first. */
export class StatementPageView {
  @ApiProperty({ example: 'player-42' }) accountId: string;
  @ApiProperty({ example: 'EUR' }) currency: string;
  @ApiProperty({ example: '301.00', description: 'the balance now' }) balance: string;
  @ApiProperty({ type: [StatementEntryView] }) items: StatementEntryView[];
  @ApiNextCursor('88411') nextCursor: string | null;
}
