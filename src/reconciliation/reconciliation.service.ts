import { createHash } from 'node:crypto';
import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
} from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import type { Actor } from '../auth/actor.js';
import { BackgroundGovernor, WorkGate } from '../background/background-governor.js';
import { parseBatch } from '../settlement/batch-parser.js';
import { InboxRepository } from '../inbox/inbox.repository.js';
import { ParsedBatch } from '../settlement/parsed-batch.js';
import { DomainException, ErrorCode } from '../common/domain.exception.js';
import { parseExactJson, stringifyExactJson } from '../common/exact-json.js';
import { formatAmount, isPositive, parseAmount } from '../common/money.js';
import { APP_CONFIG } from '../config/configuration.js';
import type { AppConfig } from '../config/configuration.js';
import { CouponRepository } from '../coupons/coupon.repository.js';
import { CouponsService } from '../coupons/coupons.service.js';
import { CouponView } from '../coupons/dto/coupon-view.dto.js';
import { isConnectionLoss } from '../database/pg-errors.js';
import { DeadlineExceededError, TransactionRunner, Tx } from '../database/transaction.js';
import { couponOperationKey } from '../ledger/postings.js';
import { OperatorActionLog } from '../operator-actions/operator-action-log.js';
import type { ActionSpec } from '../operator-actions/operator-actions.types.js';
import { SnapshotSource, StatusKind, TransitionName } from '../settlement/rules/settlement.types.js';
import { StatusMap } from '../settlement/rules/status-map.js';
import { SettlementService } from '../settlement/settlement.service.js';
import { ResolutionDto, ResolutionView } from './dto/resolution.dto.js';
import { ReconciliationRepository, ResolutionRow } from './reconciliation.repository.js';
import { SportApiClient } from './sportapi.client.js';

/**
 * Session-level advisory lock key held by the replica running a scheduled reconciliation
 * (the migrator uses 727_001).
 */
export const RECONCILIATION_LOCK_KEY = 727_002;

/** Reads of one coupon while callbacks keep changing it, before giving up (COUPON_CHANGED_DURING_READ). */
const READ_ATTEMPTS = 3;

/** Name of the interval in the SchedulerRegistry. */
const INTERVAL_NAME = 'reconciliation';

const utf8 = new TextDecoder('utf-8', { fatal: true });
/** Keys whose numbers keep their digits in a coupon read (amounts: CONTRACT §3). */
const REAL_WIN_AS_TEXT: ReadonlySet<string> = new Set(['realWin']);

/** What reading and applying one coupon did. */
export type ReconcileOutcome =
  /** The read was a new snapshot and went through the pipeline (transition says what it did). */
  | 'applied'
  /** The coupon's latest snapshot is this same read (same coupon JSON): nothing was written. */
  | 'unchanged';

/** Result of {@link ReconciliationService.reconcile}. */
export interface ReconcileResult {
  outcome: ReconcileOutcome;
  batchId: string;
  /** Settlement transition of the read snapshot; null when unchanged. */
  transition: TransitionName | null;
  view: CouponView;
}

/** Counts of one scheduled run (also logged as one line). */
export interface ReconciliationRunSummary {
  /** true: another replica (or run) held the advisory lock; nothing was read. */
  skipped: boolean;
  candidates: number;
  /** New snapshots applied, of which `settled` settled or re-settled a generation. */
  applied: number;
  settled: number;
  unchanged: number;
  notFound: number;
  invalid: number;
  /** Coupons with pending inbox batches, or changing during every read: tried again next run. */
  deferred: number;
  failed: number;
  durationMs: number;
}

/** Transitions after which the coupon's current generation is settled by the read result. */
const SETTLING = new Set<TransitionName>([
  TransitionName.SETTLED,
  TransitionName.RESETTLED,
  TransitionName.RECALCULATION_SETTLED,
]);

/**
 * The polling fallback and reconciliation (CONTRACT §9): {@link reconcile} reads a coupon from
 * SportAPI and applies it as the synthetic batch `poll:<coupon_code>:<sha256>`; {@link runOnce} is
 * one scheduled run (one replica at a time); {@link resolve} applies an operator's resolution of a
 * flagged coupon. Reads and resolutions are authoritative (§9). docs/reconciliation.md has the
 * rules (suffixed batch ids, deferral behind pending inbox rows, the run's counts).
 */
@Injectable()
export class ReconciliationService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Reconciliation');
  private readonly statusMap: StatusMap;
  private currentRun: Promise<ReconciliationRunSummary> | undefined;
  /** The governor's permits of scheduled runs: one coupon at a time, none while the callback is slow. */
  private readonly gate: WorkGate;
  /** Aborted at shutdown: a run stops waiting for a permit. */
  private readonly stopping = new AbortController();

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly transactions: TransactionRunner,
    private readonly sportApi: SportApiClient,
    private readonly settlement: SettlementService,
    private readonly coupons: CouponRepository,
    private readonly couponsService: CouponsService,
    private readonly repository: ReconciliationRepository,
    private readonly inbox: InboxRepository,
    private readonly scheduler: SchedulerRegistry,
    private readonly actions: OperatorActionLog,
    governor: BackgroundGovernor,
  ) {
    this.statusMap = new StatusMap(config.statusMap);
    // Pure catch-up work: its floor is 0, where it still reads one coupon a second (the trickle).
    this.gate = governor.register('reconciliation', 1, 0);
  }

  onApplicationBootstrap(): void {
    const { intervalMs, afterMs, batchSize } = this.config.reconciliation;
    if (!this.sportApi.enabled || intervalMs === 0) {
      this.logger.log(
        this.sportApi.enabled
          ? 'scheduled reconciliation is off (RECONCILE_INTERVAL=0)'
          : 'polling SportAPI is disabled (SPORTAPI_BASE_URL unset): no scheduled reconciliation',
      );
      return;
    }
    const timer = setInterval(() => {
      if (this.currentRun) return; // the previous run of this replica is still going
      this.runOnce().catch((err: unknown) =>
        this.logger.error(`reconciliation run failed: ${(err as Error).message}`),
      );
    }, intervalMs);
    this.scheduler.addInterval(INTERVAL_NAME, timer);
    this.logger.log(
      `scheduled reconciliation every ${intervalMs} ms (coupons unsettled for ${afterMs} ms or flagged, ${batchSize} per run)`,
    );
  }

  /** Lets a run in progress finish (the interval itself is cleared by @nestjs/schedule). */
  async beforeApplicationShutdown(): Promise<void> {
    if (this.scheduler.doesExist('interval', INTERVAL_NAME)) this.scheduler.deleteInterval(INTERVAL_NAME);
    // A run waiting for the governor's permit (the intake busy) leaves its coupons to the next one.
    this.stopping.abort();
    await this.currentRun?.catch(() => undefined);
  }

  /**
   * One scheduled reconciliation run (what the interval calls; tests call it directly). Takes the
   * session advisory lock {@link RECONCILIATION_LOCK_KEY} on a dedicated connection with
   * `pg_try_advisory_lock`: when another replica holds it the run is skipped. Otherwise reads and
   * applies up to `RECONCILE_BATCH_SIZE` candidates one by one, each after a permit of the
   * background-work governor (one transaction each, a failure is
   * counted and the run goes on), stamps each coupon read (not after a transient failure, so it is
   * tried again next run) and logs one line with the counts.
   * @throws DomainException POLLING_DISABLED when SPORTAPI_BASE_URL is unset.
   */
  async runOnce(): Promise<ReconciliationRunSummary> {
    if (!this.sportApi.enabled) {
      throw new DomainException(
        ErrorCode.POLLING_DISABLED,
        'polling SportAPI is disabled: SPORTAPI_BASE_URL is not configured',
      );
    }
    const run = this.lockedRun();
    this.currentRun = run;
    try {
      return await run;
    } finally {
      if (this.currentRun === run) this.currentRun = undefined;
    }
  }

  private async lockedRun(): Promise<ReconciliationRunSummary> {
    const started = Date.now();
    const summary: ReconciliationRunSummary = {
      skipped: false,
      candidates: 0,
      applied: 0,
      settled: 0,
      unchanged: 0,
      notFound: 0,
      invalid: 0,
      deferred: 0,
      failed: 0,
      durationMs: 0,
    };
    const run = await this.transactions.withSessionLock(RECONCILIATION_LOCK_KEY, () => this.work(summary));
    if ('skipped' in run) {
      summary.skipped = true;
      summary.durationMs = Date.now() - started;
      this.logger.log('reconciliation run skipped: another replica holds the lock');
      return summary;
    }
    summary.durationMs = Date.now() - started;
    this.logger.log(
      `reconciliation run: ${summary.candidates} candidates, ${summary.applied} applied ` +
        `(${summary.settled} settled), ${summary.unchanged} unchanged, ${summary.notFound} not found at SportAPI, ` +
        `${summary.invalid} invalid, ${summary.deferred} deferred (inbox pending), ${summary.failed} failed, ${summary.durationMs} ms`,
    );
    return summary;
  }

  private async work(summary: ReconciliationRunSummary): Promise<void> {
    const { afterMs, batchSize } = this.config.reconciliation;
    const codes = await this.transactions.run((tx) => this.repository.candidates(tx, afterMs, batchSize));
    summary.candidates = codes.length;
    for (const code of codes) {
      const release = await this.gate.acquire(this.stopping.signal);
      if (!release) break;
      try {
        const result = await this.readAndApply(code, null);
        if (result.outcome === 'unchanged') summary.unchanged++;
        else {
          summary.applied++;
          if (result.transition !== null && SETTLING.has(result.transition)) summary.settled++;
        }
      } catch (err) {
        const code_ = err instanceof DomainException ? err.code : undefined;
        if (code_ === ErrorCode.SPORTAPI_COUPON_NOT_FOUND) summary.notFound++;
        else if (code_ === ErrorCode.SPORTAPI_BAD_RESPONSE) summary.invalid++;
        else if (code_ === ErrorCode.COUPON_INBOX_PENDING || code_ === ErrorCode.COUPON_CHANGED_DURING_READ)
          summary.deferred++;
        else summary.failed++;
        if (
          code_ !== ErrorCode.SPORTAPI_UNAVAILABLE &&
          code_ !== ErrorCode.COUPON_INBOX_PENDING &&
          code_ !== ErrorCode.COUPON_CHANGED_DURING_READ &&
          code_ !== undefined
        ) {
          // A definite answer: read this coupon again only after RECONCILE_AFTER.
          await this.transactions
            .run((tx) => this.repository.markReconciled(tx, code))
            .catch(() => undefined);
        }
        if (!(err instanceof DomainException))
          this.logger.warn(`reconciliation of coupon ${code} failed: ${(err as Error).message}`);
        if (err instanceof DeadlineExceededError || isConnectionLoss(err)) {
          // The database is away or hung: give the run up (its lock is released) and leave the
          // remaining coupons to the next run rather than waiting out a deadline for each.
          this.logger.warn(`reconciliation run stopped after ${code}: the database did not answer in time`);
          break;
        }
      } finally {
        release();
      }
    }
  }

  /**
   * `POST /coupons/{coupon_code}/reconcile`: reads the coupon from SportAPI now and applies it,
   * the batch recorded with `actor` (the partner API key's name), and as an operator action in
   * the transaction that applies it (a refusal: after the rollback).
   * @returns the outcome and the coupon view (as `GET /coupons/{coupon_code}`).
   * @throws DomainException POLLING_DISABLED (501), SPORTAPI_COUPON_NOT_FOUND (404),
   *   SPORTAPI_UNAVAILABLE (503), SPORTAPI_BAD_RESPONSE (502: invalid coupon, nothing written),
   *   COUPON_INBOX_PENDING (409: pending inbox batches of the coupon apply first),
   *   COUPON_CHANGED_DURING_READ (409: callbacks kept changing the coupon during each read).
   */
  async reconcile(couponCode: string, actor: Actor): Promise<ReconcileResult> {
    const spec: ActionSpec = { action: 'reconcile', targetKind: 'coupon', targetId: couponCode };
    const { outcome, batchId, transition } = await this.actions.perform(actor, spec, () =>
      this.readAndApply(couponCode, actor),
    );
    return { outcome, batchId, transition, view: await this.couponsService.get(couponCode) };
  }

  /**
   * Reads the coupon and applies it under its row lock unless its latest snapshot is this very
   * read (`unchanged`); when the same coupon JSON was applied before and other batches changed the
   * coupon since, under a suffixed batch id. A read is applied only to the state it was taken
   * after: otherwise it is taken again, up to {@link READ_ATTEMPTS} times (docs/reconciliation.md).
   * `actor`: the partner API key of a reconcile (its operator action is written with the apply),
   * null for a scheduled run.
   * @throws DomainException COUPON_INBOX_PENDING, COUPON_CHANGED_DURING_READ; nothing written then.
   */
  private async readAndApply(
    couponCode: string,
    actor: Actor | null,
  ): Promise<{ outcome: ReconcileOutcome; batchId: string; transition: TransitionName | null }> {
    for (let attempt = 1; ; attempt++) {
      const before = await this.transactions.run((tx) => this.repository.latestSnapshotBatch(tx, couponCode));
      const read = this.pollRead(couponCode, (await this.sportApi.readCoupon(couponCode)).body);
      const result = await this.transactions.run(async (tx) => {
        // Locked (its row created when no batch has touched it yet) before the comparison, so no
        // batch can change the coupon between the comparison and the apply.
        await this.coupons.lockOne(tx, couponCode);
        await this.refuseWhileInboxPending(tx, couponCode);
        const latest = await this.repository.latestSnapshotBatch(tx, couponCode);
        if (latest !== before) return undefined; // changed during the read: read again
        const applied = await this.applyRead(tx, couponCode, read, latest, actor?.name ?? null);
        if (actor)
          await this.actions.ok(tx, actor, {
            action: 'reconcile',
            targetKind: 'coupon',
            targetId: couponCode,
            details: { ...applied },
          });
        return applied;
      });
      if (result) return result;
      if (attempt >= READ_ATTEMPTS) {
        throw new DomainException(
          ErrorCode.COUPON_CHANGED_DURING_READ,
          `coupon ${couponCode} changed during each of ${READ_ATTEMPTS} reads from SportAPI; retry later`,
        );
      }
    }
  }

  /** The decision of {@link readAndApply} inside its transaction (the coupon row locked). */
  private async applyRead(
    tx: Tx,
    couponCode: string,
    read: { couponJson: string; hash: string; parsed: ParsedBatch },
    latest: string | undefined,
    actor: string | null,
  ): Promise<{ outcome: ReconcileOutcome; batchId: string; transition: TransitionName | null }> {
    const base = `poll:${couponCode}:${read.hash}`;
    if (latest === base || latest?.startsWith(`${base}:`)) {
      await this.repository.markReconciled(tx, couponCode);
      return { outcome: 'unchanged', batchId: latest, transition: null };
    }
    const batchId =
      latest !== undefined && (await this.repository.batchExists(tx, base))
        ? `${base}:${createHash('sha256').update(latest).digest('hex').slice(0, 16)}`
        : base;
    const applied = await this.settlement.apply(tx, this.pollBatch(batchId, read), {
      source: SnapshotSource.POLL,
      actor,
    });
    await this.repository.markReconciled(tx, couponCode);
    return applied.claim === 'claimed'
      ? { outcome: 'applied', batchId, transition: applied.transitions.get(couponCode) ?? null }
      : { outcome: 'unchanged', batchId, transition: null };
  }

  /**
   * Refuses a read or resolution of a coupon that pending inbox rows hold (CONTRACT §4 step 5:
   * per coupon, batches apply in arrival order; those were answered 200 first).
   * @throws DomainException COUPON_INBOX_PENDING.
   */
  private async refuseWhileInboxPending(tx: Tx, couponCode: string): Promise<void> {
    const pending = await this.inbox.pendingWithCoupons(tx, [couponCode]);
    if (pending > 0) {
      throw new DomainException(
        ErrorCode.COUPON_INBOX_PENDING,
        `the inbox holds ${pending} pending batch(es) of coupon ${couponCode}; retry after they are applied`,
      );
    }
  }

  /**
   * One coupon read (CONTRACT §9): the body parsed exactly (numbers keep their digits), written
   * back as compact JSON (the coupon JSON, whose SHA-256 names the batch), then validated as the
   * one coupon of a callback batch.
   * @throws DomainException SPORTAPI_BAD_RESPONSE naming what is wrong.
   */
  private pollRead(
    couponCode: string,
    body: Buffer,
  ): { couponJson: string; hash: string; parsed: ParsedBatch } {
    let couponJson: string;
    try {
      const { value, lossless } = parseExactJson(utf8.decode(body), REAL_WIN_AS_TEXT);
      if (typeof value !== 'object' || value === null || Array.isArray(value))
        throw new SyntaxError('not a JSON object');
      couponJson = stringifyExactJson(value, lossless);
    } catch (err) {
      throw new DomainException(
        ErrorCode.SPORTAPI_BAD_RESPONSE,
        `SportAPI's coupon read is not a JSON object (${err instanceof SyntaxError ? err.message.slice(0, 200) : 'not UTF-8'})`,
      );
    }
    let parsed: ParsedBatch;
    try {
      // Validated as a callback batch; the real batch id (longer than a callback's 64) is set after.
      parsed = parseBatch(
        Buffer.from(`{"batchId":"poll","couponCount":1,"coupons":[${couponJson}]}`),
        this.config.currencies.maxMinorUnits,
      );
    } catch (err) {
      if (!(err instanceof DomainException)) throw err;
      throw new DomainException(
        ErrorCode.SPORTAPI_BAD_RESPONSE,
        `SportAPI's coupon read is not a valid coupon: ${err.message}`,
        err.fields?.map((f) => ({ path: f.path.replace(/^coupons\[0\]\.?/, ''), message: f.message })),
      );
    }
    if (parsed.coupons[0].couponCode !== couponCode) {
      throw new DomainException(
        ErrorCode.SPORTAPI_BAD_RESPONSE,
        `SportAPI answered the read of coupon ${couponCode} with another coupon_code`,
        [{ path: 'coupon_code', message: `must be ${couponCode}` }],
      );
    }
    return { couponJson, hash: createHash('sha256').update(couponJson).digest('hex'), parsed };
  }

  /** The synthetic batch `batchId` of a validated coupon read. */
  private pollBatch(batchId: string, read: { couponJson: string; parsed: ParsedBatch }): ParsedBatch {
    const rawBody = Buffer.from(
      `{"batchId":${JSON.stringify(batchId)},"couponCount":1,"coupons":[${read.couponJson}]}`,
    );
    return {
      ...read.parsed,
      batchId,
      rawBody,
      payloadHash: createHash('sha256').update(rawBody).digest('hex'),
    };
  }

  /**
   * `POST /coupons/{coupon_code}/resolution`: an operator's result for a `needs_review` coupon,
   * applied once as the synthetic batch `resolution:<coupon_code>:<sha256 of the key>` with the
   * authoritative rules, recorded with who (`resolvedBy`; `actor`, the key's name), why and what
   * it did; the same key and body again return the stored resolution (`replayed`).
   * @throws DomainException IDEMPOTENCY_CONFLICT, NOT_FOUND, COUPON_NOT_FLAGGED,
   *   VALIDATION_FAILED (status and amount disagree, or `realWin` finer than the coupon's currency),
   *   COUPON_INBOX_PENDING.
   */
  async resolve(
    couponCode: string,
    idempotencyKey: string,
    dto: ResolutionDto,
    actor: Actor,
  ): Promise<{ resolution: ResolutionView; coupon: CouponView; replayed: boolean }> {
    const spec = (row?: ResolutionRow, replayed?: boolean): ActionSpec => ({
      action: 'resolution',
      targetKind: 'coupon',
      targetId: couponCode,
      reason: dto.reason,
      details: {
        idempotencyKey,
        resolvedBy: dto.resolvedBy,
        ...(dto.status === undefined ? {} : { status: dto.status }),
        realWin: dto.realWin,
        ...(row
          ? { batchId: row.batchId, transition: row.transition, generation: row.generation, replayed }
          : {}),
      },
    });
    return this.actions.perform(actor, spec(), () =>
      this.resolveLogged(couponCode, idempotencyKey, dto, actor, spec),
    );
  }

  private async resolveLogged(
    couponCode: string,
    idempotencyKey: string,
    dto: ResolutionDto,
    actor: Actor,
    spec: (row?: ResolutionRow, replayed?: boolean) => ActionSpec,
  ): Promise<{ resolution: ResolutionView; coupon: CouponView; replayed: boolean }> {
    const currencies = this.config.currencies;
    const parsed = dto.realWin === null ? '0' : parseAmount(dto.realWin, currencies.maxMinorUnits);
    if (parsed === null) {
      throw new DomainException(ErrorCode.VALIDATION_FAILED, 'realWin is not a valid amount', [
        { path: 'realWin', message: `must have at most ${currencies.maxMinorUnits} fraction digits` },
      ]);
    }
    // At least 2 fraction digits, never rounded: 2-digit requests hash as before per-currency precision.
    const realWin = formatAmount(parsed);
    const status = this.resolutionStatus(dto.status, realWin);
    const requestHash = createHash('sha256')
      .update(JSON.stringify([couponCode, status, realWin, dto.reason, dto.resolvedBy]))
      .digest('hex');
    const { row, replayed } = await this.transactions.run(async (tx) => {
      await this.actions.begin(tx, actor);
      const done = await this.resolveIn(
        tx,
        couponCode,
        idempotencyKey,
        dto,
        actor.name,
        status,
        realWin,
        requestHash,
      );
      await this.actions.ok(tx, actor, spec(done.row, done.replayed));
      return done;
    });
    const coupon = await this.couponsService.get(couponCode);
    return { resolution: this.resolutionView(row, coupon.currency), coupon, replayed };
  }

  /** The resolution inside its transaction (the stored one again for a replayed key). */
  private async resolveIn(
    tx: Tx,
    couponCode: string,
    idempotencyKey: string,
    dto: ResolutionDto,
    actor: string,
    status: number,
    realWin: string,
    requestHash: string,
  ): Promise<{ row: ResolutionRow; replayed: boolean }> {
    const currencies = this.config.currencies;
    const earlier = await this.replayResolution(tx, idempotencyKey, requestHash);
    if (earlier) return { row: earlier, replayed: true };
    if (!(await this.coupons.find(tx, couponCode)))
      throw new DomainException(ErrorCode.NOT_FOUND, `coupon ${couponCode} not found`);
    const coupon = await this.coupons.lockOne(tx, couponCode);
    // A concurrent request with the same key held the lock first: answer as it did.
    const meanwhile = await this.replayResolution(tx, idempotencyKey, requestHash);
    if (meanwhile) return { row: meanwhile, replayed: true };
    if (coupon.currency !== null && !currencies.fits(realWin, coupon.currency)) {
      // CONTRACT §3: never rounded; an unallocated coupon's currency is checked at registration.
      throw new DomainException(
        ErrorCode.VALIDATION_FAILED,
        `realWin is finer than ${coupon.currency} allows`,
        [
          {
            path: 'realWin',
            message: `must have at most ${currencies.minorUnits(coupon.currency)} fraction digits (${coupon.currency})`,
          },
        ],
      );
    }
    await this.refuseWhileInboxPending(tx, couponCode);
    if (!coupon.needsReview) {
      throw new DomainException(
        ErrorCode.COUPON_NOT_FLAGGED,
        `coupon ${couponCode} is not flagged needs_review; there is nothing to resolve`,
      );
    }
    const batch = this.resolutionBatch(couponCode, idempotencyKey, status, realWin, dto);
    const { claim } = await this.settlement.apply(tx, batch, { source: SnapshotSource.RESOLUTION, actor });
    const outcome =
      claim === 'claimed' ? await this.repository.outcome(tx, batch.batchId, couponCode) : undefined;
    if (!outcome)
      throw new DomainException(ErrorCode.IDEMPOTENCY_CONFLICT, 'this Idempotency-Key was used before');
    const row: Omit<ResolutionRow, 'resolvedAt'> = {
      idempotencyKey,
      couponCode,
      requestHash,
      status,
      realWin,
      reason: dto.reason,
      resolvedBy: dto.resolvedBy,
      batchId: batch.batchId,
      transition: outcome.transition,
      generation: outcome.generation,
      operations: outcome.operations,
      actor,
    };
    if (!(await this.repository.insertResolution(tx, row)))
      throw new DomainException(ErrorCode.IDEMPOTENCY_CONFLICT, 'this Idempotency-Key was used before');
    this.logger.log(
      `coupon ${couponCode} resolved by ${dto.resolvedBy} (Idempotency-Key ${idempotencyKey}, API key ${actor}): ${outcome.transition}, generation ${outcome.generation}`,
    );
    return {
      row: (await this.repository.findResolution(tx, idempotencyKey)) as ResolutionRow,
      replayed: false,
    };
  }

  private async replayResolution(
    tx: Tx,
    idempotencyKey: string,
    requestHash: string,
  ): Promise<ResolutionRow | undefined> {
    const earlier = await this.repository.findResolution(tx, idempotencyKey);
    if (!earlier) return undefined;
    if (earlier.requestHash !== requestHash) {
      throw new DomainException(
        ErrorCode.IDEMPOTENCY_CONFLICT,
        'this Idempotency-Key was used with a different request',
      );
    }
    return earlier;
  }

  /** The status code a resolution records: the given one (checked) or the configured WIN/LOSS code. */
  private resolutionStatus(given: number | undefined, realWin: string): number {
    const kinds = [StatusKind.WIN, StatusKind.REFUND, StatusKind.LOSS];
    if (given !== undefined) {
      const kind = this.statusMap.kindOf(given);
      const consistent =
        kinds.includes(kind) &&
        !(kind === StatusKind.WIN && !isPositive(realWin)) &&
        !(kind === StatusKind.LOSS && isPositive(realWin));
      if (!consistent) {
        throw new DomainException(ErrorCode.VALIDATION_FAILED, 'status does not fit realWin', [
          {
            path: 'status',
            message: 'must map to WIN (realWin > 0), REFUND, or LOSS (realWin null or 0)',
          },
        ]);
      }
      return given;
    }
    const wanted = isPositive(realWin) ? StatusKind.WIN : StatusKind.LOSS;
    const code = Object.entries(this.config.statusMap).find(([, kind]) => kind === wanted)?.[0];
    if (code === undefined) {
      throw new DomainException(ErrorCode.VALIDATION_FAILED, `no status code maps to ${wanted}`, [
        { path: 'status', message: 'required: STATUS_MAP has no code for this result' },
      ]);
    }
    return Number(code);
  }

  private resolutionBatch(
    couponCode: string,
    idempotencyKey: string,
    status: number,
    realWin: string,
    dto: ResolutionDto,
  ): ParsedBatch {
    const batchId = `resolution:${couponCode}:${createHash('sha256').update(idempotencyKey).digest('hex')}`;
    const payload = {
      coupon_code: couponCode,
      status,
      realWin,
      events: [],
      resolution: { idempotencyKey, reason: dto.reason, resolvedBy: dto.resolvedBy },
    };
    const rawBody = Buffer.from(JSON.stringify({ batchId, couponCount: 1, coupons: [payload] }));
    return {
      batchId,
      couponCount: 1,
      coupons: [{ couponCode, status, realWin, events: [], payload }],
      rawBody,
      payloadHash: createHash('sha256').update(rawBody).digest('hex'),
      losslessNumbers: false,
      payloadsAsSent: false,
    };
  }

  /** A resolution with its amounts at the precision of the coupon's currency (null: unallocated). */
  private resolutionView(row: ResolutionRow, currency: string | null): ResolutionView {
    const amount = (value: string) => this.config.currencies.format(value, currency);
    return {
      idempotencyKey: row.idempotencyKey,
      coupon_code: row.couponCode,
      status: row.status,
      realWin: amount(row.realWin),
      reason: row.reason,
      resolvedBy: row.resolvedBy,
      actor: row.actor,
      batchId: row.batchId,
      transition: row.transition,
      generation: row.generation,
      operations: row.operations.map(
        (o) => `${couponOperationKey(row.couponCode, o.generation, o.type)}=${amount(o.amount)}`,
      ),
      resolvedAt: new Date(row.resolvedAt).toISOString(),
    };
  }
}
