import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiExtraModels, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { RequireScope } from '../../platform/auth/require-scope.decorator.js';
import { apiError, TRANSIENT_FAILURE } from '../../platform/common/error-response.dto.js';
import { IdentifierParamPipe } from '../../platform/common/validation.js';
import { AuditService } from './audit.service.js';
import { BatchAuditView, DeliveryPageView, DeliveryQueryDto, ExpiredView } from './dto/audit.dto.js';
import { API_TAGS } from '../../platform/common/api-tags.js';

/** Delivery audit endpoints (CONTRACT §8), bearer-protected like the partner API (§10). */
/** Swagger example of a redelivery's attempt: answered 200 as a duplicate (CONTRACT §8). */
const REDELIVERY_EXAMPLE = {
  id: '1841',
  batchId: 'b-2026-11-30-000123',
  requestId: 'r-2',
  receivedAt: '2026-11-30T12:00:11.250Z',
  outcome: 'duplicate',
  httpStatus: 200,
  errorCode: null,
  couponCount: 1,
  durationMs: 4,
  payloadHash: '3f0a7c2d9e1b4a5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9012345678',
  actor: null,
  traceId: '0af7651916cd43dd8448eb211c80319c',
};

@ApiTags(API_TAGS.deliveryAudit.name)
@ApiExtraModels(ExpiredView)
@Controller('callbacks')
export class AuditController {
  constructor(private readonly audit: AuditService) {}

  @Get('batches/:batchId')
  @RequireScope('read')
  @ApiOperation({
    summary: 'A batch: payload hash, coupon snapshots, financial operations and every delivery attempt',
    description:
      'A redelivered batch shows several deliveries (processed, then duplicate) and its operations once.',
  })
  @ApiResponse({
    status: 200,
    description:
      'the batch: whether it committed, its payload hash, its financial operations and every delivery attempt',
    type: BatchAuditView,
    example: {
      batchId: 'b-2026-11-30-000123',
      committed: true,
      payloadHash: '3f0a7c2d9e1b4a5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9012345678',
      couponCount: 1,
      committedAt: '2026-11-30T12:00:00.500Z',
      actor: null,
      coupons: [
        {
          coupon_code: '000000000272',
          status: 2,
          realWin: '185.50',
          applied: true,
          transition: 'settled',
          generation: 0,
        },
      ],
      operations: [
        {
          key: '000000000272:0:final_credit',
          type: 'final_credit',
          couponCode: '000000000272',
          accountId: 'player-42',
          amount: '185.50',
          currency: 'EUR',
          createdAt: '2026-11-30T12:00:00.512Z',
        },
      ],
      deliveries: [
        {
          id: '1840',
          batchId: 'b-2026-11-30-000123',
          requestId: 'r-1',
          receivedAt: '2026-11-30T12:00:00.480Z',
          outcome: 'processed',
          httpStatus: 200,
          errorCode: null,
          couponCount: 1,
          durationMs: 31,
          payloadHash: '3f0a7c2d9e1b4a5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9012345678',
          actor: null,
          traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
        },
        REDELIVERY_EXAMPLE,
      ],
      quarantined: 0,
      expired: null,
    },
  })
  @ApiResponse(
    apiError(
      400,
      'the batch id is not 1..128 characters without U+0000',
      'validation_failed',
      'the request does not match the schema',
    ),
  )
  @ApiResponse(apiError(404, 'batch id never delivered', 'not_found', 'batch b-404 was never delivered'))
  @ApiResponse(TRANSIENT_FAILURE)
  batch(@Param('batchId', new IdentifierParamPipe(128)) batchId: string): Promise<BatchAuditView> {
    return this.audit.batch(batchId);
  }

  @Get('deliveries')
  @RequireScope('read')
  @ApiOperation({
    summary: 'Delivery attempts, newest first, filtered by outcome, batch and time; keyset-paginated',
  })
  @ApiResponse({
    status: 200,
    description: 'one page of delivery attempts, newest first, with the cursor of the next page',
    type: DeliveryPageView,
    example: {
      items: [REDELIVERY_EXAMPLE],
      nextCursor: '1841',
    },
  })
  @ApiResponse(apiError(400, 'invalid filter', 'validation_failed', 'the request does not match the schema'))
  @ApiResponse(TRANSIENT_FAILURE)
  deliveries(@Query() query: DeliveryQueryDto): Promise<DeliveryPageView> {
    return this.audit.deliveries(query);
  }
}
