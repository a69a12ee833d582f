import { formatCents, parseCents } from './money.js';

/**
 * What a conforming receiver ends with for a sequence of snapshots: CONTRACT §6 (settlement
 * transitions with the default status map) and §7 (operation keys), written independently of
 * the receiver's code so that the generator's manifest is a real cross-check.
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

  constructor(readonly couponCode: string) {}

  /** The stake debit that registration (POST /coupons) posts. */
  register(stakeCents: bigint): void {
    this.post('stake_debit', 0, stakeCents);
  }

  /** Applies one snapshot delivered in a new batch (a redelivered batch changes nothing). */
  apply(snapshot: CouponSnapshot): void {
    const amount = snapshot.realWin === null ? null : parseCents(snapshot.realWin);
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

  /** Player money moved by this coupon: credits minus debits, stake included. */
  get netCents(): bigint {
    let net = 0n;
    for (const op of this.operations.values()) net += op.type === 'final_credit' ? op.cents : -op.cents;
    return net;
  }

  /** `key=amount` of every operation, sorted (the form the tests compare). */
  operationList(): string[] {
    return [...this.operations].map(([key, op]) => `${key}=${formatCents(op.cents)}`).sort();
  }

  private post(type: OperationType, generation: number, cents: bigint): void {
    const key = `${this.couponCode}:${generation}:${type}`;
    // §6: no ledger row for an amount of 0; §7: an existing key is a no-op.
    if (cents > 0n && !this.operations.has(key)) this.operations.set(key, { type, generation, cents });
  }
}
