import { ApiProperty, getSchemaPath } from '@nestjs/swagger';
import { ApiNextCursor } from '../../../platform/common/pagination.js';
import { FieldErrorDto } from '../../../platform/common/error-response.dto.js';
import { IdPageQueryDto } from '../../../platform/common/id-page-query.dto.js';

/** Query of `GET /callbacks/quarantine`: page size and keyset cursor (newest first). */
export class QuarantineListQueryDto extends IdPageQueryDto {}

/** A quarantined body without its full bytes (CONTRACT §8). */
export class QuarantineEntryView {
  @ApiProperty({ example: '42' }) id: string;
  @ApiProperty({ example: 'b-2026-11-30-000123', type: String, nullable: true }) batchId: string | null;
  @ApiProperty({
    example: 'batch_conflict',
    description:
      'error code it was refused with (`validation_failed`, `malformed_json`, `batch_conflict`), or ' +
      '`apply_failed` for an inbox batch that failed INBOX_MAX_ATTEMPTS times',
  })
  reason: string;
  @ApiProperty({
    example: { message: 'batch b-2026-11-30-000123 was delivered before with a different body' },
    description:
      '`validation_failed`: the failing fields (an array); otherwise an object: the message, or (`apply_failed`) ' +
      'the attempts and last error',
    oneOf: [
      { type: 'array', nullable: true, items: { $ref: getSchemaPath(FieldErrorDto) } },
      { type: 'object', additionalProperties: true },
    ],
  })
  details: unknown;
  @ApiProperty({ example: 409, description: 'status the sender was answered (200 for an inbox batch)' })
  httpStatus: number;
  @ApiProperty({ example: 'application/json', type: String, nullable: true }) contentType: string | null;
  @ApiProperty({ example: '5f1c…', description: 'hex SHA-256 of the body' }) payloadHash: string;
  @ApiProperty({ example: '2026-11-30T12:00:00.000Z' }) receivedAt: Date;
  @ApiProperty({ example: 312 }) bodyBytes: number;
  @ApiProperty({
    example: '{"batchId":"b-2026-11-30-000123","couponCount":1,"coupons":[{"coupon_code":"000000000272"',
    description: 'the first 256 bytes of the body as UTF-8; the whole body: GET /callbacks/quarantine/{id}',
  })
  bodyPreview: string;
  @ApiProperty({ example: null, type: Date, nullable: true }) replayedAt: Date | null;
  @ApiProperty({
    example: null,
    type: String,
    nullable: true,
    enum: ['processed', 'duplicate', 'conflict', 'rejected', null],
  })
  replayOutcome: string | null;
  @ApiProperty({ example: 0 }) replayCount: number;
  @ApiProperty({ example: null, type: String, nullable: true, description: 'inbox row it came from' })
  inboxId: string | null;
  @ApiProperty({
    example: null,
    type: String,
    nullable: true,
    description: 'name of the partner API key of the last replay',
  })
  replayedBy: string | null;
}

/** One quarantined body with its bytes. */
export class QuarantineEntryDetailView extends QuarantineEntryView {
  @ApiProperty({ example: '{"batchId":"b-2026-11-30-000123","couponCount":1,"coupons":[]}' })
  body: string;
  @ApiProperty({ example: 'eyJiYXRjaElkIjoiYi0yMDI2LTExLTMwLTAwMDEyMyJ9', description: 'the exact bytes' })
  bodyBase64: string;
}

/** A page of the quarantine, newest first. */
export class QuarantinePageView {
  @ApiProperty({ type: [QuarantineEntryView] }) items: QuarantineEntryView[];
  @ApiNextCursor('41', 'pass as `cursor` for the next page; null on the last page') nextCursor: string | null;
}

/** Answer of a replay that went through: applied now, or applied before (no money moved). */
export class QuarantineReplayView {
  @ApiProperty({ example: 'processed', enum: ['processed', 'duplicate'] }) outcome: 'processed' | 'duplicate';
  @ApiProperty({ type: QuarantineEntryView }) entry: QuarantineEntryView;
}
