import { Injectable } from '@nestjs/common';
import { FindOptionsWhere, LessThan } from 'typeorm';
import { CouponRepository } from '../coupons/coupon.repository.js';
import { Statement, StatementGroup, Tx } from '../database/transaction.js';
import { OperationType } from '../ledger/ledger.types.js';
import { WalletDeliveryAttemptEntity } from '../wallet/entities/wallet-delivery-attempt.entity.js';
import { WalletOutboxEntryEntity } from '../wallet/entities/wallet-outbox-entry.entity.js';
import { WalletOutboxStateEntity } from '../wallet/entities/wallet-outbox-state.entity.js';
import type { OutboxOperation, OutboxStep } from './outbox-rules.js';
import { AttemptOutcome, OutboxStatus, WALLET_REFUSED_REVIEW_REASON } from './outbox.types.js';

/** An outbox row claimed for one delivery attempt, with its ledger operation. */
export interface ClaimedOutboxRow extends OutboxOperation {
  id: string;
  /** This attempt's number (1 for the first); also the lease's token. */
  attempt: number;
  /** The body stored at the row's first claim (sent as it is), else null: this is the first. */
  body: Buffer | null;
  retryFrom: Date;
  /** Whether an operator released it from parked (only such a row may have flagged its coupon). */
  retried: boolean;
}

/** One attempt to record with its row's next step. */
export interface RecordedAttempt {
  row: ClaimedOutboxRow;
  requestId: string;
  connector: string;
  startedAt: Date;
  durationMs: number;
  outcome: AttemptOutcome;
  httpStatus: number | null;
  /** Excerpt of the wallet's answer or of the error (at most 500 characters). */
  answer: string | null;
  step: OutboxStep;
}

/** What the outbox gauges read at scrape time. */
export interface OutboxCounts {
  pending: number;
  parked: number;
  oldestPendingAgeSeconds: number;
  paused: boolean;
}

/** SQL of the wallet outbox (docs/wallet.md): claims, attempts, operator actions, pause state. */
@Injectable()
export class OutboxRepository {
  constructor(private readonly coupons: CouponRepository) {}

  /**
   * Claims up to `limit` due pending rows whose account has no earlier pending or parked row (each
   * its account's *head*, so no two of one account: an account's rows go out in order, other
   * accounts in parallel), the oldest such heads first, unless delivery is paused: leases them for
   * `leaseMs` and counts the attempt, in one statement (`FOR UPDATE SKIP LOCKED`: claimers never
   * wait for each other). A lease that runs out (a crashed worker) makes the row due again. Cost:
   * the 64 oldest pending rows usually hold a due head; when they do not (one account's long
   * backlog whose head is in flight, parked or waiting to be retried), one index probe per account
   * with open rows finds the heads, rather than one per row (docs/wallet.md, "Claim cost").
   */
  claimStatement(leaseMs: number, limit: number): Statement<ClaimedOutboxRow> {
    // The account's head: a min() over the open-rows index, which every PostgreSQL plans as one
    // index probe reading one row (a NOT EXISTS may become a bitmap scan of all earlier rows).
    const head = (r: string) =>
      `(SELECT min(e.id) FROM wallet_outbox e WHERE e.account_id = ${r}.account_id AND e.status IN ('pending', 'parked'))`;
    const due = (r: string) =>
      `${r}.status = 'pending' AND ${r}.next_attempt_at <= now() AND (${r}.leased_until IS NULL OR ${r}.leased_until <= now())`;
    return {
      name: 'wo_claim',
      text: `WITH RECURSIVE running AS MATERIALIZED (
               SELECT NOT paused AS yes FROM wallet_outbox_state WHERE id = 1
             ), oldest AS MATERIALIZED (
               SELECT id, account_id, status, next_attempt_at, leased_until FROM wallet_outbox
                WHERE status = 'pending' AND (SELECT yes FROM running)
                ORDER BY id LIMIT 64
             ), quick AS MATERIALIZED (
               SELECT w.id FROM oldest w
                WHERE ${due('w')} AND w.id = ${head('w')}
             ), heads AS (
               (SELECT account_id, id, status, next_attempt_at, leased_until FROM wallet_outbox
                 WHERE status IN ('pending', 'parked') AND (SELECT yes FROM running) AND NOT EXISTS (SELECT 1 FROM quick)
                 ORDER BY account_id, id LIMIT 1)
               UNION ALL
               SELECT n.* FROM heads h CROSS JOIN LATERAL (
                 SELECT e.account_id, e.id, e.status, e.next_attempt_at, e.leased_until FROM wallet_outbox e
                  WHERE e.status IN ('pending', 'parked') AND e.account_id > h.account_id
                  ORDER BY e.account_id, e.id LIMIT 1) n
             ), candidates AS MATERIALIZED (
               SELECT id FROM quick
               UNION ALL
               (SELECT h.id FROM heads h WHERE ${due('h')} ORDER BY h.id LIMIT 64)
             ), next AS (
               -- Each candidate looked up by its id, oldest first, until the limit is locked. Not one
               -- filtered scan: with statistics that call pending rows rare, PostgreSQL scanned
               -- every pending row in id order to keep that order.
               SELECT o.id FROM (SELECT id FROM candidates ORDER BY id) c
               CROSS JOIN LATERAL (
                 SELECT o.id FROM wallet_outbox o
                  WHERE o.id = c.id AND ${due('o')} AND o.id = ${head('o')}
                  FOR UPDATE OF o SKIP LOCKED) o
               ORDER BY c.id
               LIMIT $2
             )
             UPDATE wallet_outbox o
                SET attempts = o.attempts + 1, leased_until = now() + make_interval(secs => $1::double precision / 1000)
               FROM next, financial_operations f
              WHERE o.id = next.id AND f.id = o.operation_id
             RETURNING o.id, o.attempts AS attempt, o.body, o.retry_from AS "retryFrom",
                       o.retried_at IS NOT NULL AS retried,
                       f.operation_key AS "operationKey", f.type, f.account_id AS "accountId",
                       f.amount::text AS amount, f.currency::text AS currency, f.coupon_code AS "couponCode",
                       f.generation, f.batch_id AS "batchId", f.created_at AS "createdAt"`,
      values: [leaseMs, limit],
    };
  }

  /**
   * Records the attempts of a claim and applies each one's step to its row, only while the row is
   * still that attempt's (pending, same attempt count: a lease that ran out and was claimed again
   * leaves the row to the newer attempt, and its coupon unflagged); a record run again adds no
   * second history line. One statement for the rows' steps and one for the history, whatever the
   * claim's size. The coupons of rows this record parked as refused or conflict are flagged
   * `needs_review` (`wallet_refused`) unless already flagged for another reason, which they keep;
   * those of retried rows it delivered lose the flag ({@link unflagStatement}). Both locked first in
   * the order batches lock coupons in (no deadlock with a batch); a pause step pauses all delivery.
   * Committed without waiting for the WAL flush (`synchronous_commit = off`): a record lost in a
   * crash of PostgreSQL leaves its rows pending under their leases, delivered again later with the
   * stored bytes and answered as repeats.
   */
  recordStatements(attempts: RecordedAttempt[]): StatementGroup {
    const col = <T>(f: (a: RecordedAttempt) => T) => attempts.map(f);
    const group: StatementGroup = {
      asyncCommit: { text: "SELECT set_config('synchronous_commit', 'off', true)" },
      steps: {
        name: 'wo_steps',
        text: `UPDATE wallet_outbox o
                  SET leased_until = NULL, last_status = r.http_status, last_error = r.error,
                      status = CASE r.kind WHEN 'delivered' THEN 'delivered' WHEN 'park' THEN 'parked' ELSE o.status END,
                      delivered_at = CASE WHEN r.kind = 'delivered' THEN now() END,
                      parked_reason = CASE WHEN r.kind = 'park' THEN r.reason END,
                      parked_at = CASE WHEN r.kind = 'park' THEN now() END,
                      next_attempt_at = CASE WHEN r.kind = 'retry'
                                             THEN now() + make_interval(secs => r.delay_ms / 1000)
                                             ELSE o.next_attempt_at END
                 FROM unnest($1::bigint[], $2::int[], $3::int[], $4::text[], $5::text[], $6::text[], $7::float8[])
                      AS r(id, attempt, http_status, error, kind, reason, delay_ms)
                WHERE o.id = r.id AND o.attempts = r.attempt AND o.status = 'pending'`,
        values: [
          col((a) => a.row.id),
          col((a) => a.row.attempt),
          col((a) => a.httpStatus),
          col((a) => (a.step.kind === 'delivered' ? null : a.answer)),
          col((a) => a.step.kind),
          col((a) => (a.step.kind === 'park' ? a.step.reason : null)),
          col((a) => (a.step.kind === 'retry' ? a.step.delayMs : 0)),
        ],
      },
      history: {
        name: 'wo_attempts',
        // Once per row and request id: a record run again (a COMMIT whose outcome was unknown) adds
        // no line. After the rows' steps, whose row locks wait for a first run still committing, so
        // that this statement's snapshot sees that run's lines.
        text: `INSERT INTO wallet_delivery_attempts
                 (outbox_id, attempt, request_id, connector, started_at, duration_ms, outcome, http_status, answer)
               SELECT a.* FROM unnest($1::bigint[], $2::int[], $3::text[], $4::text[], $5::timestamptz[],
                                      $6::int[], $7::text[], $8::int[], $9::text[])
                        AS a(outbox_id, attempt, request_id, connector, started_at, duration_ms, outcome, http_status, answer)
                WHERE NOT EXISTS (SELECT 1 FROM wallet_delivery_attempts w
                                   WHERE w.outbox_id = a.outbox_id AND w.request_id = a.request_id)`,
        values: [
          col((a) => a.row.id),
          col((a) => a.row.attempt),
          col((a) => a.requestId),
          col((a) => a.connector),
          col((a) => a.startedAt.toISOString()),
          col((a) => a.durationMs),
          col((a) => a.outcome),
          col((a) => a.httpStatus),
          col((a) => a.answer),
        ],
      },
    };
    const flagged = attempts.filter(
      (a) =>
        a.step.kind === 'park' && a.step.reason !== 'retry_budget_exhausted' && a.row.couponCode !== null,
    );
    // A row that had flagged its coupon was parked, so it is delivered only after a retry.
    const ended = attempts.filter(
      (a) => a.step.kind === 'delivered' && a.row.retried && a.row.couponCode !== null,
    );
    const codes = [...flagged, ...ended].map((a) => a.row.couponCode as string);
    // Locked first in the batches' order (CouponRepository.lockStatement), then (un)flagged.
    if (codes.length) group.lockCoupons = this.coupons.lockStatement([...new Set(codes)]);
    if (flagged.length) {
      group.flag = {
        name: 'wo_flag_coupons',
        text: `UPDATE coupons c SET needs_review = true, review_reason = $3, updated_at = now()
                 FROM unnest($1::bigint[], $2::text[], $4::int[]) AS f(id, code, attempt)
                 JOIN wallet_outbox o ON o.id = f.id AND o.status = 'parked' AND o.attempts = f.attempt
                WHERE c.coupon_code = f.code AND NOT c.needs_review`,
        values: [
          flagged.map((a) => a.row.id),
          flagged.map((a) => a.row.couponCode),
          WALLET_REFUSED_REVIEW_REASON,
          flagged.map((a) => a.row.attempt),
        ],
      };
    }
    if (ended.length) group.unflag = this.unflagStatement(ended.map((a) => a.row.id));
    const pause = attempts.find((a) => a.step.kind === 'pause');
    if (pause?.step.kind === 'pause') group.pause = this.pauseStatement(true, pause.step.reason, null);
    return group;
  }

  /**
   * Stores the request bodies of rows at their first claim, before they are sent: every later
   * attempt sends these bytes (docs/wallet.md, "Byte-identical"). Never replaces a stored body.
   */
  bodiesStatement(rows: { id: string; body: Buffer }[]): Statement {
    return {
      name: 'wo_bodies',
      text: `UPDATE wallet_outbox o SET body = b.body
               FROM unnest($1::bigint[], $2::bytea[]) AS b(id, body)
              WHERE o.id = b.id AND o.body IS NULL`,
      values: [rows.map((r) => r.id), rows.map((r) => r.body)],
    };
  }

  /** Pauses (`paused`) or resumes all delivery, noting why and who (null: the receiver). */
  pauseStatement(paused: boolean, reason: string | null, actor: string | null): Statement {
    return {
      name: 'wo_pause',
      text: `UPDATE wallet_outbox_state SET paused = $1, reason = $2, changed_at = now(), changed_by = $3 WHERE id = 1`,
      values: [paused, reason, actor],
    };
  }

  /** The pause state. */
  async state(tx: Tx): Promise<WalletOutboxStateEntity> {
    return tx.manager.findOneByOrFail(WalletOutboxStateEntity, { id: 1 });
  }

  /** One page of rows of `status` (all when undefined), newest first, with ids below `before`. */
  list(
    tx: Tx,
    status: OutboxStatus | undefined,
    limit: number,
    before: string | undefined,
  ): Promise<WalletOutboxEntryEntity[]> {
    const where: FindOptionsWhere<WalletOutboxEntryEntity> = {};
    if (status) where.status = status;
    if (before) where.id = LessThan(before);
    return tx.manager.find(WalletOutboxEntryEntity, {
      where,
      order: { id: 'DESC' },
      take: limit,
      relations: { operation: true },
    });
  }

  /** One row with its operation, or null. */
  find(tx: Tx, id: string): Promise<WalletOutboxEntryEntity | null> {
    return tx.manager.findOne(WalletOutboxEntryEntity, { where: { id }, relations: { operation: true } });
  }

  /**
   * Locks a row `FOR UPDATE` for an operator action (waits for a worker recording an attempt).
   * @returns its status and whether a worker holds its lease now; undefined when there is no row.
   */
  async lockForAction(tx: Tx, id: string): Promise<{ status: OutboxStatus; leased: boolean } | undefined> {
    const { rows } = await tx.query<{ status: OutboxStatus; leased: boolean }>(
      `SELECT status, coalesce(leased_until > now(), false) AS leased FROM wallet_outbox WHERE id = $1 FOR UPDATE`,
      [id],
    );
    return rows[0];
  }

  /** Every attempt of a row, oldest first. */
  attemptsOf(tx: Tx, id: string): Promise<WalletDeliveryAttemptEntity[]> {
    return tx.manager.find(WalletDeliveryAttemptEntity, { where: { outboxId: id }, order: { id: 'ASC' } });
  }

  /** A parked row back to pending, due now, with a new retry budget; who asked. */
  async release(tx: Tx, id: string, actor: string): Promise<void> {
    await tx.query(
      `UPDATE wallet_outbox
          SET status = 'pending', parked_reason = NULL, parked_at = NULL, next_attempt_at = now(),
              retry_from = now(), retried_at = now(), retried_by = $2
        WHERE id = $1 AND status = 'parked'`,
      [id, actor],
    );
  }

  /**
   * A parked or pending row settled by hand in the wallet: skipped, with who and why; it keeps
   * the reason it was parked for. Its coupon loses the `wallet_refused` flag the row raised
   * ({@link unflagStatement}), in this transaction.
   */
  async skip(tx: Tx, id: string, actor: string, reason: string): Promise<void> {
    const { rows } = await tx.query<{ couponCode: string | null }>(
      `UPDATE wallet_outbox o
          SET status = 'skipped', leased_until = NULL, skipped_at = now(), skipped_by = $2, skip_reason = $3
         FROM financial_operations f
        WHERE o.id = $1 AND o.status IN ('pending', 'parked') AND f.id = o.operation_id
       RETURNING f.coupon_code AS "couponCode"`,
      [id, actor, reason],
    );
    const code = rows[0]?.couponCode;
    if (code)
      await tx.send({ lockCoupons: this.coupons.lockStatement([code]), unflag: this.unflagStatement([id]) });
  }

  /**
   * Ends the `wallet_refused` flag that rows `ids`, now delivered or skipped, raised on their
   * coupons (docs/wallet.md, "Operators"): only rows the wallet refused or answered a conflict
   * (an attempt says so), only while the coupon's review reason is still `wallet_refused` (a
   * reason the settlement set since is kept). The coupons must be locked by this transaction.
   */
  private unflagStatement(ids: string[]): Statement {
    return {
      name: 'wo_unflag_coupons',
      text: `UPDATE coupons c SET needs_review = false, review_reason = NULL, updated_at = now()
               FROM wallet_outbox o JOIN financial_operations f ON f.id = o.operation_id
              WHERE o.id = ANY($1::bigint[]) AND o.status IN ('delivered', 'skipped')
                AND c.coupon_code = f.coupon_code AND c.needs_review AND c.review_reason = $2
                AND EXISTS (SELECT 1 FROM wallet_delivery_attempts a
                             WHERE a.outbox_id = o.id AND a.outcome IN ('refused', 'conflict'))`,
      values: [ids, WALLET_REFUSED_REVIEW_REASON],
    };
  }

  /** The gauges' figures in one query over the partial indexes. */
  async counts(tx: Tx): Promise<OutboxCounts> {
    const { rows } = await tx.query<OutboxCounts>(
      `SELECT (SELECT count(*)::int FROM wallet_outbox WHERE status = 'pending') AS pending,
              (SELECT count(*)::int FROM wallet_outbox WHERE status = 'parked') AS parked,
              coalesce((SELECT extract(epoch FROM now() - min(created_at))::float8
                          FROM wallet_outbox WHERE status = 'pending'), 0) AS "oldestPendingAgeSeconds",
              (SELECT paused FROM wallet_outbox_state WHERE id = 1) AS paused`,
    );
    return rows[0];
  }

  /** Operations of `types` and their outbox rows, for `wallet:reconcile` (keyset by operation id). */
  async operationsOfTypes(
    tx: Tx,
    types: OperationType[],
    after: string,
    limit: number,
  ): Promise<(OutboxOperation & { id: string; outboxStatus: OutboxStatus | null })[]> {
    const { rows } = await tx.query<OutboxOperation & { id: string; outboxStatus: OutboxStatus | null }>(
      `SELECT f.id, f.operation_key AS "operationKey", f.type, f.account_id AS "accountId", f.amount::text AS amount,
              f.currency::text AS currency, f.coupon_code AS "couponCode", f.generation, f.batch_id AS "batchId",
              f.created_at AS "createdAt", o.status AS "outboxStatus"
         FROM financial_operations f LEFT JOIN wallet_outbox o ON o.operation_id = f.id
        WHERE f.type = ANY($1::text[]) AND f.id > $2::bigint
        ORDER BY f.id LIMIT $3`,
      [types, after, limit],
    );
    return rows;
  }
}
