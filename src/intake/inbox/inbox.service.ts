import { activeTraceId } from '../../platform/observability/tracing.js';
import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { DomainException, ErrorCode } from '../../platform/common/domain.exception.js';
import type { InlineDelivery } from '../../core/settlement/settlement.service.js';
import { toStorable, toStorableText } from '../../platform/common/validation.js';
import { INBOX_CONFIG } from './inbox.config.js';
import type { InboxConfig } from './inbox.config.js';
import { dataExceptionRefusal, sqlStateOf } from '../../platform/database/pg-errors.js';
import { TransactionRunner, Tx } from '../../platform/database/transaction.js';
import { RecentMap } from '../../platform/common/recent-set.js';
import { MetricsRegistry } from '../../platform/observability/metrics-registry.js';
import type { ParsedBatch } from '../../core/settlement/parsed-batch.js';
import type { InboxStatus } from './inbox.types.js';
import { ClaimedInboxRow, InboxEntryView, InboxRepository } from './inbox.repository.js';

/** What the callback answers for a batch committed to the inbox (CONTRACT §5). */
export interface InboxAcceptResult {
  processed: number;
  duplicate: boolean;
  /** true: a new inbox row (delivery outcome `accepted`). */
  accepted: boolean;
}

/** A page of the inbox, newest first; `nextCursor` is null on the last page. */
export interface InboxPage {
  items: InboxEntryView[];
  nextCursor: string | null;
}

/**
 * Accepted batches kept parsed for this process's workers (about 100–200 kB each: the bytes and
 * the parsed coupons); a row accepted by another replica, or forgotten, is read and parsed again.
 */
const PARSED_BATCHES = 500;

/** Metric names of the inbox's backlog (`ops/alerts.yml`, docs/operating.md#metrics). */
export const INBOX_METRIC = {
  pending: 'settlement_inbox_pending',
  oldestPendingAge: 'settlement_inbox_oldest_pending_age_seconds',
} as const;

/** Reason stored on the quarantine row of an inbox batch that failed `INBOX_MAX_ATTEMPTS` times. */
export const APPLY_FAILED = 'apply_failed';

/** A short, storable description of an apply failure (SQLSTATE first when there is one). */
function describe(err: unknown): string {
  const state = sqlStateOf(err);
  const message = err instanceof Error ? err.message : String(err);
  return toStorableText(`${state ? `[${state}] ` : ''}${message}`).slice(0, 500);
}

/**
 * Inbox mode (`CALLBACK_MODE=inbox`). {@link accept} is the callback's transaction: it commits
 * the verified and validated batch (raw bytes, SHA-256, coupon codes) to `callback_inbox` with
 * its delivery attempt (`accepted` or `duplicate`) and nothing else, so the answer is fast and
 * still only sent after COMMIT (CONTRACT §4, §5). The workers ({@link InboxWorker}) apply the
 * rows; {@link recordFailure} counts a failed application, retried with exponential backoff and
 * quarantined after `INBOX_MAX_ATTEMPTS` failures or at once when no retry can fix it (§8).
 * docs/inbox-mode.md has the whole design.
 */
@Injectable()
export class InboxService implements OnModuleInit {
  private readonly logger = new Logger('Inbox');
  private readonly acceptedListeners = new Set<() => void>();
  /** Batches this process accepted, parsed, by inbox row id (see {@link takeParsed}). */
  private readonly parsed = new RecentMap<string, ParsedBatch>(PARSED_BATCHES);

  constructor(
    @Inject(INBOX_CONFIG) private readonly config: InboxConfig,
    private readonly transactions: TransactionRunner,
    private readonly inbox: InboxRepository,
    private readonly metrics: MetricsRegistry,
  ) {}

  /** The inbox gauges of `/metrics` (0 in inline mode), counted at scrape time over the pending index. */
  onModuleInit(): void {
    this.metrics.scrapedGauges(
      'inbox gauges',
      () =>
        this.transactions.run((tx) => this.inbox.backlog(tx), { deadline: Date.now() + 1000, retries: 0 }),
      [
        {
          name: INBOX_METRIC.pending,
          help: 'Inbox rows accepted (answered 200) and not applied nor quarantined yet, counted at scrape time',
          value: (b) => b.pending,
        },
        {
          name: INBOX_METRIC.oldestPendingAge,
          help: 'Seconds since the oldest pending inbox row was received (0 when none)',
          value: (b) => b.oldestPendingAgeSeconds,
        },
      ],
    );
  }

  /**
   * Commits `batch` to the inbox. A batch id already in the inbox (pending, applied or
   * quarantined) or already applied is a duplicate (200, nothing inserted) when its body is the
   * same; with another body it is a conflict.
   * @throws DomainException BATCH_CONFLICT (409; the filter quarantines the body); transient
   *   database errors and DeadlineExceededError (503); nothing is committed when anything throws.
   */
  async accept(batch: ParsedBatch, request: InlineDelivery): Promise<InboxAcceptResult> {
    return this.transactions.run(
      async (tx) => {
        const { result, id } = await this.inbox.append(
          tx,
          {
            batchId: batch.batchId,
            payloadHash: batch.payloadHash,
            couponCount: batch.couponCount,
            couponCodes: batch.coupons.map((c) => c.couponCode),
            payload: batch.rawBody,
            requestId: request.requestId,
          },
          {
            batchId: batch.batchId,
            requestId: request.requestId,
            receivedAt: new Date(request.receivedAt),
            httpStatus: 200,
            errorCode: null,
            couponCount: batch.couponCount,
            durationMs: Date.now() - request.receivedAt,
            payloadHash: batch.payloadHash,
            traceId: activeTraceId(),
          },
        );
        if (result === 'conflict') {
          // Committed with nothing written; the filter quarantines the body and records the attempt.
          throw new DomainException(
            ErrorCode.BATCH_CONFLICT,
            `batch ${batch.batchId} was delivered before with a different body`,
          );
        }
        // Committed already (the append is sent with COMMIT): keep it parsed, wake the workers now.
        if (result === 'accepted' && id) {
          this.parsed.set(id, batch);
          this.acceptedListeners.forEach((l) => l());
        }
        return {
          processed: batch.couponCount,
          duplicate: result === 'duplicate',
          accepted: result === 'accepted',
        };
      },
      { startedAt: request.receivedAt },
    );
  }

  /**
   * The batch of inbox row `id` as this process parsed and validated it when it accepted it, once
   * (forgotten then); undefined when another process accepted it or it was forgotten. The row's
   * bytes never change, so the worker need not read and parse them again.
   */
  takeParsed(id: string): ParsedBatch | undefined {
    return this.parsed.take(id);
  }

  /** Calls `listener` after each accepted batch is committed (wakes idle workers); returns its remover. */
  onAccepted(listener: () => void): () => void {
    this.acceptedListeners.add(listener);
    return () => this.acceptedListeners.delete(listener);
  }

  /** Inbox rows newest first (`limit` rows, ids below `cursor`, optionally one `status`), without payloads. */
  async list(limit: number, cursor?: string, status?: InboxStatus): Promise<InboxPage> {
    const rows = await this.transactions.run((tx) => this.inbox.list(tx, limit + 1, cursor, status));
    const items = rows.slice(0, limit);
    return { items, nextCursor: rows.length > limit ? items[items.length - 1].id : null };
  }

  /** Rows waiting to be applied. */
  pendingCount(): Promise<number> {
    return this.transactions.run((tx) => this.inbox.pendingCount(tx), { retries: 0 });
  }

  /** Milliseconds before the next try after `attempts` failures: base × 2^(attempts−1), capped. */
  retryDelayMs(attempts: number): number {
    return Math.min(
      this.config.inboxRetryMaxMs,
      this.config.inboxRetryBaseMs * 2 ** Math.max(0, attempts - 1),
    );
  }

  /**
   * Counts a failed application of `row` in `tx`: a retry after {@link retryDelayMs}, or the
   * quarantine after `INBOX_MAX_ATTEMPTS` failures (at once for a failure no retry can fix).
   */
  async recordFailure(tx: Tx, row: ClaimedInboxRow, err: unknown): Promise<void> {
    const attempts = row.attempts + 1;
    const error = describe(err);
    // A conflict, a body the configuration now rejects or a value the database cannot hold (SQLSTATE
    // class 22, a CHECK) fails the same way every time.
    const permanent =
      err instanceof DomainException
        ? err
        : dataExceptionRefusal(err, 'a value in the body cannot be stored');
    if (permanent || attempts >= this.config.inboxMaxAttempts) {
      const reason = permanent?.code ?? APPLY_FAILED;
      const quarantineId = await this.inbox.quarantine(tx, row.id, row.attempts, {
        reason,
        error,
        details: toStorable({
          attempts,
          lastError: error,
          ...(permanent?.fields?.length ? { fields: permanent.fields } : {}),
        }),
        outcome: permanent?.code === ErrorCode.BATCH_CONFLICT ? 'conflict' : 'failed',
      });
      if (quarantineId)
        this.logger.warn(
          `inbox row ${row.id} (batch ${row.batchId}) quarantined as ${quarantineId} after ${attempts} attempt(s): ${error}`,
        );
    } else {
      const delay = this.retryDelayMs(attempts);
      if (await this.inbox.recordFailure(tx, row.id, row.attempts, error, delay))
        this.logger.warn(
          `inbox row ${row.id} (batch ${row.batchId}) attempt ${attempts} failed, retry in ${delay} ms: ${error}`,
        );
    }
  }
}
