import { Injectable } from '@nestjs/common';
import { LessThan } from 'typeorm';
import { Statement, TRACEPARENT_SETTING, Tx } from '../../platform/database/transaction.js';
import { BatchRepository } from '../../core/settlement/batch.repository.js';
import { DeliveryOutcome } from '../../platform/deliveries/delivery.types.js';
import {
  attemptValues,
  DeliveryAttemptRepository,
  DeliveryAttemptRow,
} from '../../platform/deliveries/delivery-attempt.repository.js';
import type { InboxStatus } from './inbox.types.js';
import { InboxEntryEntity } from './entities/inbox-entry.entity.js';

/**
 * Namespace of the transaction-level advisory locks, one per coupon code (`hashtext`), that an
 * inbox append holds from before its INSERT to COMMIT. Two batches sharing a coupon therefore get
 * their inbox ids in the order they commit: a snapshot that shows a row also shows every earlier
 * row sharing one of its coupons (see {@link InboxRepository.claimDue}). Batches on disjoint
 * coupons do not wait for each other.
 */
export const INBOX_COUPON_LOCK_NAMESPACE = 727_002;

/** A batch to append to the inbox: raw bytes, their SHA-256 and the coupon codes it touches. */
export interface InboxAppend {
  batchId: string;
  payloadHash: string;
  couponCount: number;
  couponCodes: string[];
  payload: Buffer;
  requestId: string | null;
}

/** Result of an append: a new row, the same body seen before (inbox or applied), or another body. */
export type InboxAppendResult = 'accepted' | 'duplicate' | 'conflict';

/** An inbox row claimed by a worker (locked `FOR UPDATE` until its transaction ends). */
export interface ClaimedInboxRow {
  id: string;
  batchId: string;
  payloadHash: string;
  /** Failed applications so far (this claim not counted). */
  attempts: number;
  requestId: string | null;
  /** W3C trace context of the delivery that accepted it (tracing on then), else null. */
  traceparent: string | null;
}

/** What is known about a batch id in the inbox. */
export interface InboxEntryState {
  id: string;
  payloadHash: string;
  status: InboxStatus;
}

/** How an inbox row was finished: applied now, or found applied before (same body). */
export type InboxOutcome = 'processed' | 'duplicate' | 'conflict' | 'failed';

/** What the inbox gauges read at scrape time. */
export interface InboxBacklog {
  pending: number;
  oldestPendingAgeSeconds: number;
}

/** SQL of `callback_inbox` (inbox mode, CONTRACT §4, §5) and the quarantine of inbox rows (§8). */
@Injectable()
export class InboxRepository {
  constructor(
    private readonly batches: BatchRepository,
    private readonly attempts: DeliveryAttemptRepository,
  ) {}

  /**
   * Appends a batch unless its id is known (applied, or in the inbox in any state): then a
   * duplicate for the same hash, else a conflict, nothing inserted. First takes the batch id's
   * advisory lock (as an inline claim does) and one per coupon ({@link INBOX_COUPON_LOCK_NAMESPACE},
   * ascending, waiting up to the deadline); then, in one statement sent with COMMIT, inserts the
   * row (its trigger adds its `callback_inbox_pending_coupons`) and the delivery attempt `attempt`
   * (outcome `accepted` or `duplicate`; none for a conflict, which writes nothing). Three round
   * trips in all.
   */
  async append(
    tx: Tx,
    entry: InboxAppend,
    attempt: Omit<DeliveryAttemptRow, 'outcome'>,
  ): Promise<{ result: InboxAppendResult; id: string | null }> {
    await tx.send({
      batchLock: this.batches.batchIdLockStatement(entry.batchId),
      couponLocks: {
        name: 'inbox_coupon_locks',
        text: `SELECT pg_advisory_xact_lock($1, k)
                 FROM (SELECT DISTINCT hashtext(code) AS k FROM unnest($2::text[]) AS code ORDER BY 1) AS keys`,
        values: [INBOX_COUPON_LOCK_NAMESPACE, entry.couponCodes],
        waitsUntilDeadline: true,
      },
    });
    const a = attemptValues({ ...attempt, outcome: DeliveryOutcome.ACCEPTED });
    const { appended } = await tx.commitWith({
      appended: {
        name: 'inbox_append',
        // The locks above make every earlier append or claim of this batch id visible here.
        text: `WITH applied AS (
                 SELECT payload_hash FROM callback_batches WHERE batch_id = $1
               ), ins AS (
                 INSERT INTO callback_inbox (batch_id, payload_hash, coupon_count, coupon_codes, payload, request_id, traceparent)
                 SELECT $1, $2, $3, $4, $5, $6, nullif(current_setting('${TRACEPARENT_SETTING}', true), '')
                  WHERE NOT EXISTS (SELECT 1 FROM applied)
                 ON CONFLICT (batch_id) DO NOTHING RETURNING id
               ), result AS (
                 SELECT CASE WHEN EXISTS (SELECT 1 FROM ins) THEN 'accepted'
                             WHEN coalesce((SELECT payload_hash FROM applied),
                                           (SELECT payload_hash FROM callback_inbox WHERE batch_id = $1)) = $2::char(64)
                             THEN 'duplicate'
                             ELSE 'conflict' END AS result
               ), att AS (
                 ${this.attempts.insertFromSql(
                   `SELECT $1, $7, $8, result, $9, $10, $3, $11, $2, NULL, $12 FROM result WHERE result <> 'conflict'`,
                 )}
               )
               SELECT result, (SELECT id::text FROM ins) AS id FROM result`,
        values: [
          entry.batchId,
          entry.payloadHash,
          entry.couponCount,
          entry.couponCodes,
          entry.payload,
          entry.requestId,
          a[1],
          a[2],
          a[4],
          a[5],
          a[7],
          a[10],
        ],
      } as Statement<{ result: InboxAppendResult; id: string | null }>,
    });
    return appended.rows[0];
  }

  /** The inbox row of `batchId`, if any. */
  async findByBatchId(tx: Tx, batchId: string): Promise<InboxEntryState | undefined> {
    const { rows } = await tx.query<{ id: string; payload_hash: string; status: InboxStatus }>(
      'SELECT id, payload_hash, status FROM callback_inbox WHERE batch_id = $1',
      [batchId],
    );
    return rows[0] && { id: rows[0].id, payloadHash: rows[0].payload_hash, status: rows[0].status };
  }

  /**
   * Claims up to `limit` of the oldest pending rows that are due and that no earlier pending row
   * shares a coupon with, locking them `FOR UPDATE SKIP LOCKED` (other workers skip them; the locks
   * last until the caller's transaction ends). An earlier pending row (being applied by another
   * worker, or waiting for its retry) holds back every later row touching one of its coupons, so
   * two batches touching one coupon are never applied concurrently nor out of arrival order; batches
   * on disjoint coupons are applied in parallel. So the rows of one claim, and the rows all workers
   * hold, have pairwise disjoint coupons. A candidate costs one probe of
   * `callback_inbox_pending_coupons`' primary key per coupon, whatever the backlog. Without the
   * payload: a worker of the process that accepted the row has it parsed already ({@link payloadOf}
   * reads it otherwise). Oldest first.
   */
  async claimDue(tx: Tx, limit: number): Promise<ClaimedInboxRow[]> {
    const { rows } = await tx.query<{
      id: string;
      batch_id: string;
      payload_hash: string;
      attempts: number;
      request_id: string | null;
      traceparent: string | null;
    }>(
      `SELECT i.id, i.batch_id, i.payload_hash, i.attempts, i.request_id, i.traceparent
         FROM callback_inbox i
        WHERE i.status = 'pending' AND i.next_attempt_at <= clock_timestamp()
          AND NOT EXISTS (
                SELECT 1 FROM unnest(i.coupon_codes) AS c(code)
                 WHERE EXISTS (SELECT 1 FROM callback_inbox_pending_coupons e
                                WHERE e.coupon_code = c.code COLLATE "C" AND e.inbox_id < i.id))
        ORDER BY i.id
        LIMIT $1
        FOR UPDATE OF i SKIP LOCKED`,
      [limit],
    );
    return rows.map((r) => ({
      id: r.id,
      batchId: r.batch_id,
      payloadHash: r.payload_hash,
      attempts: r.attempts,
      requestId: r.request_id,
      traceparent: r.traceparent,
    }));
  }

  /** The exact bytes of inbox row `id` (a claimed row: its payload never changes). */
  async payloadOf(tx: Tx, id: string): Promise<Buffer> {
    const { rows } = await tx.query<{ payload: Buffer }>('SELECT payload FROM callback_inbox WHERE id = $1', [
      id,
    ]);
    return rows[0].payload;
  }

  /**
   * Marks claimed rows applied, each with its outcome, in the transaction that applied them (a
   * worker sends it with COMMIT); their trigger releases their coupons.
   */
  markDoneStatement(done: { id: string; outcome: InboxOutcome }[]): Statement {
    return {
      name: 'inbox_done',
      text: `UPDATE callback_inbox i SET status = 'done', outcome = d.outcome, finished_at = now(), last_error = NULL
               FROM unnest($1::bigint[], $2::text[]) AS d(id, outcome) WHERE i.id = d.id`,
      values: [done.map((d) => d.id), done.map((d) => d.outcome)],
    };
  }

  /**
   * Counts one failed application of row `id` and schedules the next after `delayMs`, only when
   * it is still pending with `attemptsSeen` failures (so one failure is counted once) and not
   * locked by another worker (after a lost connection another worker may be applying it: that
   * attempt counts for itself; never waits).
   * @returns false when the row had moved on (applied or counted by someone else).
   */
  async recordFailure(
    tx: Tx,
    id: string,
    attemptsSeen: number,
    error: string,
    delayMs: number,
  ): Promise<boolean> {
    const res = await tx.query(
      `UPDATE callback_inbox
          SET attempts = attempts + 1, last_error = $3,
              next_attempt_at = clock_timestamp() + make_interval(secs => $4::double precision / 1000)
        WHERE id = (SELECT id FROM callback_inbox
                     WHERE id = $1 AND status = 'pending' AND attempts = $2
                     FOR UPDATE SKIP LOCKED)
        RETURNING id`,
      [id, attemptsSeen, error, delayMs],
    );
    return res.rowCount === 1;
  }

  /**
   * Moves row `id` (still pending with `attemptsSeen` failures) to the quarantine with `reason`
   * and `details`: a `quarantined_bodies` row with the exact bytes, linked by `inbox_id`;
   * `http_status` is 200, what the sender was answered when the batch was accepted. The status
   * change releases the row's coupons (trigger): later rows on its coupons proceed.
   * @returns the quarantine id, or undefined when the row had moved on.
   */
  async quarantine(
    tx: Tx,
    id: string,
    attemptsSeen: number,
    q: { reason: string; error: string; details: unknown; outcome: InboxOutcome },
  ): Promise<string | undefined> {
    const { reason, error, details, outcome } = q;
    const moved = await tx.query<{ id: string }>(
      `UPDATE callback_inbox
          SET status = 'quarantined', attempts = attempts + 1, outcome = $3, finished_at = now(),
              last_error = $4
        WHERE id = (SELECT id FROM callback_inbox
                     WHERE id = $1 AND status = 'pending' AND attempts = $2
                     FOR UPDATE SKIP LOCKED)
        RETURNING id`,
      [id, attemptsSeen, outcome, error],
    );
    if (moved.rowCount !== 1) return undefined;
    const { rows } = await tx.query<{ id: string }>(
      `INSERT INTO quarantined_bodies (batch_id, reason, details, http_status, body, content_type, payload_hash, inbox_id)
       SELECT batch_id, $2, $3, 200, payload, NULL, payload_hash, id FROM callback_inbox WHERE id = $1
       RETURNING id`,
      [id, reason, JSON.stringify(details ?? null)],
    );
    return rows[0]?.id;
  }

  /**
   * How many pending rows hold one of `couponCodes`: batches the sender was answered 200 for that
   * a worker has not applied yet, which anything else touching those coupons must not overtake
   * (CONTRACT §4 step 5).
   */
  async pendingWithCoupons(tx: Tx, couponCodes: string[]): Promise<number> {
    const { rows } = await tx.query<{ n: number }>(
      `SELECT count(DISTINCT inbox_id)::int AS n FROM callback_inbox_pending_coupons
        WHERE coupon_code = ANY($1::text[] COLLATE "C")`,
      [couponCodes],
    );
    return rows[0].n;
  }

  /** The inbox gauges' figures: pending rows and the oldest one's age in seconds (0 when none). */
  async backlog(tx: Tx): Promise<InboxBacklog> {
    const { rows } = await tx.query<InboxBacklog>(
      `SELECT count(*)::int AS pending,
              coalesce(extract(epoch FROM now() - min(received_at))::float8, 0) AS "oldestPendingAgeSeconds"
         FROM callback_inbox WHERE status = 'pending'`,
    );
    return rows[0];
  }

  /** Rows not yet applied nor quarantined. */
  async pendingCount(tx: Tx): Promise<number> {
    const { rows } = await tx.query<{ n: string }>(
      `SELECT count(*) AS n FROM callback_inbox WHERE status = 'pending'`,
    );
    return Number(rows[0].n);
  }

  /** Newest first: at most `limit` rows (with `status`, when given) with an id below `before`. */
  async list(
    tx: Tx,
    limit: number,
    before: string | undefined,
    status: InboxStatus | undefined,
  ): Promise<InboxEntryView[]> {
    const rows = await tx.manager.find(InboxEntryEntity, {
      select: {
        id: true,
        batchId: true,
        payloadHash: true,
        couponCount: true,
        couponCodes: true,
        status: true,
        attempts: true,
        nextAttemptAt: true,
        lastError: true,
        outcome: true,
        receivedAt: true,
        finishedAt: true,
      },
      where: { ...(before ? { id: LessThan(before) } : {}), ...(status ? { status } : {}) },
      order: { id: 'DESC' },
      take: limit,
    });
    return rows.map((r) => ({
      id: r.id,
      batchId: r.batchId,
      payloadHash: r.payloadHash,
      couponCount: r.couponCount,
      couponCodes: r.couponCodes,
      status: r.status,
      attempts: r.attempts,
      nextAttemptAt: r.status === 'pending' ? r.nextAttemptAt : null,
      lastError: r.lastError,
      outcome: r.outcome,
      receivedAt: r.receivedAt,
      finishedAt: r.finishedAt,
    }));
  }
}

/** An inbox row as operators see it (no payload). */
export interface InboxEntryView {
  id: string;
  batchId: string;
  payloadHash: string;
  couponCount: number;
  couponCodes: string[];
  status: InboxStatus;
  /** Failed applications so far. */
  attempts: number;
  /** When a pending row is due next; null once finished. */
  nextAttemptAt: Date | null;
  lastError: string | null;
  outcome: string | null;
  receivedAt: Date;
  finishedAt: Date | null;
}
