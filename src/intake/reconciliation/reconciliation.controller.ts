import { Body, Controller, Headers, HttpCode, Param, Post, Res, UseInterceptors } from '@nestjs/common';
import { ApiHeader, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Actor, RequireScope } from '../../platform/auth/require-scope.decorator.js';
import {
  requireIdempotencyKey,
  IDEMPOTENCY_KEY,
  apiIdempotentCreated,
} from '../../platform/common/idempotency-key.js';
import { apiError, apiErrors, TRANSIENT_FAILURE } from '../../platform/common/error-response.dto.js';
import { LosslessJsonInterceptor } from '../../platform/common/lossless-json.interceptor.js';
import { CouponView } from '../../core/coupons/dto/coupon-view.dto.js';
import { ResolutionDto, ResolutionResultView } from './dto/resolution.dto.js';
import { ReconciliationService } from './reconciliation.service.js';
import { ResolutionService } from './resolution.service.js';
import { API_TAGS } from '../../platform/common/api-tags.js';

/** Partner API of the polling fallback and reconciliation (CONTRACT §9, §10). */
@ApiTags(API_TAGS.reconciliation.name)
@UseInterceptors(LosslessJsonInterceptor)
@Controller('coupons')
export class ReconciliationController {
  constructor(
    private readonly reconciliation: ReconciliationService,
    private readonly resolutions: ResolutionService,
  ) {}

  @Post(':coupon_code/reconcile')
  @RequireScope('operate')
  @HttpCode(200)
  @ApiOperation({
    summary:
      'Read the coupon from SportAPI now and apply it as the synthetic batch poll:<coupon_code>:<sha256>',
    description:
      'Same validation and transaction as a callback coupon; a SportAPI read is authoritative (CONTRACT §9): it may ' +
      're-settle a needs_review coupon as a new generation. Reading the same coupon JSON again changes nothing, ' +
      'unless another batch changed the coupon since: then the read is decided again against its state now, as ' +
      '`poll:<coupon_code>:<sha256>:<16 hex>`. A read taken while another batch changed the coupon is taken again (up to 3 ' +
      'times). Refused (409) while the inbox holds pending batches of the coupon.',
  })
  @ApiResponse({
    status: 200,
    type: CouponView,
    description: 'the coupon after applying the read (as GET /coupons/{coupon_code})',
    headers: {
      'Reconciliation-Outcome': {
        description:
          '"applied" (a new snapshot went through the pipeline) or "unchanged" (the coupon\'s latest snapshot is this same read)',
        schema: { type: 'string' },
      },
      'Reconciliation-Batch-Id': {
        description:
          '`poll:<coupon_code>:<sha256 of the coupon JSON>`, with `:<16 hex of the previous batch>` when the same JSON was read before',
        schema: { type: 'string' },
      },
    },
  })
  @ApiResponse(apiError(404, 'SportAPI does not know the coupon', 'sportapi_coupon_not_found'))
  @ApiResponse(
    apiErrors(409, 'the coupon cannot be read now, retry later', {
      coupon_inbox_pending:
        'the inbox holds 1 pending batch(es) of coupon 000000000272; retry after they are applied',
      coupon_changed_during_read:
        'coupon 000000000272 changed during each of 3 reads from SportAPI; retry later',
    }),
  )
  @ApiResponse(apiError(501, 'polling is disabled: SPORTAPI_BASE_URL is not configured', 'polling_disabled'))
  @ApiResponse(
    apiError(
      502,
      'SportAPI answered something that is not a valid coupon (nothing written)',
      'sportapi_bad_response',
    ),
  )
  @ApiResponse(apiError(503, 'SportAPI is unreachable or failing, retry later', 'sportapi_unavailable'))
  async reconcile(
    @Param('coupon_code') couponCode: string,
    @Actor() actor: Actor,
    @Res({ passthrough: true }) res: Response,
  ): Promise<CouponView> {
    const { view, outcome, batchId } = await this.reconciliation.reconcile(couponCode, actor);
    res.setHeader('Reconciliation-Outcome', outcome);
    res.setHeader('Reconciliation-Batch-Id', batchId);
    return view;
  }

  @Post(':coupon_code/resolution')
  @RequireScope('operate')
  @ApiOperation({
    summary: 'Resolve a needs_review coupon by hand (recorded with who and why, applied once)',
    description:
      'A settled generation with another amount becomes a new generation: recalculation_debit of what it credited, ' +
      'final_credit of realWin (keys `<coupon_code>:<generation>:<type>`). The same Idempotency-Key and body return the ' +
      'first result.',
  })
  @ApiHeader({
    name: 'Idempotency-Key',
    schema: { type: 'string', pattern: IDEMPOTENCY_KEY.source },
    required: true,
    description: '1..128 of A-Z a-z 0-9 . _ ~ + / = @ - (as for adjustments)',
  })
  @ApiResponse(apiIdempotentCreated(ResolutionResultView))
  @ApiResponse(apiError(400, 'invalid body or missing Idempotency-Key', 'validation_failed'))
  @ApiResponse(apiError(404, 'coupon not found', 'not_found'))
  @ApiResponse(
    apiErrors(
      409,
      'the coupon is not flagged, the key was used with another body, or the inbox holds its batches',
      {
        coupon_not_flagged: 'coupon 000000000272 is not flagged needs_review; there is nothing to resolve',
        idempotency_conflict: 'this Idempotency-Key was used with a different request',
        coupon_inbox_pending:
          'the inbox holds 1 pending batch(es) of coupon 000000000272; retry after they are applied',
      },
    ),
  )
  @ApiResponse(TRANSIENT_FAILURE)
  async resolve(
    @Param('coupon_code') couponCode: string,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Body() dto: ResolutionDto,
    @Actor() actor: Actor,
    @Res({ passthrough: true }) res: Response,
  ): Promise<ResolutionResultView> {
    const key = requireIdempotencyKey(idempotencyKey);
    const { resolution, coupon, replayed } = await this.resolutions.resolve(couponCode, key, dto, actor);
    res.status(201);
    if (replayed) res.setHeader('Idempotent-Replayed', 'true');
    return { resolution, coupon };
  }
}
