import { Injectable } from '@nestjs/common';
import { Statement, StatementGroup, Tx } from '../../platform/database/transaction.js';

/** A found record, before its label and link are written. */
export type SearchHit = Record<string, unknown> & { kind: string };

/** At most this many hits per kind (a bet uuid may be in several coupons, a prefix match many accounts). */
export const HITS_PER_KIND = 10;

/**
 * The read-only probes of `GET /search` (docs/api.md#search): one statement per kind of record,
 * each an index probe (primary keys, `bets_uuid_idx`, the outboxes' `(operation_id, …)` unique indexes, `delivery_attempts_request_idx`,
 * `operator_actions_request_idx`, `wallet_delivery_attempts_request_idx`, the SP-GiST index of
 * account ids for the prefix), sent together in one round trip. Like the delivery audit, this read
 * side spans the tables of several modules.
 */
@Injectable()
export class SearchRepository {
  async probe(tx: Tx, text: string, rowId: string | null): Promise<SearchHit[]> {
    const group: StatementGroup = {
      batch: this.hit(
        `SELECT 'batch' AS kind, $1::text AS id, b.coupon_count AS "couponCount", b.received_at AS "committedAt",
                (SELECT count(*)::int FROM delivery_attempts d WHERE d.batch_id = $1) AS attempts,
                (SELECT count(*)::int FROM quarantined_bodies q WHERE q.batch_id = $1) AS quarantined
           FROM (SELECT 1) one LEFT JOIN callback_batches b ON b.batch_id = $1
          WHERE b.batch_id IS NOT NULL OR EXISTS (SELECT 1 FROM delivery_attempts d WHERE d.batch_id = $1)
             OR EXISTS (SELECT 1 FROM quarantined_bodies q WHERE q.batch_id = $1)
             OR EXISTS (SELECT 1 FROM callback_inbox i WHERE i.batch_id = $1)`,
        [text],
      ),
      coupon: this.hit(
        `SELECT 'coupon' AS kind, coupon_code AS id, account_id AS "accountId", status, currency,
                needs_review AS "needsReview", review_reason AS "reviewReason"
           FROM coupons WHERE coupon_code = $1`,
        [text],
      ),
      bet: this.hit(
        `SELECT 'bet' AS kind, uuid AS id, coupon_code AS "couponCode", status FROM bets WHERE uuid = $1
          ORDER BY coupon_code LIMIT ${HITS_PER_KIND}`,
        [text],
      ),
      account: this.hit(
        `(SELECT 'account' AS kind, id, balance::text AS balance, currency FROM accounts WHERE id = $1 AND kind = 'player')
         UNION ALL
         (SELECT 'account', id, balance::text, currency FROM accounts
           WHERE kind = 'player' AND id ^@ $1 AND id <> $1 ORDER BY id LIMIT ${HITS_PER_KIND - 1})`,
        [text],
      ),
      operation: this.hit(
        `SELECT 'operation' AS kind, operation_key AS id, type, amount::text AS amount, currency,
                account_id AS "accountId", coupon_code AS "couponCode", batch_id AS "batchId"
           FROM financial_operations WHERE operation_key = $1`,
        [text],
      ),
      delivery: this.hit(
        `SELECT 'delivery' AS kind, id::text AS id, batch_id AS "batchId", outcome, http_status AS "httpStatus",
                received_at AS "receivedAt"
           FROM delivery_attempts WHERE request_id = $1 ORDER BY delivery_attempts.id DESC LIMIT ${HITS_PER_KIND}`,
        [text],
      ),
      action: this.hit(
        `SELECT 'operator_action' AS kind, id::text AS id, actor, action, outcome, target_kind AS "targetKind",
                target_id AS "targetId"
           FROM operator_actions WHERE request_id = $1 ORDER BY operator_actions.id DESC LIMIT ${HITS_PER_KIND}`,
        [text],
      ),
      walletAttempt: this.hit(
        `SELECT 'wallet_attempt' AS kind, id::text AS id, outbox_id::text AS "outboxId", attempt, outcome,
                http_status AS "httpStatus"
           FROM wallet_delivery_attempts WHERE request_id = $1 ORDER BY wallet_delivery_attempts.id DESC LIMIT ${HITS_PER_KIND}`,
        [text],
      ),
      outbox: this.hit(
        `SELECT o.kind, o.id::text AS id, o.publisher, o.status, o.parked_reason AS "parkedReason",
                o.operation_key AS "operationKey", o.account_id AS "accountId"
           FROM (SELECT 'outbox' AS kind, NULL::text AS publisher, w.id, w.status, w.parked_reason, w.operation_key,
                        w.account_id
                   FROM wallet_outbox w
                  WHERE w.id = $2::bigint OR w.operation_id = (SELECT id FROM financial_operations WHERE operation_key = $1)
                 UNION ALL
                 SELECT 'event_outbox', e.publisher, e.id, e.status, e.parked_reason, e.operation_key, e.account_id
                   FROM event_outbox e
                  WHERE e.id = $2::bigint OR e.operation_id = (SELECT id FROM financial_operations WHERE operation_key = $1)
                ) o
          ORDER BY o.kind DESC, o.publisher, o.id LIMIT ${HITS_PER_KIND}`,
        [text, rowId],
      ),
    };
    if (rowId !== null) {
      group.quarantine = this.hit(
        `SELECT 'quarantine' AS kind, id::text AS id, batch_id AS "batchId", reason, replay_outcome AS "replayOutcome"
           FROM quarantined_bodies WHERE id = $1`,
        [rowId],
      );
      group.inbox = this.hit(
        `SELECT 'inbox' AS kind, id::text AS id, batch_id AS "batchId", status FROM callback_inbox WHERE id = $1`,
        [rowId],
      );
    }
    const results = await tx.send(group);
    return Object.values(results).flatMap((r) => r.rows as SearchHit[]);
  }

  private hit(text: string, values: unknown[]): Statement<SearchHit> {
    return { text, values };
  }
}
