import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

/** A delivery attempt row as read (bigint id as a string). */
export interface AttemptRecord {
  id: string;
  batchId: string | null;
  requestId: string | null;
  receivedAt: Date;
  outcome: string;
  httpStatus: number;
  errorCode: string | null;
  couponCount: number | null;
  durationMs: number;
  payloadHash: string | null;
}

/** Filters of {@link AuditRepository.deliveries}; `before` is an id (keyset pagination). */
export interface AttemptFilter {
  outcome?: string;
  batchId?: string;
  from?: Date;
  to?: Date;
  before?: string;
  limit: number;
}

const ATTEMPT_COLUMNS = `id::text AS "id", batch_id AS "batchId", request_id AS "requestId", received_at AS "receivedAt",
  outcome, http_status AS "httpStatus", error_code AS "errorCode", coupon_count AS "couponCount",
  duration_ms AS "durationMs", payload_hash AS "payloadHash"`;

/** Read-only SQL of the delivery audit (CONTRACT §8): batches, snapshots, operations, attempts. */
@Injectable()
export class AuditRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async batch(
    batchId: string,
  ): Promise<{ payloadHash: string; couponCount: number; receivedAt: Date } | undefined> {
    const rows = (await this.dataSource.query(
      `SELECT payload_hash AS "payloadHash", coupon_count AS "couponCount", received_at AS "receivedAt"
       FROM callback_batches WHERE batch_id = $1`,
      [batchId],
    )) as { payloadHash: string; couponCount: number; receivedAt: Date }[];
    return rows[0];
  }

  snapshots(batchId: string): Promise<
    {
      couponCode: string;
      status: number;
      realWin: string | null;
      applied: boolean;
      transition: string;
      generation: number;
    }[]
  > {
    return this.dataSource.query(
      `SELECT coupon_code AS "couponCode", status, real_win::text AS "realWin", applied, transition, generation
       FROM coupon_snapshots WHERE batch_id = $1 ORDER BY coupon_code`,
      [batchId],
    );
  }

  operations(batchId: string): Promise<
    {
      key: string;
      type: string;
      couponCode: string | null;
      accountId: string;
      amount: string;
      currency: string;
      createdAt: Date;
    }[]
  > {
    return this.dataSource.query(
      `SELECT operation_key AS "key", type, coupon_code AS "couponCode", account_id AS "accountId",
              amount::text AS "amount", currency, created_at AS "createdAt"
       FROM financial_operations WHERE batch_id = $1 ORDER BY id`,
      [batchId],
    );
  }

  attemptsOf(batchId: string): Promise<AttemptRecord[]> {
    return this.dataSource.query(
      `SELECT ${ATTEMPT_COLUMNS} FROM delivery_attempts WHERE batch_id = $1 ORDER BY received_at, delivery_attempts.id`,
      [batchId],
    );
  }

  async quarantinedCount(batchId: string): Promise<number> {
    const rows = (await this.dataSource.query(
      'SELECT count(*)::int AS n FROM quarantined_bodies WHERE batch_id = $1',
      [batchId],
    )) as { n: number }[];
    return rows[0].n;
  }

  /** Newest first (by id), `limit` rows. */
  deliveries(filter: AttemptFilter): Promise<AttemptRecord[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (sql: string, value: unknown) => {
      params.push(value);
      where.push(sql.replace('?', `$${params.length}`));
    };
    if (filter.outcome) add('outcome = ?', filter.outcome);
    if (filter.batchId) add('batch_id = ?', filter.batchId);
    if (filter.from) add('received_at >= ?', filter.from);
    if (filter.to) add('received_at < ?', filter.to);
    if (filter.before) add('id < ?::bigint', filter.before);
    params.push(filter.limit);
    return this.dataSource.query(
      `SELECT ${ATTEMPT_COLUMNS} FROM delivery_attempts
       ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
       ORDER BY delivery_attempts.id DESC LIMIT $${params.length}`,
      params,
    );
  }
}
