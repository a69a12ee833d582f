import { Body, Controller, Get, Headers, Param, Post, Res } from '@nestjs/common';
import { ApiHeader, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Actor, RequireScope } from '../auth/require-scope.decorator.js';
import { requireIdempotencyKey } from '../common/idempotency-key.js';
import { DomainException, ErrorCode } from '../common/domain.exception.js';
import { apiError } from '../common/error-response.dto.js';
import { AccountViewDto, AdjustmentDto, AdjustmentViewDto } from './dto/adjustment.dto.js';
import { AccountView, AdjustmentView, LedgerService } from './ledger.service.js';

/** Partner API for accounts (CONTRACT §10). */
@ApiTags('accounts')
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
    required: true,
    description:
      '1..128 of A-Z a-z 0-9 . _ ~ + / = @ - (no colon, so adjustment keys never meet coupon keys); the same key and body return the first result',
  })
  @ApiResponse({
    status: 201,
    type: AdjustmentViewDto,
    description: 'applied (also returned again for the same key and body, with Idempotent-Replayed: true)',
    headers: {
      'Idempotent-Replayed': {
        description: '"true" when this is the stored first result',
        schema: { type: 'string' },
      },
    },
  })
  @ApiResponse(apiError(400, 'invalid body or missing Idempotency-Key', 'validation_failed'))
  @ApiResponse(apiError(409, 'Idempotency-Key used with a different body', 'idempotency_conflict'))
  @ApiResponse(apiError(422, 'withdrawal above the balance, or another currency', 'insufficient_funds'))
  @ApiResponse(apiError(503, 'temporarily unavailable, retry later', 'transient_failure'))
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
}
