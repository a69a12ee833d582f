/**
 * Seeded load for the throughput benchmark (bench/run.ts): signed 100-coupon batches over a pool of
 * registered coupons, 1..8 events each, 20 % of deliveries a byte-identical redelivery. Two
 * profiles ({@link LoadProfile}): `mixed` (about 60 % intermediate snapshots, 30 % final results,
 * 10 % recalculations: about 8 financial operations per batch) and `money` (every snapshot that
 * can move money does: about 35 operations per batch). Batches in flight at once never share a
 * coupon. Final results repeat the amount a coupon was settled for, so money moves only on real
 * transitions. The same seed gives the same bytes (one generator per side).
 */
import { createHmac } from 'node:crypto';

/** The path SportAPI posts its deliveries to (CONTRACT §3). */
export const CALLBACK_PATH = '/sportapi/callback';

/** One signed delivery: the exact bytes and their `X-Signature` header value. */
export interface Delivery {
  body: Buffer;
  signature: string;
  batchId: string;
  redelivery: boolean;
}

/** A coupon of the pool, as registered through the partner API (or inserted for the baseline). */
export interface PoolCoupon {
  code: string;
  accountId: string;
  /** Decimal string, 2 fraction digits. */
  stake: string;
}

/**
 * Status mix of a run (docs/benchmark.md): `mixed`, today's mix, or `money`, money-heavy: 30 %
 * intermediate snapshots; otherwise an unsettled coupon (or one under recalculation) gets its
 * final result and a settled one a recalculation (3 in 4 with `realWin`: a debit and a credit).
 */
export type LoadProfile = 'mixed' | 'money';

/** Shape of the pool: codes, players and stakes, identical on both sides. */
export interface PoolSpec {
  coupons: number;
  players: number;
  seed: number;
}

/** Small, fast, seedable PRNG (mulberry32). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Player account ids of the pool. */
export function poolPlayers(spec: PoolSpec): string[] {
  return Array.from({ length: spec.players }, (_, i) => `bench-p${String(i).padStart(5, '0')}`);
}

function cents(n: number): string {
  return `${Math.floor(n / 100)}.${String(n % 100).padStart(2, '0')}`;
}

/** The pool's coupons: 12-digit codes starting with 2, round-robin over the players. */
export function poolCoupons(spec: PoolSpec): PoolCoupon[] {
  const rnd = prng(spec.seed ^ 0x5eed);
  const players = poolPlayers(spec);
  return Array.from({ length: spec.coupons }, (_, i) => ({
    code: `2${String(i).padStart(11, '0')}`,
    accountId: players[i % players.length],
    stake: cents(100 + Math.floor(rnd() * 1900)),
  }));
}

interface ModelCoupon {
  code: string;
  stakeCents: number;
  uuids: string[];
  /** Status code of the result SportAPI will send next (2 WIN, 3 REFUND, 4 LOSS). */
  result: 2 | 3 | 4;
  /** `realWin` of that result. */
  amount: string;
  /** A recalculation was sent and no final result since (CONTRACT §6: it is still open). */
  recalculating: boolean;
  /** The receiver holds a settled amount for the current generation (`money` profile only). */
  settled: boolean;
}

function uuidFrom(rnd: () => number): string {
  const hex = Array.from({ length: 32 }, () => Math.floor(rnd() * 16).toString(16));
  hex[12] = '4';
  hex[16] = ((parseInt(hex[16], 16) & 3) | 8).toString(16);
  const s = hex.join('');
  return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
}

/** Options of a {@link LoadGenerator}. */
export interface LoadOptions {
  pool: PoolSpec;
  secret: string;
  /** Prefix of batch ids (one per phase of the run). */
  batchPrefix: string;
  /** `mixed` unless given. */
  profile?: LoadProfile;
  couponsPerBatch?: number;
  redeliveryShare?: number;
}

/** Counts of what a generator has produced. */
export interface LoadCounts {
  deliveries: number;
  redeliveries: number;
  snapshots: Record<'pending' | 'final' | 'recalculation', number>;
}

/**
 * Produces the delivery sequence. `next()` is deterministic for a given seed: two generators made
 * with the same options yield the same bytes in the same order.
 */
export class LoadGenerator {
  private readonly rnd: () => number;
  private readonly coupons: ModelCoupon[];
  private readonly perBatch: number;
  private readonly redeliveryShare: number;
  private readonly recent: Delivery[] = [];
  private block = 0;
  private seq = 0;
  readonly counts: LoadCounts = {
    deliveries: 0,
    redeliveries: 0,
    snapshots: { pending: 0, final: 0, recalculation: 0 },
  };

  constructor(private readonly options: LoadOptions) {
    this.rnd = prng(options.pool.seed);
    this.perBatch = options.couponsPerBatch ?? 100;
    this.redeliveryShare = options.redeliveryShare ?? 0.2;
    this.coupons = poolCoupons(options.pool).map((c) => {
      const stakeCents = Math.round(Number(c.stake) * 100);
      const events = 1 + Math.floor(this.rnd() * 8);
      const model: ModelCoupon = {
        code: c.code,
        stakeCents,
        uuids: Array.from({ length: events }, () => uuidFrom(this.rnd)),
        result: 4,
        amount: '0.00',
        recalculating: false,
        settled: false,
      };
      this.pickResult(model);
      return model;
    });
  }

  /** Blocks of coupons in the pool: how many new batches pass before a coupon comes back. */
  get blocks(): number {
    return Math.floor(this.coupons.length / this.perBatch);
  }

  private pickResult(c: ModelCoupon): void {
    const r = this.rnd();
    if (r < 0.4) {
      c.result = 2;
      c.amount = cents(Math.round(c.stakeCents * (1.2 + this.rnd() * 8)));
    } else if (r < 0.9) {
      c.result = 4;
      c.amount = '0.00';
    } else {
      c.result = 3;
      c.amount = cents(c.stakeCents);
    }
  }

  private snapshot(c: ModelCoupon): Record<string, unknown> {
    return this.options.profile === 'money' ? this.moneySnapshot(c) : this.mixedSnapshot(c);
  }

  /** `mixed`: 60 % intermediate, 30 % final results, 10 % recalculations (half with `realWin`). */
  private mixedSnapshot(c: ModelCoupon): Record<string, unknown> {
    const r = this.rnd();
    if (r < 0.6) return this.pendingSnapshot(c);
    if (r < 0.9) return this.finalSnapshot(c);
    // A new recalculation changes the result; while it is open (no final result since), a status
    // 15 repeats it. Half of them carry the new amount, the others leave it to the next final
    // snapshot.
    if (!c.recalculating) this.pickResult(c);
    c.recalculating = true;
    return this.recalculationSnapshot(c, this.rnd() < 0.5 ? c.amount : null);
  }

  /**
   * `money`: 30 % intermediate snapshots (stale on a settled coupon, no money); otherwise the final
   * result of an unsettled coupon or of one under recalculation (`settled`: a credit when it pays;
   * `same_result` after a recalculation with the amount), else a new recalculation of a settled
   * coupon (the debit of what was paid, and with `realWin`, 3 in 4, the credit of the new amount).
   */
  private moneySnapshot(c: ModelCoupon): Record<string, unknown> {
    if (this.rnd() < 0.3) return this.pendingSnapshot(c);
    if (!c.settled || c.recalculating) {
      c.settled = true;
      return this.finalSnapshot(c);
    }
    this.pickResult(c);
    c.recalculating = true;
    const realWin = this.rnd() < 0.75 ? c.amount : null;
    c.settled = realWin !== null;
    return this.recalculationSnapshot(c, realWin);
  }

  /** An intermediate snapshot (status 1), events still open or decided. */
  private pendingSnapshot(c: ModelCoupon): Record<string, unknown> {
    this.counts.snapshots.pending++;
    return this.shape(c, 1, null, () => [0, 0, 1, 2][Math.floor(this.rnd() * 4)]);
  }

  /** The coupon's final result with the amount it is (or was) settled for; closes a recalculation. */
  private finalSnapshot(c: ModelCoupon): Record<string, unknown> {
    this.counts.snapshots.final++;
    c.recalculating = false;
    return this.shape(c, c.result, c.amount, () => (c.result === 2 ? 1 : 1 + Math.floor(this.rnd() * 2)));
  }

  /** A recalculation (status 15) of the coupon's current result, with or without its amount. */
  private recalculationSnapshot(c: ModelCoupon, realWin: string | null): Record<string, unknown> {
    this.counts.snapshots.recalculation++;
    return this.shape(c, 15, realWin, () => 1 + Math.floor(this.rnd() * 2));
  }

  private shape(
    c: ModelCoupon,
    status: number,
    realWin: string | null,
    eventStatus: () => number,
  ): Record<string, unknown> {
    return {
      coupon_code: c.code,
      status,
      realWin,
      events: c.uuids.map((uuid) => ({ uuid, status: eventStatus() })),
    };
  }

  private sign(body: Buffer): string {
    return `sha256=${createHmac('sha256', this.options.secret).update(body).digest('hex')}`;
  }

  /** The next delivery of the sequence. */
  next(): Delivery {
    this.counts.deliveries++;
    if (this.recent.length > 64 && this.rnd() < this.redeliveryShare) {
      const earlier = this.recent[Math.floor(this.rnd() * (this.recent.length - 64))];
      this.counts.redeliveries++;
      return { ...earlier, redelivery: true };
    }
    const start = (this.block % this.blocks) * this.perBatch;
    this.block++;
    const batchId = `${this.options.batchPrefix}-${String(this.seq++).padStart(7, '0')}`;
    const coupons = this.coupons.slice(start, start + this.perBatch).map((c) => this.snapshot(c));
    const body = Buffer.from(JSON.stringify({ batchId, couponCount: coupons.length, coupons }));
    const delivery: Delivery = { body, signature: this.sign(body), batchId, redelivery: false };
    this.recent.push(delivery);
    if (this.recent.length > 256) this.recent.shift();
    return delivery;
  }
}

/** Deliveries made ahead of a run (the run takes them in order; any shortfall is made on the fly). */
export class Feed {
  private queue: (Delivery | undefined)[] = [];
  private head = 0;
  madeDuringRun = 0;

  constructor(private readonly generator: LoadGenerator) {}

  fill(count: number): void {
    if (this.head > 0) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    while (this.queue.length < count) this.queue.push(this.generator.next());
  }

  take(): Delivery {
    if (this.head < this.queue.length) {
      const d = this.queue[this.head] as Delivery;
      this.queue[this.head++] = undefined;
      return d;
    }
    this.madeDuringRun++;
    return this.generator.next();
  }
}
