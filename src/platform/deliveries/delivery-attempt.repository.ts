import { Injectable } from '@nestjs/common';
import { Statement, Tx } from '../database/transaction.js';
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
  /** The delivery's trace id (32 hex) when tracing was on; absent or null otherwise. */
  traceId?: string | null;
}

/** The columns every insert names, in the order of {@link attemptValues}. */
const COLUMNS =
  'batch_id, request_id, received_at, outcome, http_status, error_code, coupon_count, duration_ms, payload_hash, actor, trace_id';

/** Parameters `$1`…`$11` of a delivery attempt, in the order of the table's insert columns. */
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
    a.actor ?? null,
    a.traceId ?? null,
  ];
}

/**
 * The one writer of `delivery_attempts` (CONTRACT §8): every statement that inserts an attempt is
 * built here, for the path that records it to send in its own group (the callback's COMMIT, an
 * inbox append, a replay, the background writer of failed deliveries), so that recording an
 * attempt costs no round trip of its own.
 */
@Injectable()
export class DeliveryAttemptRepository {
  /** Inserts `attempt`. */
  insertStatement(attempt: DeliveryAttemptRow): Statement {
    return {
      name: 'da_insert',
      text: `INSERT INTO delivery_attempts (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      values: attemptValues(attempt),
      // Sent between the batch's apply and the posting, which run under generic plans: the same
      // mode spares two SET LOCAL statements per batch (a plain insert plans the same either way).
      genericPlan: true,
    };
  }

  /**
   * Inserts `attempt` (a `duplicate`) only when the batch id was committed with the attempt's
   * payload hash; for the redelivery of a batch id the claim found taken (a conflict writes none:
   * its filter records it after the rollback).
   */
  insertIfStoredStatement(attempt: DeliveryAttemptRow): Statement {
    return {
      name: 'da_insert_if_stored',
      text: `INSERT INTO delivery_attempts (${COLUMNS})
             SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11
              WHERE EXISTS (SELECT 1 FROM callback_batches WHERE batch_id = $1 AND payload_hash = $9::char(64))`,
      values: attemptValues(attempt),
      genericPlan: true,
    };
  }

  /**
   * A byte-identical redelivery of a committed batch, recognised before its body is parsed
   * (CONTRACT §4 step 4): the batch whose payload hash is `attempt.payloadHash`, if any, and in the
   * same statement its `duplicate` delivery attempt (§8), with the batch id and coupon count of the
   * stored batch. No row when no such batch is committed (a concurrent first delivery still in
   * flight is not seen: that delivery goes the normal way and waits on the batch id).
   */
  insertForCommittedBatchStatement(
    attempt: Omit<DeliveryAttemptRow, 'batchId' | 'couponCount'>,
  ): Statement<{ batchId: string; couponCount: number }> {
    const v = attemptValues({ ...attempt, batchId: null, couponCount: null });
    return {
      name: 'da_committed_duplicate',
      text: `WITH h AS (
               SELECT batch_id, coupon_count FROM callback_batches WHERE payload_hash = $7::char(64) LIMIT 1
             ), a AS (
               INSERT INTO delivery_attempts (${COLUMNS})
               SELECT h.batch_id, $1, $2, $3, $4, $5, h.coupon_count, $6, $7, NULL, $8 FROM h
             )
             SELECT batch_id AS "batchId", coupon_count AS "couponCount" FROM h`,
      values: [v[1], v[2], v[3], v[4], v[5], v[7], v[8], v[10]],
    };
  }

  /**
   * The SQL of an insert whose rows come from `select` (a CTE of another statement that decides
   * the attempt in the same statement, e.g. an inbox append): `select` yields the eleven columns of
   * {@link attemptValues} in that order.
   */
  insertFromSql(select: string): string {
    return `INSERT INTO delivery_attempts (${COLUMNS}) ${select}`;
  }

  /** Several attempts in one statement (the background writer's chunks). */
  async insertMany(tx: Tx, attempts: DeliveryAttemptRow[]): Promise<void> {
    const column = (i: number) => attempts.map((a) => attemptValues(a)[i]);
    await tx.query(
      `INSERT INTO delivery_attempts (${COLUMNS})
       SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::int[], $6::text[], $7::int[], $8::int[], $9::char(64)[], $10::text[], $11::char(32)[])`,
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map(column),
    );
  }
}
