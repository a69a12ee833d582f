import { Injectable } from '@nestjs/common';
import { Tx } from '../database/transaction.js';
import { DeliveryOutcome } from './delivery.types.js';

/** One delivery attempt to record (CONTRACT §8); `durationMs` in milliseconds. */
export interface DeliveryAttemptRow {
  batchId: string | null;
  requestId: string | null;
  receivedAt: Date;
  outcome: DeliveryOutcome;
  httpStatus: number;
  errorCode: string | null;
  couponCount: number | null;
  durationMs: number;
  payloadHash: string | null;
  /** Name of the partner API key of a quarantine replay; absent or null for SportAPI's deliveries. */
  actor?: string | null;
}

/** A signed body rejected with 400/409, to keep verbatim (CONTRACT §8). */
export interface QuarantineRow {
  batchId: string | null;
  reason: string;
  details: unknown;
  httpStatus: number;
  body: Buffer;
  contentType: string | null;
  payloadHash: string;
}

/** Columns and parameters of a delivery attempt row, `$first`… (CONTRACT §8). */
export function attemptValues(a: DeliveryAttemptRow): unknown[] {
  return [
    a.batchId,
    a.requestId,
    a.receivedAt,
    a.outcome,
    a.httpStatus,
    a.errorCode,
    a.couponCount,
    a.durationMs,
    a.payloadHash,
  ];
}

/** SQL of `delivery_attempts` and `quarantined_bodies`. */
@Injectable()
export class DeliveryAuditRepository {
  async insertAttempt(tx: Tx, a: DeliveryAttemptRow): Promise<void> {
    await this.insertAttempts(tx, [a]);
  }

  /** Several attempts in one statement. */
  async insertAttempts(tx: Tx, attempts: DeliveryAttemptRow[]): Promise<void> {
    const column = (i: number) => attempts.map((a) => attemptValues(a)[i]);
    await tx.query(
      `INSERT INTO delivery_attempts (batch_id, request_id, received_at, outcome, http_status, error_code, coupon_count, duration_ms, payload_hash, actor)
       SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::int[], $6::text[], $7::int[], $8::int[], $9::char(64)[], $10::text[])`,
      [...[0, 1, 2, 3, 4, 5, 6, 7, 8].map(column), attempts.map((a) => a.actor ?? null)],
    );
  }

  async insertQuarantine(tx: Tx, q: QuarantineRow): Promise<void> {
    await tx.query(
      `INSERT INTO quarantined_bodies (batch_id, reason, details, http_status, body, content_type, payload_hash)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [
        q.batchId,
        q.reason,
        q.details === undefined ? null : JSON.stringify(q.details),
        q.httpStatus,
        q.body,
        q.contentType,
        q.payloadHash,
      ],
    );
  }
}
