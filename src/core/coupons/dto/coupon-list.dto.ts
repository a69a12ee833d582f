import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, Matches } from 'class-validator';
import {
  ApiNextCursor,
  DateTimeFilter,
  IsIntegerFrom,
  IsQueryFlag,
  PageQueryDto,
} from '../../../platform/common/pagination.js';

/** Query of `GET /coupons`: filters, then the page. */
export class CouponListQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ enum: ['true', 'false'], description: 'only coupons flagged needs_review (or not)' })
  @IsOptional()
  @IsQueryFlag()
  needsReview?: string;

  @ApiPropertyOptional({
    example: 'amount_precision',
    description:
      'only coupons flagged for this reason (`inconsistent_result`, `conflicting_result`, `recalculation_conflict`, `amount_precision`, `wallet_refused`, …)',
  })
  @IsOptional()
  @Matches(/^[a-z_]{1,64}$/, { message: 'reviewReason must be a review reason (a-z and _)' })
  reviewReason?: string;

  @ApiPropertyOptional({
    enum: ['true', 'false'],
    description: 'only coupons settled before registration (or registered ones)',
  })
  @IsOptional()
  @IsQueryFlag()
  unallocated?: string;

  @ApiPropertyOptional({
    type: 'integer',
    example: 2,
    description: "SportAPI's status code of the last applied snapshot",
  })
  @IsOptional()
  @IsIntegerFrom(0, 999_999)
  status?: string;

  @ApiPropertyOptional({ example: 'EUR', pattern: '^[A-Z0-9]{3,8}$' })
  @IsOptional()
  @Matches(/^[A-Z0-9]{3,8}$/, { message: 'currency must be 3..8 of A-Z 0-9' })
  currency?: string;

  @DateTimeFilter('2026-11-30T00:00:00Z', 'changed at or after (RFC 3339 date-time)') updatedFrom?: string;

  @DateTimeFilter('2026-12-01T00:00:00Z', 'changed before (RFC 3339 date-time)') updatedTo?: string;
}

/** A coupon in a list: registration and settlement state, without bets and operations. */
export class CouponSummaryView {
  @ApiProperty({ example: '000000000272' }) coupon_code: string;
  @ApiProperty({ example: 'player-42', type: String, nullable: true, description: 'null while unallocated' })
  accountId: string | null;
  @ApiProperty({ example: '10.00', type: String, nullable: true }) stake: string | null;
  @ApiProperty({ example: 'EUR', type: String, nullable: true }) currency: string | null;
  @ApiProperty({ example: 2, type: Number, nullable: true }) status: number | null;
  @ApiProperty({ example: '185.50', type: String, nullable: true }) realWin: string | null;
  @ApiProperty({ example: 0 }) settlementGeneration: number;
  @ApiProperty({ example: true }) settled: boolean;
  @ApiProperty({ example: false }) recalculationOpen: boolean;
  @ApiProperty({ example: true }) needsReview: boolean;
  @ApiProperty({ example: 'conflicting_result', type: String, nullable: true }) reviewReason: string | null;
  @ApiProperty({ example: false }) unallocated: boolean;
  @ApiProperty({
    example: 'b-2026-11-30-000123',
    type: String,
    nullable: true,
    description: 'the batch that last changed it',
  })
  lastBatchId: string | null;
  @ApiProperty({ example: '2026-11-30T11:00:00.000Z' }) createdAt: string;
  @ApiProperty({ example: '2026-11-30T12:00:00.500Z' }) updatedAt: string;
}

/** One page of coupons, most recently changed first. */
export class CouponPageView {
  @ApiProperty({ type: [CouponSummaryView] }) items: CouponSummaryView[];
  @ApiNextCursor('WyIyMDI2LTExLTMwVDEyOjAwOjAwLjUwMDAwMFoiLCIwMDAwMDAwMDAyNzIiXQ')
  nextCursor: string | null;
}

/** An operation of the coupon decided by a snapshot (not yet posted while unallocated). */
export class DecidedOperationView {
  @ApiProperty({ example: 'final_credit' }) type: string;
  @ApiProperty({ example: 0 }) generation: number;
  @ApiProperty({ example: '185.50' }) amount: string;
}

/** A financial operation a snapshot's batch posted for the coupon. */
export class PostedOperationView {
  @ApiProperty({ example: '000000000272:0:final_credit' }) key: string;
  @ApiProperty({ example: 'final_credit' }) type: string;
  @ApiProperty({ example: 0, type: Number, nullable: true }) generation: number | null;
  @ApiProperty({ example: '185.50', description: 'positive; the type says the direction' }) amount: string;
  @ApiProperty({ example: '2026-11-30T12:00:00.512Z' }) createdAt: string;
}

/** One snapshot of the coupon: what its batch said and what it did (CONTRACT §6). */
export class SnapshotView {
  @ApiProperty({ example: '9051' }) id: string;
  @ApiProperty({ example: 'b-2026-11-30-000123' }) batchId: string;
  @ApiProperty({ example: '2026-11-30T12:00:00.500Z', description: 'when its batch was applied' })
  receivedAt: string;
  @ApiProperty({ example: 2 }) status: number;
  @ApiProperty({ example: '185.50', type: String, nullable: true }) realWin: string | null;
  @ApiProperty({ example: 'settled', description: 'the settlement transition decided for it' })
  transition: string;
  @ApiProperty({ example: 0, description: 'settlement generation after it' }) generation: number;
  @ApiProperty({ example: true, description: 'applied to the coupon, or kept as history only' })
  applied: boolean;
  @ApiProperty({
    example: null,
    type: String,
    nullable: true,
    description:
      "key that applied its batch (reconcile, resolution, quarantine replay); null for SportAPI's callbacks",
  })
  actor: string | null;
  @ApiProperty({ type: [DecidedOperationView], description: 'operations its transition decided' })
  decidedOperations: DecidedOperationView[];
  @ApiProperty({
    type: [PostedOperationView],
    description: 'operations posted for it (by its batch id; for an unallocated coupon, at registration)',
  })
  operations: PostedOperationView[];
}

/** One page of a coupon's snapshots, newest first. */
export class SnapshotPageView {
  @ApiProperty({ example: '000000000272' }) coupon_code: string;
  @ApiProperty({ type: [SnapshotView] }) items: SnapshotView[];
  @ApiNextCursor('9050') nextCursor: string | null;
  @ApiProperty({
    example: null,
    type: String,
    nullable: true,
    description:
      'snapshots received before this time expired under the retention policy (RETENTION_SNAPSHOTS, docs/retention.md); ' +
      'null while none did',
  })
  expiredBefore: string | null;
}
