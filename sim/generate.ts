import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MANIFEST_FILE } from './batch-files.js';
import { CouponModel, CouponSnapshot } from './model.js';
import { formatUnits } from './money.js';
import { Rng } from './random.js';

/**
 * `generate`: realistic, seeded sequences of SportAPI batches (CONTRACT §2, §3, §6) and a manifest
 * of what a conforming receiver must end with: singles and accumulators with accepted, intermediate
 * and final snapshots, recalculations with or without `realWin`, open coupons, redeliveries of the
 * same bytes and the same state under a new batchId, some files pretty-printed; with several
 * currencies (`currencies`), each account in one of them, every amount at its currency's minor
 * units, and some final results one digit finer than the coupon's currency allows (never paid:
 * CONTRACT §3, issue 17). The mix and the manifest's fields: docs/simulator.md.
 */

export const EVENT_OPEN = 0;
export const EVENT_WON = 2;
export const EVENT_VOID = 3;
export const EVENT_LOST = 4;

export const STATUS_PENDING = 1;
export const STATUS_WIN = 2;
export const STATUS_REFUND = 3;
export const STATUS_LOSS = 4;
export const STATUS_RECALCULATION = 15;

/** Identifier text the receiver and the partner API accept (Idempotency-Key charset too). */
const PREFIX = /^[A-Za-z0-9._-]{1,12}$/;

export interface GenerateOptions {
  seed: number;
  /** Number of coupons (default 20). */
  coupons?: number;
  /** Number of rounds of state changes, one batch each (default 10). */
  batches?: number;
  /** Prefix of coupon codes, account ids and batch ids (default `s<seed>`): change it to run a sequence twice against one database. */
  prefix?: string;
  /** Largest batch (default 100, the contract's limit). */
  maxBatchSize?: number;
  /** The one currency of a sequence (2 minor units; default EUR) when `currencies` is not given. */
  currency?: string;
  /** Several currencies with their minor units (EUR 2, JPY 0, KWD 3, USDT 6, BTC 8): accounts take them in turn. */
  currencies?: SequenceCurrency[];
}

/** A currency of a generated sequence and its minor units (the receiver must know the same). */
export interface SequenceCurrency {
  code: string;
  minorUnits: number;
}

/** `"EUR:2,JPY:0,BTC:8"` → currencies; throws on anything else. */
export function parseCurrencies(text: string): SequenceCurrency[] {
  const list = text.split(',').map((pair) => {
    const match = /^\s*([A-Z0-9]{3,8})\s*:\s*([0-8])\s*$/.exec(pair);
    if (!match) throw new Error(`not CODE:digits (3..8 of A-Z 0-9, digits 0..8): ${JSON.stringify(pair)}`);
    return { code: match[1], minorUnits: Number(match[2]) };
  });
  if (new Set(list.map((c) => c.code)).size !== list.length) throw new Error('a currency is listed twice');
  return list;
}

export type BatchKind = 'state' | 'redelivery' | 'same-state';

export interface ManifestBatch {
  file: string;
  batchId: string;
  kind: BatchKind;
  couponCount: number;
  /** For a redelivery: the file it repeats byte for byte; for a same-state batch: the file whose state it repeats. */
  of?: string;
}

export interface ExpectedCoupon {
  status: number | null;
  realWin: string | null;
  settlementGeneration: number;
  needsReview: boolean;
  events: { uuid: string; status: number }[];
  /** `key=amount` of every financial operation, the stake debit included, sorted. */
  operations: string[];
}

export interface ManifestCoupon {
  coupon_code: string;
  accountId: string;
  stake: string;
  currency: string;
  type: 'single' | 'accumulator';
  expected: ExpectedCoupon;
}

export interface ManifestAccount {
  id: string;
  currency: string;
  /** Deposit to make before registering the coupons (POST /accounts/{id}/adjustments). */
  deposit: string;
  depositKey: string;
  expectedBalance: string;
}

export interface ManifestStats {
  coupons: number;
  singles: number;
  accumulators: number;
  accounts: number;
  files: number;
  stateBatches: number;
  redeliveries: number;
  sameStateBatches: number;
  snapshots: number;
  /** Expected final coupon status → number of coupons. */
  finalStatus: Record<string, number>;
  recalculationsWithRealWin: number;
  recalculationsWithoutRealWin: number;
  /** Several currencies only: final results finer than the coupon's currency (flagged, never paid). */
  finerThanCurrency?: number;
}

export interface Manifest {
  generator: 'sportapi-simulator';
  seed: number;
  prefix: string;
  /** The (first) currency. */
  currency: string;
  /** Several currencies only: each with its minor units. */
  currencies?: SequenceCurrency[];
  stats: ManifestStats;
  accounts: ManifestAccount[];
  coupons: ManifestCoupon[];
  batches: ManifestBatch[];
}

export interface GeneratedFile extends ManifestBatch {
  bytes: string;
}

interface Leg {
  uuid: string;
  /** Decimal odds in hundredths (185 = 1.85). */
  odds: number;
  outcome: number;
}

interface CouponPlan {
  code: string;
  accountId: string;
  /** In the currency's minor units (cents for EUR, yen for JPY, satoshi for BTC). */
  stakeCents: bigint;
  currency: SequenceCurrency;
  finerThanCurrency: boolean;
  type: 'single' | 'accumulator';
  snapshots: CouponSnapshot[];
  recalculationsWithRealWin: number;
  recalculationsWithoutRealWin: number;
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

function oddsText(hundredths: number): string {
  return `${Math.floor(hundredths / 100)}.${pad(hundredths % 100, 2)}`;
}

/** The coupon's result for the given event outcomes (CONTRACT §6 statuses), at `digits` minor units. */
function result(
  legs: Leg[],
  outcomes: number[],
  stakeCents: bigint,
  digits: number,
): { status: number; realWin: string } {
  if (outcomes.includes(EVENT_LOST)) return { status: STATUS_LOSS, realWin: '0' };
  if (outcomes.every((o) => o === EVENT_VOID))
    return { status: STATUS_REFUND, realWin: formatUnits(stakeCents, digits) };
  let numerator = stakeCents;
  let denominator = 1n;
  legs.forEach((leg, i) => {
    if (outcomes[i] === EVENT_WON) {
      numerator *= BigInt(leg.odds);
      denominator *= 100n;
    }
  });
  return { status: STATUS_WIN, realWin: formatUnits(numerator / denominator, digits) };
}

function planCoupon(
  rng: Rng,
  code: string,
  accountId: string,
  rounds: number,
  currency: SequenceCurrency,
  finerThanCurrency: boolean,
): CouponPlan {
  const digits = currency.minorUnits;
  const stakeCents = BigInt(rng.int(2, 100) * 50);
  const single = rng.chance(0.4);
  const cancelled = rng.chance(0.05);
  const legs: Leg[] = Array.from({ length: single ? 1 : rng.int(2, 6) }, () => {
    const roll = rng.int(0, 99);
    const outcome = roll < 6 ? EVENT_VOID : roll < (single ? 51 : 28) ? EVENT_LOST : EVENT_WON;
    return { uuid: rng.uuid(), odds: rng.int(115, 420), outcome: cancelled ? EVENT_VOID : outcome };
  });
  const snapshot = (status: number, realWin: string | null, eventStatuses: number[]): CouponSnapshot => ({
    coupon_code: code,
    status,
    realWin,
    events: legs.map((leg, i) => ({ uuid: leg.uuid, status: eventStatuses[i], odds: oddsText(leg.odds) })),
  });

  // Pending part: accepted, then events decided one by one.
  const open = rng.chance(0.1);
  const statuses = legs.map(() => EVENT_OPEN);
  const pending: CouponSnapshot[] = [];
  if (open || rng.chance(0.5)) pending.push(snapshot(STATUS_PENDING, null, statuses));
  const order = rng.shuffle(legs.map((_, i) => i));
  const decidedBeforeFinal = open ? rng.int(0, legs.length - 1) : legs.length - 1;
  for (let k = 0; k < decidedBeforeFinal; k++) {
    statuses[order[k]] = legs[order[k]].outcome;
    if (rng.chance(0.6)) pending.push(snapshot(STATUS_PENDING, null, statuses));
  }

  let finer = false;
  // Final result and recalculations, as groups so that whole groups can be left out to fit.
  const groups: { snapshots: CouponSnapshot[]; withRealWin: boolean }[] = [];
  if (!open) {
    let outcomes = legs.map((l) => l.outcome);
    const first = result(legs, outcomes, stakeCents, digits);
    // One digit finer than the currency (4350.5 for JPY): flagged by the receiver, never paid.
    if (finerThanCurrency && first.status === STATUS_WIN) {
      first.realWin = `${first.realWin}${digits === 0 ? '.' : ''}${rng.int(1, 9)}`;
      finer = true;
    }
    groups.push({ snapshots: [snapshot(first.status, first.realWin, outcomes)], withRealWin: false });
    let closed = true;
    for (let n = 0; n < 2 && closed && rng.chance(n === 0 ? 0.25 : 0.3); n++) {
      const changed = rng.int(0, legs.length - 1);
      const next = [...outcomes];
      next[changed] =
        outcomes[changed] === EVENT_WON ? (rng.chance(0.8) ? EVENT_LOST : EVENT_VOID) : EVENT_WON;
      const r = result(legs, next, stakeCents, digits);
      if (rng.chance(0.5)) {
        // status 15 carrying the new realWin, sometimes confirmed by the final status.
        const group = [snapshot(STATUS_RECALCULATION, r.realWin, next)];
        closed = rng.chance(0.5);
        if (closed) group.push(snapshot(r.status, r.realWin, next));
        groups.push({ snapshots: group, withRealWin: true });
      } else {
        // status 15 without realWin (the changed event reopened), then the new final result.
        const reopened = [...next];
        reopened[changed] = EVENT_OPEN;
        groups.push({
          snapshots: [snapshot(STATUS_RECALCULATION, null, reopened), snapshot(r.status, r.realWin, next)],
          withRealWin: false,
        });
      }
      outcomes = next;
    }
  }

  // Fit into the rounds: drop recalculations from the end, then random pending snapshots.
  let tailLength = 0;
  const kept: typeof groups = [];
  for (const group of groups) {
    if (tailLength + group.snapshots.length > rounds) break;
    kept.push(group);
    tailLength += group.snapshots.length;
  }
  while (pending.length + tailLength > rounds || (pending.length === 0 && tailLength === 0)) {
    if (pending.length === 0) pending.push(snapshot(STATUS_PENDING, null, statuses));
    else pending.splice(rng.int(0, pending.length - 1), 1);
  }
  return {
    code,
    accountId,
    stakeCents,
    currency,
    finerThanCurrency: finer && kept.length > 0,
    type: single ? 'single' : 'accumulator',
    snapshots: [...pending, ...kept.flatMap((g) => g.snapshots)],
    recalculationsWithRealWin: kept.slice(1).filter((g) => g.withRealWin).length,
    recalculationsWithoutRealWin: kept.slice(1).filter((g) => !g.withRealWin).length,
  };
}

function checkCount(name: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new Error(`${name} must be an integer from ${min} to ${max}`);
  }
  return value;
}

/** Builds the files and the manifest in memory; the same options give byte-identical output. */
export function buildSequence(options: GenerateOptions): { files: GeneratedFile[]; manifest: Manifest } {
  const rng = new Rng(options.seed);
  const couponCount = checkCount('coupons', options.coupons ?? 20, 1, 100_000);
  const rounds = checkCount('batches', options.batches ?? 10, 1, 100_000);
  const maxBatchSize = checkCount('maxBatchSize', options.maxBatchSize ?? 100, 1, 100);
  const prefix = options.prefix ?? `s${options.seed}`;
  if (!PREFIX.test(prefix)) throw new Error('prefix must be 1..12 of A-Z a-z 0-9 . _ -');
  const currencies = options.currencies ?? [{ code: options.currency ?? 'EUR', minorUnits: 2 }];
  if (!currencies.length) throw new Error('currencies must list at least one currency');
  const multi = currencies.length > 1;
  // The model counts in units of the finest currency of the sequence.
  const scale = Math.max(...currencies.map((c) => c.minorUnits));
  const toScale = (units: bigint, c: SequenceCurrency) => units * 10n ** BigInt(scale - c.minorUnits);

  const accountIds = Array.from(
    { length: Math.max(1, Math.ceil(couponCount / 4)) },
    (_, i) => `${prefix}-p${pad(i + 1, 3)}`,
  );
  const currencyOf = new Map(accountIds.map((id, i) => [id, currencies[i % currencies.length]]));
  const codes = new Set<string>();
  const plans: CouponPlan[] = [];
  for (let i = 0; i < couponCount; i++) {
    let code: string;
    do code = `${prefix}-${pad(rng.int(0, 99_999_999), 8)}`;
    while (codes.has(code));
    codes.add(code);
    const accountId = rng.pick(accountIds);
    const currency = currencyOf.get(accountId) as SequenceCurrency;
    // Several currencies: about 1 in 8 coupons of a coarser currency gets a finer final result.
    const finer = multi && currency.minorUnits < scale && rng.chance(0.125);
    plans.push(planCoupon(rng, code, accountId, rounds, currency, finer));
  }

  // Spread every coupon's snapshots over the rounds, in order.
  const byRound: CouponSnapshot[][] = Array.from({ length: rounds }, () => []);
  for (const plan of plans) {
    rng.sample(plan.snapshots.length, rounds).forEach((round, k) => byRound[round].push(plan.snapshots[k]));
  }
  const stateBatches: CouponSnapshot[][] = [];
  for (const round of byRound) {
    const shuffled = rng.shuffle(round);
    for (let i = 0; i < shuffled.length; i += maxBatchSize)
      stateBatches.push(shuffled.slice(i, i + maxBatchSize));
  }

  // The delivery sequence: state batches, same-state copies at once, redeliveries a little later.
  const files: GeneratedFile[] = [];
  const nameWidth = Math.max(4, String(stateBatches.length * 2).length);
  let batchNumber = 0;
  const serialise = (batchId: string, coupons: CouponSnapshot[]): string => {
    const body = { batchId, couponCount: coupons.length, coupons };
    return rng.chance(0.25) ? `${JSON.stringify(body, null, 2)}\n` : JSON.stringify(body);
  };
  const emit = (entry: Omit<GeneratedFile, 'file'>): GeneratedFile => {
    const file = { file: `${pad(files.length + 1, nameWidth)}.json`, ...entry };
    files.push(file);
    return file;
  };
  const newBatch = (kind: BatchKind, coupons: CouponSnapshot[], of?: string): GeneratedFile => {
    const batchId = `${prefix}-b${pad(++batchNumber, 6)}`;
    return emit({ batchId, kind, couponCount: coupons.length, bytes: serialise(batchId, coupons), of });
  };
  const due: { at: number; original: GeneratedFile }[] = [];
  const redeliver = (original: GeneratedFile) =>
    emit({
      batchId: original.batchId,
      kind: 'redelivery',
      couponCount: original.couponCount,
      bytes: original.bytes,
      of: original.file,
    });
  stateBatches.forEach((coupons, index) => {
    const original = newBatch('state', coupons);
    if (rng.chance(0.1)) newBatch('same-state', coupons, original.file);
    if (rng.chance(0.2)) due.push({ at: index + rng.int(0, 3), original });
    for (const d of due.filter((d) => d.at === index)) redeliver(d.original);
  });
  for (const d of due.filter((d) => d.at >= stateBatches.length)) redeliver(d.original);

  // What a conforming receiver ends with: each batchId applied once, in file order.
  const models = new Map(plans.map((p) => [p.code, new CouponModel(p.code, scale)]));
  for (const plan of plans)
    models.get(plan.code)?.register(toScale(plan.stakeCents, plan.currency), plan.currency.minorUnits);
  for (const file of files) {
    if (file.kind === 'redelivery') continue;
    for (const snapshot of (JSON.parse(file.bytes) as { coupons: CouponSnapshot[] }).coupons) {
      models.get(snapshot.coupon_code)?.apply(snapshot);
    }
  }

  const coupons: ManifestCoupon[] = plans.map((plan) => {
    const model = models.get(plan.code) as CouponModel;
    return {
      coupon_code: plan.code,
      accountId: plan.accountId,
      stake: formatUnits(plan.stakeCents, plan.currency.minorUnits),
      currency: plan.currency.code,
      type: plan.type,
      expected: {
        status: model.status,
        realWin: model.realWin === null ? null : model.show(model.realWin),
        settlementGeneration: model.generation,
        needsReview: model.needsReview,
        events: [...model.events]
          .map(([uuid, status]) => ({ uuid, status }))
          .sort((a, b) => (a.uuid < b.uuid ? -1 : 1)),
        operations: model.operationList(),
      },
    };
  });
  const accounts: ManifestAccount[] = accountIds.map((id) => {
    const own = plans.filter((p) => p.accountId === id);
    const currency = currencyOf.get(id) as SequenceCurrency;
    const deposit = own.reduce((sum, p) => sum + p.stakeCents, 0n) + BigInt(rng.int(1, 20) * 500);
    const net = own.reduce((sum, p) => sum + (models.get(p.code) as CouponModel).netCents, 0n);
    return {
      id,
      currency: currency.code,
      deposit: formatUnits(deposit, currency.minorUnits),
      depositKey: `${id}-deposit`,
      expectedBalance: formatUnits(toScale(deposit, currency) + net, scale, currency.minorUnits),
    };
  });
  const finalStatus: Record<string, number> = {};
  for (const c of coupons) {
    const key = String(c.expected.status);
    finalStatus[key] = (finalStatus[key] ?? 0) + 1;
  }
  const count = (kind: BatchKind) => files.filter((f) => f.kind === kind).length;
  const manifest: Manifest = {
    generator: 'sportapi-simulator',
    seed: options.seed,
    prefix,
    currency: currencies[0].code,
    ...(multi ? { currencies } : {}),
    stats: {
      coupons: couponCount,
      singles: plans.filter((p) => p.type === 'single').length,
      accumulators: plans.filter((p) => p.type === 'accumulator').length,
      accounts: accounts.length,
      files: files.length,
      stateBatches: count('state'),
      redeliveries: count('redelivery'),
      sameStateBatches: count('same-state'),
      snapshots: plans.reduce((sum, p) => sum + p.snapshots.length, 0),
      finalStatus,
      recalculationsWithRealWin: plans.reduce((sum, p) => sum + p.recalculationsWithRealWin, 0),
      recalculationsWithoutRealWin: plans.reduce((sum, p) => sum + p.recalculationsWithoutRealWin, 0),
      ...(multi ? { finerThanCurrency: plans.filter((p) => p.finerThanCurrency).length } : {}),
    },
    accounts,
    coupons,
    batches: files.map(({ file, batchId, kind, couponCount, of }) =>
      of === undefined ? { file, batchId, kind, couponCount } : { file, batchId, kind, couponCount, of },
    ),
  };
  return { files, manifest };
}

export interface GenerateResult {
  out: string;
  manifest: Manifest;
}

/**
 * Writes the batch files (`0001.json`, …) and `coupons.json` into `out`. A folder that already
 * holds `.json` files is refused unless `force` (which deletes them first), so two sequences
 * never mix.
 */
export async function generate(
  options: GenerateOptions & { out: string; force?: boolean },
): Promise<GenerateResult> {
  const { files, manifest } = buildSequence(options);
  await mkdir(options.out, { recursive: true });
  const existing = (await readdir(options.out)).filter((name) => name.endsWith('.json'));
  if (existing.length > 0) {
    if (!options.force) {
      throw new Error(`${options.out} already holds .json files; choose an empty folder or pass --force`);
    }
    await Promise.all(existing.map((name) => rm(join(options.out, name))));
  }
  for (const file of files) await writeFile(join(options.out, file.file), file.bytes);
  await writeFile(join(options.out, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`);
  return { out: options.out, manifest };
}

/** One-line description of a generated sequence for the CLI. */
export function describeManifest(manifest: Manifest): string {
  const s = manifest.stats;
  const statuses = Object.entries(s.finalStatus)
    .map(([status, n]) => `${status}:${n}`)
    .join(' ');
  return (
    `${s.files} files (${s.stateBatches} state batches, ${s.redeliveries} redeliveries, ` +
    `${s.sameStateBatches} same-state batches), ${s.coupons} coupons (${s.singles} singles, ` +
    `${s.accumulators} accumulators) on ${s.accounts} accounts, ${s.snapshots} snapshots, ` +
    `${s.recalculationsWithRealWin + s.recalculationsWithoutRealWin} recalculations ` +
    `(${s.recalculationsWithRealWin} with realWin), final statuses ${statuses}` +
    (manifest.currencies
      ? `; currencies ${manifest.currencies.map((c) => `${c.code}:${c.minorUnits}`).join(',')}, ` +
        `${s.finerThanCurrency} results finer than their currency`
      : '')
  );
}
