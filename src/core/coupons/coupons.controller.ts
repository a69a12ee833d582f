import { Body, Controller, Get, Param, Post, Query, Res, UseInterceptors } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Actor, RequireScope } from '../../platform/auth/require-scope.decorator.js';
import { apiError, TRANSIENT_FAILURE } from '../../platform/common/error-response.dto.js';
import { LosslessJsonInterceptor } from '../../platform/common/lossless-json.interceptor.js';
import { CouponsService } from './coupons.service.js';
import { PageQueryDto } from '../../platform/common/pagination.js';
import { CouponView } from './dto/coupon-view.dto.js';
import { CouponListQueryDto, CouponPageView, SnapshotPageView } from './dto/coupon-list.dto.js';
import { RegisterCouponDto } from './dto/register-coupon.dto.js';
import { API_TAGS } from '../../platform/common/api-tags.js';

/** Partner API for coupons (CONTRACT §10). */
@ApiTags(API_TAGS.coupons.name)
@UseInterceptors(LosslessJsonInterceptor)
@Controller('coupons')
export class CouponsController {
  constructor(private readonly coupons: CouponsService) {}

  @Post()
  @RequireScope('register')
  @ApiOperation({
    summary: 'Register a placed coupon and debit its stake (operation <coupon_code>:0:stake_debit)',
  })
  @ApiResponse({
    status: 201,
    type: CouponView,
    description: 'registered; settlement that arrived earlier is applied now',
  })
  @ApiResponse({ status: 200, type: CouponView, description: 'the same registration again' })
  @ApiResponse(apiError(400, 'invalid body', 'validation_failed'))
  @ApiResponse(apiError(409, 'coupon registered with another account, stake or currency', 'coupon_conflict'))
  @ApiResponse(apiError(422, 'stake above the balance, or account in another currency', 'insufficient_funds'))
  @ApiResponse(TRANSIENT_FAILURE)
  async register(
    @Body() dto: RegisterCouponDto,
    @Actor() actor: Actor,
    @Res({ passthrough: true }) res: Response,
  ): Promise<CouponView> {
    const { view, created } = await this.coupons.register(dto, actor);
    res.status(created ? 201 : 200);
    return view;
  }

  @Get(':coupon_code')
  @RequireScope('read')
  @ApiOperation({ summary: 'A coupon with its bets and financial operations' })
  @ApiResponse({
    status: 200,
    type: CouponView,
    description: 'the coupon, its settlement state and its bets',
  })
  @ApiResponse(apiError(404, 'coupon not found', 'not_found'))
  get(@Param('coupon_code') couponCode: string): Promise<CouponView> {
    return this.coupons.get(couponCode);
  }

  @Get()
  @RequireScope('read')
  @ApiOperation({
    summary: 'Coupons, most recently changed first, filtered by flag, reason, status, currency and time',
    description:
      'What needs a person: `needsReview=true` (with `reviewReason`) lists the flagged coupons, `unallocated=true` those ' +
      'settled before registration. Ordered by the time of the last change (`updatedAt`), newest first; ' +
      '`updatedFrom` inclusive, `updatedTo` exclusive. Keyset pagination: pass `nextCursor` as `cursor`.',
  })
  @ApiResponse({
    status: 200,
    type: CouponPageView,
    description: 'one page of coupons',
    example: {
      items: [
        {
          coupon_code: '000000000272',
          accountId: 'player-42',
          stake: '10.00',
          currency: 'EUR',
          status: 2,
          realWin: '185.50',
          settlementGeneration: 0,
          settled: true,
          recalculationOpen: false,
          needsReview: true,
          reviewReason: 'conflicting_result',
          unallocated: false,
          lastBatchId: 'b-2026-11-30-000124',
          createdAt: '2026-11-30T11:00:00.000Z',
          updatedAt: '2026-11-30T12:00:00.500Z',
        },
      ],
      nextCursor: null,
    },
  })
  @ApiResponse(apiError(400, 'invalid filter, limit or cursor', 'validation_failed'))
  @ApiResponse(TRANSIENT_FAILURE)
  list(@Query() query: CouponListQueryDto): Promise<CouponPageView> {
    return this.coupons.list(query);
  }

  @Get(':coupon_code/history')
  @RequireScope('read')
  @ApiOperation({
    summary:
      "A coupon's snapshots, newest first: what each batch said, the transition, the operations it posted",
    description:
      'Every snapshot kept for the coupon (CONTRACT §6): batch id, status, realWin, the settlement transition and ' +
      'generation, whether it was applied or kept as history only, the key that applied its batch, the operations its ' +
      'transition decided and those posted for it (linked by batch id and coupon). Keyset pagination by snapshot id.',
  })
  @ApiResponse({
    status: 200,
    type: SnapshotPageView,
    description: "one page of the coupon's snapshots",
    example: {
      coupon_code: '000000000272',
      items: [
        {
          id: '9051',
          batchId: 'b-2026-11-30-000124',
          receivedAt: '2026-11-30T12:05:00.500Z',
          status: 2,
          realWin: '190.00',
          transition: 'conflicting_result',
          generation: 0,
          applied: false,
          actor: null,
          decidedOperations: [],
          operations: [],
        },
        {
          id: '9050',
          batchId: 'b-2026-11-30-000123',
          receivedAt: '2026-11-30T12:00:00.500Z',
          status: 2,
          realWin: '185.50',
          transition: 'settled',
          generation: 0,
          applied: true,
          actor: null,
          decidedOperations: [{ type: 'final_credit', generation: 0, amount: '185.50' }],
          operations: [
            {
              key: '000000000272:0:final_credit',
              type: 'final_credit',
              generation: 0,
              amount: '185.50',
              createdAt: '2026-11-30T12:00:00.512Z',
            },
          ],
        },
      ],
      nextCursor: null,
      expiredBefore: null,
    },
  })
  @ApiResponse(apiError(400, 'invalid limit or cursor', 'validation_failed'))
  @ApiResponse(apiError(404, 'coupon not found', 'not_found', 'coupon 000000000272 not found'))
  history(@Param('coupon_code') couponCode: string, @Query() query: PageQueryDto): Promise<SnapshotPageView> {
    return this.coupons.history(couponCode, query);
  }
}
