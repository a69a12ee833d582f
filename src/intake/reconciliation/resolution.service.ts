import { createHash } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Actor } from '../../platform/auth/actor.js';
import { DomainException, ErrorCode } from '../../platform/common/domain.exception.js';
import { replayOf } from '../../platform/common/idempotency-key.js';
import { formatAmount, isPositive, parseAmount } from '../../platform/common/money.js';
import { MONEY_CONFIG } from '../../core/ledger/money.config.js';
import type { MoneyConfig } from '../../core/ledger/money.config.js';
import { SETTLEMENT_CONFIG } from '../../core/settlement/settlement.config.js';
import type { SettlementConfig } from '../../core/settlement/settlement.config.js';
import { CouponRepository } from '../../core/coupons/coupon.repository.js';
import { CouponsService } from '../../core/coupons/coupons.service.js';
import { CouponView } from '../../core/coupons/dto/coupon-view.dto.js';
import { TransactionRunner, Tx } from '../../platform/database/transaction.js';
import { couponOperationKey } from '../../core/ledger/postings.js';
import { OperatorActionLog } from '../../platform/operator-actions/operator-action-log.js';
import type { ActionSpec } from '../../platform/operator-actions/operator-actions.types.js';
import type { ParsedBatch } from '../../core/settlement/parsed-batch.js';
import { SnapshotSource, StatusKind } from '../../core/settlement-rules/settlement.types.js';
import { StatusMap } from '../../core/settlement-rules/status-map.js';
import { SettlementService } from '../../core/settlement/settlement.service.js';
import { ResolutionDto, ResolutionView } from './dto/resolution.dto.js';
import { ReconciliationRepository, ResolutionRow } from './reconciliation.repository.js';
import { ReconciliationService } from './reconciliation.service.js';

/**
 * Operators' resolutions of flagged coupons (CONTRACT §9, docs/reconciliation.md#resolutions): a
 * result given by hand, applied once as a synthetic batch with the authoritative rules through the
 * settlement service, recorded with who, why and what it did, replayed by its Idempotency-Key.
 */
@Injectable()
export class ResolutionService {
  private readonly logger = new Logger('Reconciliation');
  private readonly statusMap: StatusMap;

  constructor(
    @Inject(MONEY_CONFIG) private readonly money: MoneyConfig,
    @Inject(SETTLEMENT_CONFIG) private readonly settings: SettlementConfig,
    private readonly transactions: TransactionRunner,
    private readonly settlement: SettlementService,
    private readonly coupons: CouponRepository,
    private readonly couponsService: CouponsService,
    private readonly repository: ReconciliationRepository,
    private readonly reconciliation: ReconciliationService,
    private readonly actions: OperatorActionLog,
  ) {
    this.statusMap = new StatusMap(settings.statusMap);
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
    const currencies = this.money.currencies;
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
    const currencies = this.money.currencies;
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
    await this.reconciliation.refuseWhileInboxPending(tx, couponCode);
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
    return replayOf(await this.repository.findResolution(tx, idempotencyKey), requestHash);
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
    const code = Object.entries(this.settings.statusMap).find(([, kind]) => kind === wanted)?.[0];
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
    const amount = (value: string) => this.money.currencies.format(value, currency);
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
