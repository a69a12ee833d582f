import { Injectable } from '@nestjs/common';
import { Statement, Tx } from '../../platform/database/transaction.js';

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

/** Bytes of the body shown in the quarantine list (`bodyPreview`). */
export const BODY_PREVIEW_BYTES = 256;

/** A quarantine row without its body (list and replay answers). */
export interface QuarantineSummary {
  id: string;
  batchId: string | null;
  reason: string;
  details: unknown;
  httpStatus: number;
  contentType: string | null;
  payloadHash: string;
  receivedAt: Date;
  bodyBytes: number;
  /** The first {@link BODY_PREVIEW_BYTES} bytes as UTF-8 (invalid sequences as U+FFFD). */
  bodyPreview: string;
  replayedAt: Date | null;
  replayOutcome: string | null;
  replayCount: number;
  inboxId: string | null;
  /** Name of the partner API key of the last replay. */
  replayedBy: string | null;
}

/** Columns of a row as {@link QuarantineSummary}, `bodyPreview` still bytes ({@link toSummary}). */
const SUMMARY_COLUMNS = `id, batch_id AS "batchId", reason, details, http_status AS "httpStatus",
  content_type AS "contentType", payload_hash AS "payloadHash", received_at AS "receivedAt",
  octet_length(body) AS "bodyBytes", substring(body FROM 1 FOR ${BODY_PREVIEW_BYTES}) AS "bodyPreview",
  replayed_at AS "replayedAt", replay_outcome AS "replayOutcome", replay_count AS "replayCount",
  inbox_id AS "inboxId", replayed_by AS "replayedBy"`;

/** A row of {@link SUMMARY_COLUMNS}. */
type SummaryRow = Omit<QuarantineSummary, 'bodyPreview'> & { bodyPreview: Buffer };

/** The summary of a row: its preview's bytes as UTF-8 (invalid sequences as U+FFFD). */
function toSummary(r: SummaryRow): QuarantineSummary {
  return { ...r, bodyPreview: r.bodyPreview.toString('utf8') };
}

/** SQL of `quarantined_bodies` for the quarantine endpoints (CONTRACT §8). */
@Injectable()
export class QuarantineRepository {
  /** Keeps a refused signed body verbatim (the callback's filter, with its delivery attempt). */
  insertStatement(q: QuarantineRow): Statement {
    return {
      name: 'qb_insert',
      text: `INSERT INTO quarantined_bodies (batch_id, reason, details, http_status, body, content_type, payload_hash)
             VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      values: [
        q.batchId,
        q.reason,
        q.details === undefined ? null : JSON.stringify(q.details),
        q.httpStatus,
        q.body,
        q.contentType,
        q.payloadHash,
      ],
    };
  }

  /** The quarantine gauges' figures: rows not replayed and the oldest one's age, over the unreplayed index. */
  async notReplayed(tx: Tx): Promise<{ count: number; oldestAgeSeconds: number }> {
    const { rows } = await tx.query<{ count: number; oldestAgeSeconds: number }>(
      `SELECT count(*)::int AS count,
              coalesce(extract(epoch FROM now() - min(received_at))::float8, 0) AS "oldestAgeSeconds"
         FROM quarantined_bodies WHERE replayed_at IS NULL`,
    );
    return rows[0];
  }

  /** Newest first: at most `limit` rows with an id below `before` (keyset pagination). */
  async list(tx: Tx, limit: number, before: string | undefined): Promise<QuarantineSummary[]> {
    const { rows } = await tx.query<SummaryRow>(
      `SELECT ${SUMMARY_COLUMNS} FROM quarantined_bodies
        WHERE ($2::bigint IS NULL OR id < $2::bigint)
        ORDER BY id DESC LIMIT $1`,
      [limit, before ?? null],
    );
    return rows.map(toSummary);
  }

  /** One row with its body, locked `FOR UPDATE` when `lock` (replays of one row run one at a time). */
  async find(tx: Tx, id: string, lock = false): Promise<(QuarantineSummary & { body: Buffer }) | undefined> {
    const { rows } = await tx.query<SummaryRow & { body: Buffer }>(
      `SELECT ${SUMMARY_COLUMNS}, body FROM quarantined_bodies WHERE id = $1${lock ? ' FOR UPDATE' : ''}`,
      [id],
    );
    return rows[0] && { ...toSummary(rows[0]), body: rows[0].body };
  }

  /** Records one replay: time, outcome, count, the key's name. @returns the updated row. */
  async recordReplay(tx: Tx, id: string, outcome: string, actor: string): Promise<QuarantineSummary> {
    const { rows } = await tx.query<SummaryRow>(
      `UPDATE quarantined_bodies
          SET replayed_at = now(), replay_outcome = $2, replay_count = replay_count + 1, replayed_by = $3
        WHERE id = $1
        RETURNING ${SUMMARY_COLUMNS}`,
      [id, outcome, actor],
    );
    return toSummary(rows[0]);
  }
}
