import { fitsUnits, formatUnits, parseUnits } from './money.js';

/**
 * What a conforming receiver ends with for a sequence of snapshots: CONTRACT §6 (settlement
 * transitions with the default status map), §7 (operation keys) and §3 (amounts at most the
 * currency's minor units, issue 17), written independently of the receiver's code so that the
 * generator's manifest is a real cross-check.
 */

/** One coupon's state in one batch, as sent (CONTRACT §3). */
export interface CouponSnapshot {
  coupon_code: string;
  status: number;
  realWin: string | number | null;
  events: { uuid: string; status: number; [field: string]: unknown }[];
}

export type OperationType = 'stake_debit' | 'final_credit' | 'recalculation_debit';

/** The default status map of CONTRACT §6. */
const KIND: Record<number, 'PENDING' | 'WIN' | 'REFUND' | 'LOSS' | 'RECALCULATION'> = {
  1: 'PENDING',
  2: 'WIN',
  3: 'REFUND',
  4: 'LOSS',
  15: 'RECALCULATION',
};

/**
 * One coupon. Amounts are integer units of 10^-`scale` (cents by default). Its currency's minor
 * units are known from registration on: a finer `realWin` is then history only and flags the
 * coupon (never paid); operations decided before registration wait for it, and those finer than
 * the currency are never posted (the coupon is flagged, a generation settled for such an amount
 * becomes unsettled).
 */
export class CouponModel {
  status: number | null = null;
  realWin: bigint | null = null;
  generation = 0;
  settled = false;
  settledAmount: bigint | null = null;
  recalculationOpen = false;
  needsReview = false;
  /** Bets as the last applied snapshot left them: uuid → status. */
  readonly events = new Map<string, number>();
  /** Operation key → amount in cents (positive; the type gives the direction). */
  readonly operations = new Map<string, { type: OperationType; generation: number; cents: bigint }>();
  /** Minor units of the coupon's currency; null until it is registered. */
  minorUnits: number | null = null;
  /** Operations decided while unregistered, in order. */
  private deferred: { type: OperationType; generation: number; cents: bigint }[] = [];

  constructor(
    readonly couponCode: string,
    readonly scale = 2,
  ) {}

  /**
   * Registration (POST /coupons) in a currency of `minorUnits` digits: the stake debit, then the
   * operations decided so far that fit the currency.
   */
  register(stakeCents: bigint, minorUnits = this.scale): void {
    this.minorUnits = minorUnits;
    this.post('stake_debit', 0, stakeCents);
    const finer = (units: bigint | null) => units !== null && !fitsUnits(units, this.scale, minorUnits);
    let refused = false;
    for (const op of this.deferred) {
      if (finer(op.cents)) refused = true;
      else this.post(op.type, op.generation, op.cents);
    }
    this.deferred = [];
    if (refused || finer(this.realWin) || finer(this.settledAmount)) {
      this.needsReview = true;
      if (finer(this.settledAmount)) {
        this.settled = false;
        this.settledAmount = null;
      }
    }
  }

  /** Applies one snapshot delivered in a new batch (a redelivered batch changes nothing). */
  apply(snapshot: CouponSnapshot): void {
    const amount = snapshot.realWin === null ? null : parseUnits(snapshot.realWin, this.scale);
    if (amount !== null && this.minorUnits !== null && !fitsUnits(amount, this.scale, this.minorUnits)) {
      // §3: finer than the currency allows: history only, flagged, never paid.
      this.needsReview = true;
      return;
    }
    const applied = (realWin: bigint | null = amount) => {
      this.status = snapshot.status;
      this.realWin = realWin;
      for (const e of snapshot.events) this.events.set(e.uuid, e.status);
    };
    switch (KIND[snapshot.status]) {
      case 'PENDING':
        if (!this.settled && !this.recalculationOpen) applied();
        return;
      case 'WIN':
      case 'REFUND':
      case 'LOSS': {
        const kind = KIND[snapshot.status];
        const result = amount ?? (kind === 'LOSS' ? 0n : null);
        if (result === null || (kind === 'WIN' && result <= 0n) || (kind === 'LOSS' && result > 0n)) {
          this.needsReview = true;
          return;
        }
        if (!this.settled) {
          applied(result);
          this.settled = true;
          this.settledAmount = result;
          this.recalculationOpen = false;
          this.post('final_credit', this.generation, result);
        } else if (this.settledAmount === result) {
          applied(result);
          this.recalculationOpen = false;
        } else {
          this.needsReview = true;
        }
        return;
      }
      case 'RECALCULATION':
        if (!this.recalculationOpen) {
          const credited = this.settled ? (this.settledAmount ?? 0n) : 0n;
          applied();
          this.generation += 1;
          this.post('recalculation_debit', this.generation, credited);
          this.settled = amount !== null;
          this.settledAmount = amount;
          this.recalculationOpen = true;
          if (amount !== null) this.post('final_credit', this.generation, amount);
        } else if (amount !== null && !this.settled) {
          applied();
          this.settled = true;
          this.settledAmount = amount;
          this.post('final_credit', this.generation, amount);
        } else if (amount !== null && this.settledAmount !== amount) {
          this.needsReview = true;
        }
        return;
      default:
        // UNKNOWN: status and bets applied, realWin kept, flagged.
        applied(this.realWin);
        this.needsReview = true;
    }
  }

  /** An amount of this coupon as the partner API shows it: at its currency's precision, never rounded. */
  show(units: bigint): string {
    return formatUnits(units, this.scale, this.minorUnits ?? 2);
  }

  /** Player money moved by this coupon: credits minus debits, stake included. */
  get netCents(): bigint {
    let net = 0n;
    for (const op of this.operations.values()) net += op.type === 'final_credit' ? op.cents : -op.cents;
    return net;
  }

  /** `key=amount` of every operation, sorted (the form the tests compare). */
  operationList(): string[] {
    return [...this.operations].map(([key, op]) => `${key}=${this.show(op.cents)}`).sort();
  }

  private post(type: OperationType, generation: number, cents: bigint): void {
    const key = `${this.couponCode}:${generation}:${type}`;
    // §6: no ledger row for an amount of 0; §7: an existing key is a no-op. Unregistered: deferred.
    if (cents <= 0n) return;
    if (this.minorUnits === null) this.deferred.push({ type, generation, cents });
    else if (!this.operations.has(key)) this.operations.set(key, { type, generation, cents });
  }
}
