import { CouponRepository } from '../../core/coupons/coupon.repository.js';
import { Statement, StatementGroup, Tx } from '../../platform/database/transaction.js';
import { OperationType } from '../../core/ledger/ledger.types.js';
import { TRACEPARENT_SETTING } from '../../platform/database/transaction.js';
import type { OutboxStep } from './outbox-rules.js';
import type {
  AttemptOutcome,
  OutboxDestination,
  OutboxOperation,
  OutboxStatus,
  ParkReason,
} from './outbox.types.js';

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
  /** W3C trace context of the transaction that wrote the row (tracing on then), else null. */
  traceparent: string | null;
}

/** One attempt to record with its row's next step (its number is `row.attempt`). */
export interface RecordedAttempt extends Omit<OutboxAttemptView, 'attempt' | 'traceId'> {
  row: ClaimedOutboxRow;
  step: OutboxStep;
  /** The attempt's trace id (32 hex) when tracing was on. */
  traceId?: string | null;
}

/** An outbox row as operators see it, with its ledger operation. */
export interface OutboxRowView extends OutboxOperation {
  id: string;
  status: OutboxStatus;
  attempts: number;
  nextAttemptAt: Date;
  leasedUntil: Date | null;
  body: Buffer | null;
  lastStatus: number | null;
  lastError: string | null;
  parkedReason: ParkReason | null;
  createdAt: Date;
  queuedAt: Date;
  deliveredAt: Date | null;
  parkedAt: Date | null;
  skippedAt: Date | null;
  skippedBy: string | null;
  skipReason: string | null;
  retriedAt: Date | null;
  retriedBy: string | null;
  /** A pending row behind its account's parked row: that row's id (a parked row holds back the rest). */
  heldBy: string | null;
}

/** One recorded attempt of a row, oldest first. */
export interface OutboxAttemptView {
  attempt: number;
  requestId: string;
  /** The deliverer's name: the wallet connector's, the event publisher's. */
  connector: string;
  startedAt: Date;
  durationMs: number;
  outcome: AttemptOutcome;
  httpStatus: number | null;
  /** Excerpt of the wallet's answer or of the error (at most 500 characters). */
  answer: string | null;
  /** The attempt's OpenTelemetry trace id (32 hex) when tracing was on, else null (issue 41). */
  traceId: string | null;
}

/** The pause state of a destination. */
export interface OutboxPauseState {
  paused: boolean;
  reason: string | null;
  /** null: never paused (a publisher's state row comes with its first pause). */
  changedAt: Date | null;
  changedBy: string | null;
}

/** What the outbox gauges read at scrape time. */
export interface OutboxCounts {
  pending: number;
  parked: number;
  oldestPendingAgeSeconds: number;
  /** Pending rows due now (`next_attempt_at` passed, not leased): work a worker should have claimed. */
  pastDue: number;
  /** Seconds since the most overdue of them became due (0 when none). */
  oldestPastDueSeconds: number;
  /** Seconds since the oldest parked row was parked (0 when none). */
  oldestParkedAgeSeconds: number;
  paused: boolean;
}

/** Columns of an outbox row as {@link OutboxRowView} (alias `o`) with its operation (alias `f`). */
const ROW_VIEW = `o.id, o.status, o.attempts, o.next_attempt_at AS "nextAttemptAt", o.leased_until AS "leasedUntil",
  o.body, o.last_status AS "lastStatus", o.last_error AS "lastError", o.parked_reason AS "parkedReason",
  o.created_at AS "queuedAt", o.delivered_at AS "deliveredAt", o.parked_at AS "parkedAt", o.skipped_at AS "skippedAt",
  o.skipped_by AS "skippedBy", o.skip_reason AS "skipReason", o.retried_at AS "retriedAt", o.retried_by AS "retriedBy",
  f.operation_key AS "operationKey", f.type, f.account_id AS "accountId", f.amount::text AS amount,
  f.currency::text AS currency, f.coupon_code AS "couponCode", f.generation, f.batch_id AS "batchId",
  f.created_at AS "createdAt"`;

/**
 * SQL condition: row `alias` has `status`, written so that no partial index's predicate follows from
 * it. A statement that finds its rows by id then reads them by the primary key: the partial indexes
 * of open rows, analysed while they were small (a quiet hour, or an empty table), look free to scan
 * whole, and were scanned whole at every record once a backlog grew (issue 40).
 */
const BY_PRIMARY_KEY = (alias: string, status: OutboxStatus) => `${alias}.status || '' = '${status}'`;

/**
 * The SQL of one outbox destination (docs/wallet.md; docs/extending.md, "Outboxes"): the one
 * writer of its tables. The posting statement inserts its rows through {@link insertSql}; claims,
 * attempts, operator actions and the pause state are here. Every statement is limited to the
 * destination's rows (`scope`) and named with its prefix.
 */
export class OutboxRepository {
  private readonly t: OutboxDestination['tables'];
  private readonly p: string;

  constructor(
    readonly destination: OutboxDestination,
    private readonly coupons: CouponRepository,
  ) {
    this.t = destination.tables;
    this.p = destination.statementPrefix;
  }

  /** SQL condition: the row `alias` of the outbox table is this destination's. */
  private mine(alias: string): string {
    const scope = this.destination.scope;
    return scope ? `${alias}.${scope.column} = '${scope.value}'` : 'TRUE';
  }

  /** SQL condition on the state table: this destination's row. */
  private get stateRow(): string {
    const scope = this.destination.scope;
    return scope ? `${scope.column} = '${scope.value}'` : 'id = 1';
  }

  /**
   * The body of a data-modifying CTE of the posting statement (`LedgerRepository.postingStatement`)
   * that writes a row for each operation it inserted now (the CTE `inserted`: id, operation_key,
   * type, account_id) of the destination's types, in id order: the message is written with the
   * money or not at all. Empty when the destination takes no type.
   */
  insertSql(inserted: string): string {
    const types = this.destination.operationTypes;
    if (!types.length) return '';
    const scope = this.destination.scope;
    // The transaction's trace context, set by Tx only while tracing is on (TRACEPARENT_SETTING).
    return `INSERT INTO ${this.t.outbox} (operation_id, operation_key, account_id, traceparent${scope ? `, ${scope.column}` : ''})
               SELECT id, operation_key, account_id, nullif(current_setting('${TRACEPARENT_SETTING}', true), '')${scope ? `, '${scope.value}'` : ''} FROM ${inserted}
                WHERE type IN (${types.map((t) => `'${t}'`).join(', ')}) ORDER BY id`;
  }

  /**
   * Claims up to `limit` due pending rows whose account has no earlier pending or parked row (each
   * its account's *head*, so no two of one account: an account's rows go out in order, other
   * accounts in parallel), the oldest such heads first, unless delivery is paused: leases them for
   * `leaseMs` and counts the attempt, in one statement (`FOR UPDATE SKIP LOCKED`: claimers never
   * wait for each other). A lease that runs out (a crashed worker) makes the row due again. Cost:
   * the 64 oldest pending rows usually hold a due head; when they do not (one account's long
   * backlog whose head is in flight, parked or waiting to be retried), one index probe per account
   * with open rows finds the heads, rather than one per row (docs/wallet.md, "Claim cost").
   * Every part is an index step or probe whatever the statistics say: a generic plan (or
   * statistics) made while the table was small once scanned and sorted every pending row at every
   * claim (issue 40; {@link recordStatements}).
   */
  claimStatement(leaseMs: number, limit: number): Statement<ClaimedOutboxRow> {
    const { outbox, state } = this.t;
    // The account's head: a min() over the open-rows index, which every PostgreSQL plans as one
    // index probe reading one row (a NOT EXISTS may become a bitmap scan of all earlier rows).
    const head = (r: string) =>
      `(SELECT min(e.id) FROM ${outbox} e WHERE ${this.mine('e')} AND e.account_id = ${r}.account_id AND e.status IN ('pending', 'parked'))`;
    const due = (r: string) =>
      `${r}.status = 'pending' AND ${r}.next_attempt_at <= now() AND (${r}.leased_until IS NULL OR ${r}.leased_until <= now())`;
    return {
      name: `${this.p}_claim`,
      text: `WITH RECURSIVE running AS MATERIALIZED (
               -- No state row yet (a publisher named for the first time): not paused.
               SELECT coalesce((SELECT NOT paused FROM ${state} WHERE ${this.stateRow}), true) AS yes
             ), walk AS (
               -- The 64 oldest pending rows, one index step at a time: a plain ORDER BY id LIMIT 64
               -- was planned as a sort of every pending row when the statistics called them few.
               (SELECT id, account_id, status, next_attempt_at, leased_until, 1 AS n FROM ${outbox} w
                 WHERE ${this.mine('w')} AND status = 'pending' AND (SELECT yes FROM running)
                 ORDER BY id LIMIT 1)
               UNION ALL
               SELECT x.*, p.n + 1 FROM walk p CROSS JOIN LATERAL (
                 SELECT w.id, w.account_id, w.status, w.next_attempt_at, w.leased_until FROM ${outbox} w
                  WHERE ${this.mine('w')} AND w.status = 'pending' AND w.id > p.id
                  ORDER BY w.id LIMIT 1) x
                WHERE p.n < 64
             ), oldest AS MATERIALIZED (
               SELECT id, account_id, status, next_attempt_at, leased_until FROM walk
             ), quick AS MATERIALIZED (
               SELECT w.id FROM oldest w
                WHERE ${due('w')} AND w.id = ${head('w')}
             ), heads AS (
               (SELECT account_id, id, status, next_attempt_at, leased_until FROM ${outbox} w
                 WHERE ${this.mine('w')} AND status IN ('pending', 'parked') AND (SELECT yes FROM running) AND NOT EXISTS (SELECT 1 FROM quick)
                 ORDER BY account_id, id LIMIT 1)
               UNION ALL
               SELECT n.* FROM heads h CROSS JOIN LATERAL (
                 SELECT e.account_id, e.id, e.status, e.next_attempt_at, e.leased_until FROM ${outbox} e
                  WHERE ${this.mine('e')} AND e.status IN ('pending', 'parked') AND e.account_id > h.account_id
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
                 SELECT o.id FROM ${outbox} o
                  WHERE o.id = c.id AND ${due('o')} AND o.id = ${head('o')}
                  FOR UPDATE OF o SKIP LOCKED) o
               ORDER BY c.id
               LIMIT $2
             )
             UPDATE ${outbox} o
                SET attempts = o.attempts + 1, leased_until = now() + make_interval(secs => $1::double precision / 1000)
               FROM next, financial_operations f
              WHERE o.id = next.id AND f.id = o.operation_id
             RETURNING o.id, o.attempts AS attempt, o.body, o.retry_from AS "retryFrom",
                       o.retried_at IS NOT NULL AS retried, o.traceparent,
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
   * claim's size. With a `flagReason` (the wallet), the coupons of rows this record parked as
   * refused or conflict are flagged `needs_review` unless already flagged for another reason,
   * which they keep; those of retried rows it delivered lose the flag ({@link unflagStatement}).
   * Both locked first in the order batches lock coupons in (no deadlock with a batch); a pause step
   * pauses all delivery of the destination. Committed without waiting for the WAL flush
   * (`synchronous_commit = off`): a record lost in a crash of PostgreSQL leaves its rows pending
   * under their leases, delivered again later with the stored bytes and answered as repeats.
   * Its statements are unnamed (planned at each record from the table's size then, as the claim
   * and the bodies) and find their rows by the primary key ({@link BY_PRIMARY_KEY}): a generic plan
   * made while the outbox was small, or statistics taken then, scanned a whole index of pending
   * rows (or every attempt) at every record once a backlog grew, so that a growing backlog made
   * every record slower (issue 40; docs/architecture.md, "Generic plans").
   */
  recordStatements(attempts: RecordedAttempt[]): StatementGroup {
    const { outbox, attempts: history } = this.t;
    const col = <T>(f: (a: RecordedAttempt) => T) => attempts.map(f);
    const group: StatementGroup = {
      asyncCommit: { text: "SELECT set_config('synchronous_commit', 'off', true)" },
      steps: {
        text: `UPDATE ${outbox} o
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
                WHERE o.id = r.id AND o.id = ANY ($1::bigint[]) AND o.attempts = r.attempt AND ${BY_PRIMARY_KEY('o', 'pending')}`,
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
        // Once per row and request id: a record run again (a COMMIT whose outcome was unknown) adds
        // no line; one still committing is waited for by the unique index.
        text: `INSERT INTO ${history}
                 (outbox_id, attempt, request_id, connector, started_at, duration_ms, outcome, http_status, answer, trace_id)
               SELECT a.* FROM unnest($1::bigint[], $2::int[], $3::text[], $4::text[], $5::timestamptz[],
                                      $6::int[], $7::text[], $8::int[], $9::text[], $10::char(32)[])
                        AS a(outbox_id, attempt, request_id, connector, started_at, duration_ms, outcome, http_status, answer, trace_id)
               ON CONFLICT (outbox_id, request_id, started_at) DO NOTHING`,
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
          col((a) => a.traceId ?? null),
        ],
      },
    };
    const flagReason = this.destination.flagReason;
    const flagged = flagReason
      ? attempts.filter(
          (a) =>
            a.step.kind === 'park' && a.step.reason !== 'retry_budget_exhausted' && a.row.couponCode !== null,
        )
      : [];
    // A row that had flagged its coupon was parked, so it is delivered only after a retry.
    const ended = flagReason
      ? attempts.filter((a) => a.step.kind === 'delivered' && a.row.retried && a.row.couponCode !== null)
      : [];
    const codes = [...flagged, ...ended].map((a) => a.row.couponCode as string);
    // Locked first in the batches' order (CouponRepository.lockStatement), then (un)flagged.
    if (codes.length) group.lockCoupons = this.coupons.lockStatement([...new Set(codes)]);
    if (flagged.length) {
      group.flag = {
        text: `UPDATE coupons c SET needs_review = true, review_reason = $3, updated_at = now()
                 FROM unnest($1::bigint[], $2::text[], $4::int[]) AS f(id, code, attempt)
                 JOIN ${outbox} o ON o.id = f.id AND o.id = ANY ($1::bigint[]) AND ${BY_PRIMARY_KEY('o', 'parked')} AND o.attempts = f.attempt
                WHERE c.coupon_code = f.code AND c.coupon_code = ANY ($2::text[]) AND NOT c.needs_review`,
        values: [
          flagged.map((a) => a.row.id),
          flagged.map((a) => a.row.couponCode),
          flagReason,
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
   * Stores the message bodies of rows at their first claim, before they are sent: every later
   * attempt sends these bytes (docs/wallet.md, "Byte-identical"). Never replaces a stored body.
   * Unnamed ({@link recordStatements}).
   */
  bodiesStatement(rows: { id: string; body: Buffer }[]): Statement {
    return {
      text: `UPDATE ${this.t.outbox} o SET body = b.body
               FROM unnest($1::bigint[], $2::bytea[]) AS b(id, body)
              WHERE o.id = b.id AND o.id = ANY ($1::bigint[]) AND o.body IS NULL`,
      values: [rows.map((r) => r.id), rows.map((r) => r.body)],
    };
  }

  /** Pauses (`paused`) or resumes all delivery of the destination, noting why and who (null: the receiver). */
  pauseStatement(paused: boolean, reason: string | null, actor: string | null): Statement {
    const scope = this.destination.scope;
    return {
      name: `${this.p}_pause`,
      // A destination sharing a table has its state row from its first pause on.
      text: scope
        ? `INSERT INTO ${this.t.state} (${scope.column}, paused, reason, changed_at, changed_by)
           VALUES ('${scope.value}', $1, $2, now(), $3)
           ON CONFLICT (${scope.column}) DO UPDATE
             SET paused = EXCLUDED.paused, reason = EXCLUDED.reason, changed_at = now(), changed_by = EXCLUDED.changed_by`
        : `UPDATE ${this.t.state} SET paused = $1, reason = $2, changed_at = now(), changed_by = $3 WHERE ${this.stateRow}`,
      values: [paused, reason, actor],
    };
  }

  /** The pause state. */
  async state(tx: Tx): Promise<OutboxPauseState> {
    const { rows } = await tx.query<OutboxPauseState>(
      `SELECT paused, reason, changed_at AS "changedAt", changed_by AS "changedBy" FROM ${this.t.state} WHERE ${this.stateRow}`,
    );
    return rows[0] ?? { paused: false, reason: null, changedAt: null, changedBy: null };
  }

  /**
   * {@link ROW_VIEW} and `heldBy`: for a pending row, the oldest parked row of its account before
   * it, which holds it back until an operator retries or skips it (docs/wallet.md); one probe of
   * the open-rows index per pending row shown.
   */
  private get rowView(): string {
    return `${ROW_VIEW}, CASE WHEN o.status = 'pending' THEN (SELECT min(h.id)::text FROM ${this.t.outbox} h
      WHERE ${this.mine('h')} AND h.account_id = o.account_id AND h.status = 'parked' AND h.id < o.id) END AS "heldBy"`;
  }

  /** One page of rows of `status` (all when undefined), newest first, with ids below `before`. */
  async list(
    tx: Tx,
    status: OutboxStatus | undefined,
    limit: number,
    before: string | undefined,
  ): Promise<OutboxRowView[]> {
    const { rows } = await tx.query<OutboxRowView>(
      `SELECT ${this.rowView} FROM ${this.t.outbox} o JOIN financial_operations f ON f.id = o.operation_id
        WHERE ${this.mine('o')} AND ($1::text IS NULL OR o.status = $1) AND ($2::bigint IS NULL OR o.id < $2::bigint)
        ORDER BY o.id DESC LIMIT $3`,
      [status ?? null, before ?? null, limit],
    );
    return rows;
  }

  /** One row with its operation, or undefined. */
  async find(tx: Tx, id: string): Promise<OutboxRowView | undefined> {
    const { rows } = await tx.query<OutboxRowView>(
      `SELECT ${this.rowView} FROM ${this.t.outbox} o JOIN financial_operations f ON f.id = o.operation_id
        WHERE o.id = $1 AND ${this.mine('o')}`,
      [id],
    );
    return rows[0];
  }

  /**
   * Locks a row `FOR UPDATE` for an operator action (waits for a worker recording an attempt).
   * @returns its status and whether a worker holds its lease now; undefined when there is no row.
   */
  async lockForAction(tx: Tx, id: string): Promise<{ status: OutboxStatus; leased: boolean } | undefined> {
    const { rows } = await tx.query<{ status: OutboxStatus; leased: boolean }>(
      `SELECT status, coalesce(leased_until > now(), false) AS leased FROM ${this.t.outbox} o
        WHERE id = $1 AND ${this.mine('o')} FOR UPDATE`,
      [id],
    );
    return rows[0];
  }

  /** Every attempt of a row, oldest first. */
  async attemptsOf(tx: Tx, id: string): Promise<OutboxAttemptView[]> {
    const { rows } = await tx.query<OutboxAttemptView>(
      `SELECT attempt, request_id AS "requestId", connector, started_at AS "startedAt", duration_ms AS "durationMs",
              outcome, http_status AS "httpStatus", answer, trace_id AS "traceId"
         FROM ${this.t.attempts} WHERE outbox_id = $1 ORDER BY id`,
      [id],
    );
    return rows;
  }

  /** A parked row back to pending, due now, with a new retry budget; who asked. */
  async release(tx: Tx, id: string, actor: string): Promise<void> {
    await tx.query(
      `UPDATE ${this.t.outbox}
          SET status = 'pending', parked_reason = NULL, parked_at = NULL, next_attempt_at = now(),
              retry_from = now(), retried_at = now(), retried_by = $2
        WHERE id = $1 AND status = 'parked'`,
      [id, actor],
    );
  }

  /**
   * A parked or pending row settled by hand: skipped, with who and why; it keeps the reason it was
   * parked for. Its coupon loses the flag the row raised ({@link unflagStatement}), in this
   * transaction.
   */
  async skip(tx: Tx, id: string, actor: string, reason: string): Promise<void> {
    const { rows } = await tx.query<{ couponCode: string | null }>(
      `UPDATE ${this.t.outbox} o
          SET status = 'skipped', leased_until = NULL, skipped_at = now(), skipped_by = $2, skip_reason = $3
         FROM financial_operations f
        WHERE o.id = $1 AND o.status IN ('pending', 'parked') AND f.id = o.operation_id
       RETURNING f.coupon_code AS "couponCode"`,
      [id, actor, reason],
    );
    const code = rows[0]?.couponCode;
    if (code && this.destination.flagReason)
      await tx.send({ lockCoupons: this.coupons.lockStatement([code]), unflag: this.unflagStatement([id]) });
  }

  /**
   * Ends the flag that rows `ids`, now delivered or skipped, raised on their coupons
   * (docs/wallet.md, "Operators"): only rows the destination refused or answered a conflict (an
   * attempt says so), only while the coupon's review reason is still the destination's (a reason
   * the settlement set since is kept). The coupons must be locked by this transaction.
   */
  private unflagStatement(ids: string[]): Statement {
    return {
      text: `UPDATE coupons c SET needs_review = false, review_reason = NULL, updated_at = now()
               FROM ${this.t.outbox} o JOIN financial_operations f ON f.id = o.operation_id
              WHERE o.id = ANY($1::bigint[]) AND o.status IN ('delivered', 'skipped')
                AND c.coupon_code = f.coupon_code AND c.needs_review AND c.review_reason = $2
                AND EXISTS (SELECT 1 FROM ${this.t.attempts} a
                             WHERE a.outbox_id = o.id AND a.outcome IN ('refused', 'conflict'))`,
      values: [ids, this.destination.flagReason],
    };
  }

  /**
   * The gauges' figures in one query over the partial indexes: the pending rows are read once (the
   * past-due figures use the claim's notion of due), the parked ones once.
   */
  async counts(tx: Tx): Promise<OutboxCounts> {
    const { outbox, state } = this.t;
    const due = `next_attempt_at <= now() AND (leased_until IS NULL OR leased_until <= now())`;
    const { rows } = await tx.query<OutboxCounts>(
      `SELECT p.pending, p."pastDue", p."oldestPendingAgeSeconds", p."oldestPastDueSeconds",
              k.parked, k."oldestParkedAgeSeconds",
              coalesce((SELECT paused FROM ${state} WHERE ${this.stateRow}), false) AS paused
         FROM (SELECT count(*)::int AS pending, (count(*) FILTER (WHERE ${due}))::int AS "pastDue",
                      coalesce(extract(epoch FROM now() - min(created_at))::float8, 0) AS "oldestPendingAgeSeconds",
                      coalesce(extract(epoch FROM now() - min(next_attempt_at) FILTER (WHERE ${due}))::float8, 0)
                        AS "oldestPastDueSeconds"
                 FROM ${outbox} o WHERE ${this.mine('o')} AND status = 'pending') p,
              (SELECT count(*)::int AS parked,
                      coalesce(extract(epoch FROM now() - min(parked_at))::float8, 0) AS "oldestParkedAgeSeconds"
                 FROM ${outbox} o WHERE ${this.mine('o')} AND status = 'parked') k`,
    );
    return rows[0];
  }

  /** Operations of `types` and the destination's rows of them (keyset by operation id): reconcilers. */
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
         FROM financial_operations f LEFT JOIN ${this.t.outbox} o ON o.operation_id = f.id AND ${this.mine('o')}
        WHERE f.type = ANY($1::text[]) AND f.id > $2::bigint
        ORDER BY f.id LIMIT $3`,
      [types, after, limit],
    );
    return rows;
  }
}
