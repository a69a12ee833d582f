import { Body, Controller, Get, Param, Post, Res, UseInterceptors } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Actor, RequireScope } from '../auth/require-scope.decorator.js';
import { apiError } from '../common/error-response.dto.js';
import { LosslessJsonInterceptor } from '../common/lossless-json.interceptor.js';
import { CouponsService } from './coupons.service.js';
import { CouponView } from './dto/coupon-view.dto.js';
import { RegisterCouponDto } from './dto/register-coupon.dto.js';
import { API_TAGS } from '../common/api-tags.js';

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
  @ApiResponse(apiError(503, 'temporarily unavailable, retry later', 'transient_failure'))
  async register(
    @Body() dto: RegisterCouponDto,
    @Actor() actor: string,
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
}
