import { Body, Controller, Get, Headers, Param, Post, Query, Res, StreamableFile } from '@nestjs/common';
import {
  ApiExtraModels,
  ApiHeader,
  ApiOperation,
  ApiResponse,
  ApiTags,
  getSchemaPath,
} from '@nestjs/swagger';
import type { Response } from 'express';
import { Actor, RequireScope } from '../../platform/auth/require-scope.decorator.js';
import {
  requireIdempotencyKey,
  IDEMPOTENCY_KEY,
  apiIdempotentCreated,
} from '../../platform/common/idempotency-key.js';
import { DomainException, ErrorCode } from '../../platform/common/domain.exception.js';
import { apiError, TRANSIENT_FAILURE } from '../../platform/common/error-response.dto.js';
import { csvStream, textCell } from '../../platform/common/csv.js';
import { AccountViewDto, AdjustmentDto, AdjustmentViewDto } from './dto/adjustment.dto.js';
import {
  AccountListQueryDto,
  AccountPageView,
  StatementPageView,
  StatementQueryDto,
} from './dto/statement.dto.js';
import { AccountView, AdjustmentView, LedgerService } from './ledger.service.js';
import { API_TAGS } from '../../platform/common/api-tags.js';

/** Columns of the statement's CSV export, in order. */
const STATEMENT_COLUMNS = [
  'entryId',
  'at',
  'operationKey',
  'type',
  'couponCode',
  'amount',
  'balanceAfter',
  'currency',
];

/** Whether a request asks for the CSV form (`format=csv`, or `text/csv` in `Accept`). */
function wantsCsv(format: string | undefined, accept: string | undefined): boolean {
  if (format !== undefined) return format === 'csv';
  return (accept ?? '').split(',').some((type) => type.trim().toLowerCase().startsWith('text/csv'));
}

/** Partner API for accounts (CONTRACT §10). */
@ApiTags(API_TAGS.accounts.name)
@ApiExtraModels(StatementPageView)
@Controller('accounts')
export class AccountsController {
  constructor(private readonly ledger: LedgerService) {}

  @Get(':id')
  @RequireScope('read')
  @ApiOperation({ summary: 'A player account and its balance' })
  @ApiResponse({
    status: 200,
    type: AccountViewDto,
    description: 'the account with its balance (decimal string)',
  })
  @ApiResponse(apiError(404, 'account not found', 'not_found'))
  get(@Param('id') id: string): Promise<AccountView> {
    return this.ledger.getAccount(id);
  }

  @Post(':id/adjustments')
  @RequireScope('money')
  @ApiOperation({
    summary:
      'Deposit (positive) or withdraw (negative) under an Idempotency-Key; creates the account on first use',
  })
  @ApiHeader({
    name: 'Idempotency-Key',
    schema: { type: 'string', pattern: IDEMPOTENCY_KEY.source },
    required: true,
    description:
      '1..128 of A-Z a-z 0-9 . _ ~ + / = @ - (no colon, so adjustment keys never meet coupon keys); the same key and body return the first result',
  })
  @ApiResponse(apiIdempotentCreated(AdjustmentViewDto))
  @ApiResponse(apiError(400, 'invalid body or missing Idempotency-Key', 'validation_failed'))
  @ApiResponse(apiError(409, 'Idempotency-Key used with a different body', 'idempotency_conflict'))
  @ApiResponse(apiError(422, 'withdrawal above the balance, or another currency', 'insufficient_funds'))
  @ApiResponse(TRANSIENT_FAILURE)
  async adjust(
    @Param('id') id: string,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Body() dto: AdjustmentDto,
    @Actor() actor: Actor,
    @Res({ passthrough: true }) res: Response,
  ): Promise<AdjustmentView> {
    const key = requireIdempotencyKey(idempotencyKey);
    if (!/^[A-Za-z0-9._@-]{1,64}$/.test(id)) {
      throw new DomainException(
        ErrorCode.VALIDATION_FAILED,
        'account id must be 1..64 of A-Z a-z 0-9 . _ @ -',
      );
    }
    if (/^-?0(\.0+)?$/.test(dto.amount.trim())) {
      throw new DomainException(ErrorCode.VALIDATION_FAILED, 'amount must not be zero', [
        { path: 'amount', message: 'must not be zero' },
      ]);
    }
    const { view, replayed } = await this.ledger.adjust(id, key, dto, actor);
    res.status(201);
    if (replayed) res.setHeader('Idempotent-Replayed', 'true');
    return view;
  }

  @Get()
  @RequireScope('read')
  @ApiOperation({
    summary: 'Player accounts by id, optionally those whose id starts with `q`; keyset-paginated',
    description:
      'Ordered by id (ascending). `q` is a prefix of the id, matched through an index in any collation.',
  })
  @ApiResponse({
    status: 200,
    type: AccountPageView,
    description: 'one page of player accounts',
    example: {
      items: [
        {
          id: 'player-42',
          currency: 'EUR',
          balance: '115.50',
          createdAt: '2026-11-01T09:00:00.000Z',
          updatedAt: '2026-11-30T12:00:00.512Z',
        },
      ],
      nextCursor: null,
    },
  })
  @ApiResponse(apiError(400, 'invalid prefix, limit or cursor', 'validation_failed'))
  @ApiResponse(TRANSIENT_FAILURE)
  list(@Query() query: AccountListQueryDto): Promise<AccountPageView> {
    return this.ledger.listAccounts(query.q, query);
  }

  @Get(':id/statement')
  @RequireScope('read')
  @ApiOperation({
    summary:
      "A player account's ledger entries, newest first, with the balance after each; JSON pages or CSV",
    description:
      'Each entry: its id, time, operation key and type, coupon, signed amount (positive credits the account), the ' +
      'balance right after it and the currency; `from` inclusive, `to` exclusive. JSON is keyset-paginated. ' +
      '`Accept: text/csv` or `format=csv` exports every entry of the range (not one page) as RFC 4180 CSV, streamed; ' +
      'text cells that start like a spreadsheet formula (= + - @, tab, CR, LF; = + - @ also after leading spaces or ' +
      'invisible characters) are prefixed with a quote, amounts are not.',
  })
  @ApiResponse({
    status: 200,
    description: 'one page of the statement (JSON), or every entry of the range (CSV)',
    content: {
      'application/json': {
        schema: { $ref: getSchemaPath(StatementPageView) },
        example: {
          accountId: 'player-42',
          currency: 'EUR',
          balance: '301.00',
          items: [
            {
              entryId: '88412',
              at: '2026-11-30T12:00:00.512Z',
              operationKey: '000000000272:0:final_credit',
              type: 'final_credit',
              couponCode: '000000000272',
              amount: '185.50',
              balanceAfter: '301.00',
              currency: 'EUR',
            },
          ],
          nextCursor: '88412',
        },
      },
      'text/csv': {
        schema: { type: 'string' },
        example:
          'entryId,at,operationKey,type,couponCode,amount,balanceAfter,currency\r\n' +
          '88412,2026-11-30T12:00:00.512Z,000000000272:0:final_credit,final_credit,000000000272,185.50,301.00,EUR\r\n',
      },
    },
  })
  @ApiResponse(apiError(400, 'invalid range, limit, cursor or format', 'validation_failed'))
  @ApiResponse(apiError(404, 'no such player account', 'not_found', 'account player-42 not found'))
  @ApiResponse(TRANSIENT_FAILURE)
  async statement(
    @Param('id') id: string,
    @Query() query: StatementQueryDto,
    @Headers('accept') accept: string | undefined,
  ): Promise<StatementPageView | StreamableFile> {
    if (!wantsCsv(query.format, accept)) return this.ledger.statement(id, query);
    const pages = await this.ledger.statementExport(id, query);
    const records = (async function* () {
      for await (const page of pages)
        yield page.map((e) => [
          e.entryId,
          e.at,
          textCell(e.operationKey),
          e.type,
          textCell(e.couponCode),
          e.amount,
          e.balanceAfter,
          e.currency,
        ]);
    })();
    return new StreamableFile(csvStream(STATEMENT_COLUMNS, records), {
      type: 'text/csv; charset=utf-8',
      disposition: `attachment; filename="statement-${id.replace(/[^A-Za-z0-9._@-]/g, '_')}.csv"`,
    });
  }
}
