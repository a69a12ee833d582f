import { ApiProperty } from '@nestjs/swagger';
import { Matches } from 'class-validator';

/** Query of `GET /search`. */
export class SearchQueryDto {
  @ApiProperty({
    example: 'b-2026-11-30-000123',
    description:
      'any id: batch id, coupon code, bet uuid, account id (or its start), operation key (also its wallet and event outbox rows), outbox / event outbox / quarantine / inbox id, request id (1..200 characters)',
  })
  // eslint-disable-next-line no-control-regex -- U+0000 cannot be stored, so it is never an id
  @Matches(/^[^\u0000]{1,200}$/, { message: 'q must be 1..200 characters' })
  q: string;
}

/** One record found by `GET /search`. */
export class SearchHitView {
  @ApiProperty({
    example: 'batch',
    enum: [
      'batch',
      'coupon',
      'bet',
      'account',
      'operation',
      'outbox',
      'event_outbox',
      'quarantine',
      'inbox',
      'delivery',
      'operator_action',
      'wallet_attempt',
    ],
  })
  kind: string;
  @ApiProperty({ example: 'b-2026-11-30-000123', description: 'the id of the record in its kind' })
  id: string;
  @ApiProperty({
    example:
      'batch b-2026-11-30-000123: committed 2026-11-30T12:00:00.500Z, 1 coupon(s), 2 delivery attempt(s)',
  })
  label: string;
  @ApiProperty({
    example: '/callbacks/batches/b-2026-11-30-000123',
    description:
      'API path of the record (or of the record that shows it: a bet on its coupon); the console route follows from it',
  })
  link: string;
}

/** `GET /search`: every record whose id is `q`. */
export class SearchResultView {
  @ApiProperty({ example: 'b-2026-11-30-000123' }) q: string;
  @ApiProperty({ type: [SearchHitView] }) items: SearchHitView[];
}

/** Delivery attempts per minute and outcome over a window ending with the current minute. */
export class DeliverySeriesView {
  @ApiProperty({ example: '2026-11-30T11:01:00.000Z', description: 'start of the first minute' })
  from: string;
  @ApiProperty({
    example: 60,
    description: 'number of minutes (the last one is the current, partial minute)',
  })
  minutes: number;
  @ApiProperty({
    example: {
      processed: [12, 9],
      duplicate: [2, 0],
      accepted: [0, 0],
      conflict: [0, 0],
      rejected: [0, 1],
      unauthorized: [0, 0],
      failed: [0, 0],
    },
    description: 'per outcome, one count per minute from `from` on',
    type: 'object',
    additionalProperties: { type: 'array', items: { type: 'integer' } },
  })
  series: Record<string, number[]>;
  @ApiProperty({
    example: {
      processed: 21,
      duplicate: 2,
      accepted: 0,
      conflict: 0,
      rejected: 1,
      unauthorized: 0,
      failed: 0,
    },
    type: 'object',
    additionalProperties: { type: 'integer' },
  })
  totals: Record<string, number>;
}

/** Deliveries of the last hour and the last day. */
export class DeliveriesOverviewView {
  @ApiProperty({ type: DeliverySeriesView }) lastHour: DeliverySeriesView;
  @ApiProperty({ type: DeliverySeriesView }) lastDay: DeliverySeriesView;
  @ApiProperty({
    example: '2026-11-30T11:58:00.000Z',
    type: String,
    nullable: true,
    description: 'minutes before this come from the rollup, later ones are counted live',
  })
  rolledUntil: string | null;
}

/** Coupons that wait for a person. */
export class CouponsOverviewView {
  @ApiProperty({ example: 3 }) needsReview: number;
  @ApiProperty({
    example: { conflicting_result: 2, wallet_refused: 1 },
    type: 'object',
    additionalProperties: { type: 'integer' },
  })
  byReviewReason: Record<string, number>;
  @ApiProperty({ example: 1 }) unallocated: number;
}

/** Quarantined bodies no one has replayed yet. */
export class QuarantineOverviewView {
  @ApiProperty({ example: 2 }) notReplayed: number;
  @ApiProperty({ example: '2026-11-30T09:12:00.000Z', type: String, nullable: true }) oldestNotReplayedAt:
    string | null;
}

/** The inbox backlog (inbox mode). */
export class InboxOverviewView {
  @ApiProperty({ example: 0 }) pending: number;
  @ApiProperty({ example: 0, description: 'seconds since the oldest pending row arrived (0 when none)' })
  oldestPendingAgeSeconds: number;
}

/** The wallet outbox rows that are not delivered (also a publisher's events: {@link PublisherOverviewView}). */
export class WalletOutboxOverviewView {
  @ApiProperty({ example: false }) paused: boolean;
  @ApiProperty({ example: 4 }) pending: number;
  @ApiProperty({ example: 1 }) parked: number;
  @ApiProperty({ example: 0 }) skipped: number;
  @ApiProperty({
    example: 3.5,
    description: 'seconds since the oldest pending or parked row was written (0 when none)',
  })
  oldestUndeliveredAgeSeconds: number;
}

/** A publisher's settlement events that are not delivered (docs/events.md). */
export class PublisherOverviewView extends WalletOutboxOverviewView {
  @ApiProperty({ example: 'rabbitmq', description: 'a name of EVENT_PUBLISHERS' }) publisher: string;
}

/** `GET /overview`: what the console's first screen shows. */
export class OverviewView {
  @ApiProperty({ example: '2026-11-30T12:00:30.000Z' }) generatedAt: string;
  @ApiProperty({ type: DeliveriesOverviewView }) deliveries: DeliveriesOverviewView;
  @ApiProperty({ type: CouponsOverviewView }) coupons: CouponsOverviewView;
  @ApiProperty({ type: QuarantineOverviewView }) quarantine: QuarantineOverviewView;
  @ApiProperty({ type: InboxOverviewView }) inbox: InboxOverviewView;
  @ApiProperty({ type: WalletOutboxOverviewView }) walletOutbox: WalletOutboxOverviewView;
  @ApiProperty({
    type: [PublisherOverviewView],
    description: 'one entry per publisher of EVENT_PUBLISHERS, in its order (none: an empty list)',
  })
  events: PublisherOverviewView[];
}
