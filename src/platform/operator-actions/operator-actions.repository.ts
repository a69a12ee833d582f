import { Injectable } from '@nestjs/common';
import { Statement, Tx } from '../database/transaction.js';

/** A row of `operator_actions` to write. */
export interface OperatorActionRow {
  actor: string;
  action: string;
  targetKind: string | null;
  targetId: string | null;
  reason: string | null;
  requestId: string | null;
  /** The client address of the request (`clientAddressOf`); null for a bulk action's row. */
  clientAddress: string | null;
  /** `ok`, or the error code the action was refused with. */
  outcome: string;
  details: Record<string, unknown>;
}

/** A stored operator action (bigint id as a string; `at` with microseconds as ISO 8601 text). */
export interface StoredOperatorAction extends OperatorActionRow {
  id: string;
  at: Date;
}

/** Filters of {@link OperatorActionsRepository.list}; `before` is an id (keyset pagination). */
export interface OperatorActionFilter {
  actor?: string;
  action?: string;
  targetKind?: string;
  targetId?: string;
  from?: Date;
  to?: Date;
  before?: string;
  limit: number;
}

/** The SQL of `operator_actions` (append-only): the one writer every action goes through, and the list. */
@Injectable()
export class OperatorActionsRepository {
  /** The insert of one action, for the action's own transaction (its group, or alone). */
  insertStatement(row: OperatorActionRow): Statement {
    return {
      name: 'oa_insert',
      text: `INSERT INTO operator_actions (actor, action, target_kind, target_id, reason, request_id, client_address,
                                           outcome, details)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      values: [
        row.actor,
        row.action,
        row.targetKind,
        row.targetId,
        row.reason,
        row.requestId,
        row.clientAddress,
        row.outcome,
        JSON.stringify(row.details),
      ],
    };
  }

  async insert(tx: Tx, row: OperatorActionRow): Promise<void> {
    await tx.send({ action: this.insertStatement(row) });
  }

  /** Newest first (by id), at most `limit` rows matching `filter`. */
  async list(tx: Tx, f: OperatorActionFilter): Promise<StoredOperatorAction[]> {
    const { rows } = await tx.query<StoredOperatorAction>(
      `SELECT id::text, at, actor, action, target_kind AS "targetKind", target_id AS "targetId", reason,
              request_id AS "requestId", client_address AS "clientAddress", outcome, details
         FROM operator_actions
        WHERE ($1::text IS NULL OR actor = $1) AND ($2::text IS NULL OR action = $2)
          AND ($3::text IS NULL OR target_kind = $3) AND ($4::text IS NULL OR target_id = $4)
          AND ($5::timestamptz IS NULL OR at >= $5) AND ($6::timestamptz IS NULL OR at < $6)
          AND ($7::bigint IS NULL OR id < $7)
        ORDER BY operator_actions.id DESC LIMIT $8`,
      [
        f.actor ?? null,
        f.action ?? null,
        f.targetKind ?? null,
        f.targetId ?? null,
        f.from ?? null,
        f.to ?? null,
        f.before ?? null,
        f.limit,
      ],
    );
    return rows;
  }
}
