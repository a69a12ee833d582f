import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import currencyCodes from 'currency-codes';
import { formatAmount, fractionDigits, Money } from './money.js';

/**
 * Currencies and their minor units (CONTRACT §3: an amount has at most its currency's minor-unit
 * digits). Defaults: ISO 4217 (list one, from the `currency-codes` package); overridden and
 * extended by `CURRENCY_MINOR_UNITS`, restricted by `CURRENCIES` (docs/configuration.md#currencies).
 */

/** Most fraction digits any amount can have: the scale of every money column, `numeric(26,8)`. */
export const MAX_MINOR_UNITS = 8;

/** A currency code: ISO 4217's three letters, or 3..8 of A-Z 0-9 for a configured one (`USDT`). */
export const CURRENCY_CODE = /^[A-Z0-9]{3,8}$/;

/**
 * Minor units of a currency that neither ISO 4217 nor `CURRENCY_MINOR_UNITS` knows: only a row
 * stored before per-currency precision can hold one (new ones are refused). The former
 * `AMOUNT_SCALE` default; `AMOUNT_SCALE` (deprecated) still sets it.
 */
export const LEGACY_MINOR_UNITS = 2;

/** Codes ISO 4217 lists with minor units "N.A." (gold, SDR, bond market units, XTS, XXX). */
function isoCodesWithoutMinorUnits(): Set<string> {
  // currency-codes reads ISO's list-one XML and turns "N.A." into 0 digits; the list it ships
  // tells them apart.
  const xml = readFileSync(
    createRequire(import.meta.url).resolve('currency-codes/iso-4217-list-one.xml'),
    'utf8',
  );
  const codes = new Set<string>();
  for (const [, entry] of xml.matchAll(/<CcyNtry>([\s\S]*?)<\/CcyNtry>/g)) {
    const code = /<Ccy>([A-Z]{3})<\/Ccy>/.exec(entry)?.[1];
    if (code && /<CcyMnrUnts>N\.A\.<\/CcyMnrUnts>/.test(entry)) codes.add(code);
  }
  return codes;
}

/** ISO 4217 currency code → minor units (JPY 0, EUR 2, KWD 3, CLF 4), codes without any left out. */
export const ISO_4217_MINOR_UNITS: ReadonlyMap<string, number> = (() => {
  const none = isoCodesWithoutMinorUnits();
  return new Map(
    currencyCodes.data
      .filter((c) => !none.has(c.code) && Number.isInteger(c.digits))
      .map((c) => [c.code, c.digits]),
  );
})();

/** Publication date of the ISO 4217 list the defaults come from (e.g. `2024-06-25`). */
export const ISO_4217_PUBLISHED: string = currencyCodes.publishDate;

/**
 * The currencies a receiver accepts and the minor units of every currency it knows. Immutable;
 * built once from the configuration ({@link CurrencyTable.of}).
 */
export class CurrencyTable {
  /** Most fraction digits an amount of any allowed currency has (a callback `realWin` may have). */
  readonly maxMinorUnits: number;

  private constructor(
    private readonly known: ReadonlyMap<string, number>,
    private readonly allowed: ReadonlySet<string> | null,
    /** Minor units of a currency that is not known ({@link LEGACY_MINOR_UNITS} unless configured). */
    readonly legacyMinorUnits: number,
  ) {
    this.maxMinorUnits = Math.max(...(allowed ? [...allowed].map((c) => known.get(c) ?? 0) : known.values()));
  }

  /**
   * ISO 4217 with `overrides` (code → minor units) on top; `allowed` restricts the accepted
   * currencies (null: every known one). @throws Error naming a code that is not known, or digits
   * outside 0..{@link MAX_MINOR_UNITS}.
   */
  static of(
    overrides: Readonly<Record<string, number>> = {},
    allowed: readonly string[] | null = null,
    legacyMinorUnits = LEGACY_MINOR_UNITS,
  ): CurrencyTable {
    for (const [code, digits] of Object.entries(overrides)) {
      if (!CURRENCY_CODE.test(code)) throw new Error(`${code} is not a currency code (3..8 of A-Z 0-9)`);
      if (!Number.isInteger(digits) || digits < 0 || digits > MAX_MINOR_UNITS)
        throw new Error(`${code}: minor units must be 0..${MAX_MINOR_UNITS}`);
    }
    const known = new Map([...ISO_4217_MINOR_UNITS, ...Object.entries(overrides)]);
    const unknown = (allowed ?? []).filter((c) => !known.has(c));
    if (unknown.length) throw new Error(`not ISO 4217 nor in CURRENCY_MINOR_UNITS: ${unknown.join(', ')}`);
    if (allowed && !allowed.length) throw new Error('no currency allowed');
    return new CurrencyTable(known, allowed ? new Set(allowed) : null, legacyMinorUnits);
  }

  /** Whether new amounts may be in `code` (registrations, adjustments). */
  isAllowed(code: string): boolean {
    return this.allowed ? this.allowed.has(code) : this.known.has(code);
  }

  /** The allowed codes, sorted. */
  allowedCodes(): string[] {
    return [...(this.allowed ?? this.known.keys())].sort();
  }

  /** Minor units of `code`: known, else those of a legacy currency ({@link LEGACY_MINOR_UNITS}). */
  minorUnits(code: string): number {
    return this.known.get(code) ?? this.legacyMinorUnits;
  }

  /** Whether `amount` needs no more fraction digits than `code` has (`"1500.00"` fits JPY). */
  fits(amount: Money, code: string): boolean {
    return fractionDigits(amount) <= this.minorUnits(code);
  }

  /**
   * `amount` at the precision of `code` (`"1500"` JPY, `"12.345"` KWD, `"0.00012345"` BTC); an
   * amount finer than its currency keeps every digit (never rounded); a null currency (an
   * unallocated coupon) shows {@link LEGACY_MINOR_UNITS} digits or more.
   */
  format(amount: Money, code: string | null): Money {
    return formatAmount(amount, code === null ? LEGACY_MINOR_UNITS : this.minorUnits(code));
  }

  /** The minor units of every known currency, for SQL (the ledger verifier's precision check). */
  toJson(): string {
    return JSON.stringify(Object.fromEntries(this.known));
  }
}
