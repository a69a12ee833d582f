import { IdPageQueryDto } from '../../../platform/common/id-page-query.dto.js';
import { ApiNextCursor, DateTimeFilter } from '../../../platform/common/pagination.js';
import { nullableRef } from '../../../platform/common/openapi-schema.js';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, Matches } from 'class-validator';
import { DeliveryOutcome } from '../../../platform/deliveries/delivery.types.js';

/** One delivery attempt of a batch (CONTRACT §8); `durationMs` in milliseconds. */
export class DeliveryAttemptView {
  @ApiProperty({ example: '1841' }) id: string;
  @ApiProperty({ example: 'b-2026-11-30-000123', type: String, nullable: true }) batchId: string | null;
  @ApiProperty({ example: 'c9a8531c-c1d5-4ddc-b67c-5358ad98ccde', type: String, nullable: true })
  requestId: string | null;
  @ApiProperty({ example: '2026-11-30T12:00:01.250Z' }) receivedAt: string;
  @ApiProperty({ example: 'duplicate', enum: Object.values(DeliveryOutcome) }) outcome: string;
  @ApiProperty({ example: 200 }) httpStatus: number;
  @ApiProperty({ example: null, type: String, nullable: true }) errorCode: string | null;
  @ApiProperty({ example: 2, type: Number, nullable: true }) couponCount: number | null;
  @ApiProperty({ example: 14 }) durationMs: number;
  @ApiProperty({
    example: '3f0a7c2d9e1b4a5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9012345678',
    type: String,
    nullable: true,
    description: 'SHA-256 of the signed body; null when the signature did not match',
  })
  payloadHash: string | null;
  @ApiProperty({
    example: null,
    type: String,
    nullable: true,
    description: "name of the partner API key of a quarantine replay; null for SportAPI's deliveries",
  })
  actor: string | null;
  @ApiProperty({
    example: '4bf92f3577b34da6a3ce929d0e0e4736',
    type: String,
    nullable: true,
    description:
      "the delivery's OpenTelemetry trace id; null when tracing was off (docs/operating.md, Traces)",
  })
  traceId: string | null;
}

/** A coupon snapshot of the batch: what the batch said and what it did (CONTRACT §6). */
export class BatchCouponView {
  @ApiProperty({ example: '000000000272' }) coupon_code: string;
  @ApiProperty({ example: 2 }) status: number;
  @ApiProperty({ example: '185.50', type: String, nullable: true }) realWin: string | null;
  @ApiProperty({ example: true }) applied: boolean;
  @ApiProperty({ example: 'settled' }) transition: string;
  @ApiProperty({ example: 0 }) generation: number;
}

/** A financial operation posted by the batch (CONTRACT §7). */
export class BatchOperationView {
  @ApiProperty({ example: '000000000272:0:final_credit' }) key: string;
  @ApiProperty({ example: 'final_credit' }) type: string;
  @ApiProperty({ example: '000000000272', type: String, nullable: true }) couponCode: string | null;
  @ApiProperty({ example: 'player-42' }) accountId: string;
  @ApiProperty({ example: '185.50' }) amount: string;
  @ApiProperty({ example: 'EUR' }) currency: string;
  @ApiProperty({ example: '2026-11-30T12:00:00.512Z' }) createdAt: string;
}

/** `GET /callbacks/batches/{batchId}`: the stored batch, its snapshots, operations and every delivery. */
/** What of a batch the retention policy removed (docs/retention.md, "After a purge"). */
export class ExpiredView {
  @ApiProperty({ example: 'expired under the retention policy' }) note: string;
  @ApiProperty({
    example: ['snapshots', 'delivery_attempts'],
    description:
      'the data classes of this batch that are gone: batch_ids (its row: payload hash, count), raw_bodies (its body), ' +
      'snapshots (its coupons), delivery_attempts (its attempts)',
  })
  classes: string[];
}

export class BatchAuditView {
  @ApiProperty({ example: 'b-2026-11-30-000123' }) batchId: string;
  @ApiProperty({
    example: true,
    description: 'false when no delivery of it was committed (only failed attempts)',
  })
  committed: boolean;
  @ApiProperty({
    example: '3f0a7c2d9e1b4a5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9012345678',
    type: String,
    nullable: true,
  })
  payloadHash: string | null;
  @ApiProperty({ example: 2, type: Number, nullable: true }) couponCount: number | null;
  @ApiProperty({ example: '2026-11-30T12:00:00.500Z', type: String, nullable: true }) committedAt:
    string | null;
  @ApiProperty({
    example: null,
    type: String,
    nullable: true,
    description:
      'name of the partner API key whose request applied the batch (reconcile, resolution, quarantine replay); ' +
      "null for SportAPI's callbacks, inbox workers and scheduled reconciliation",
  })
  actor: string | null;
  @ApiProperty({ type: [BatchCouponView] }) coupons: BatchCouponView[];
  @ApiProperty({
    type: [BatchOperationView],
    description: 'posted once, however often the batch was delivered',
  })
  operations: BatchOperationView[];
  @ApiProperty({
    ...nullableRef(ExpiredView),
    description: 'what of the batch expired under the retention policy; null when nothing did',
  })
  expired: ExpiredView | null;
  @ApiProperty({ type: [DeliveryAttemptView], description: 'oldest first' })
  deliveries: DeliveryAttemptView[];
  @ApiProperty({ example: 0, description: 'bodies of this batch id kept in the quarantine (400/409)' })
  quarantined: number;
}

/** Query of `GET /callbacks/deliveries`. */
export class DeliveryQueryDto extends IdPageQueryDto {
  @ApiPropertyOptional({ enum: Object.values(DeliveryOutcome) })
  @IsOptional()
  @IsIn(Object.values(DeliveryOutcome))
  outcome?: string;

  @ApiPropertyOptional({ example: 'b-2026-11-30-000123' })
  @IsOptional()
  @Matches(/^.{1,128}$/s)
  batchId?: string;

  @DateTimeFilter('2026-11-30T00:00:00Z', 'received at or after (RFC 3339 date-time)') from?: string;

  @DateTimeFilter('2026-12-01T00:00:00Z', 'received before (RFC 3339 date-time)') to?: string;
}

/** One page of delivery attempts, newest first. */
export class DeliveryPageView {
  @ApiProperty({ type: [DeliveryAttemptView] }) items: DeliveryAttemptView[];
  @ApiNextCursor() nextCursor: string | null;
}
