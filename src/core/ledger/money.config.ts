import Joi from 'joi';
import {
  CURRENCY_CODE,
  CurrencyTable,
  LEGACY_MINOR_UNITS,
  MAX_MINOR_UNITS,
} from '../../platform/common/currency.js';
import { configFragment, csv } from '../../platform/config/config-fragment.js';

/** Money (CONTRACT §3, §7): the currencies and the house's settlement sub-accounts. */
export interface MoneyConfig {
  /**
   * Deprecated (`AMOUNT_SCALE`): minor units of a currency stored before per-currency precision
   * that neither ISO 4217 nor `CURRENCY_MINOR_UNITS` knows; every other currency has its own.
   */
  amountScale: number;
  /** Allowed currencies and every known currency's minor units (CONTRACT §3). */
  currencies: CurrencyTable;
  /** House settlement sub-accounts per currency; a posting takes a free one (CONTRACT §7). */
  houseSubAccounts: number;
  /** Start-up warnings of these variables (deprecated `AMOUNT_SCALE`), logged once the logger is up. */
  warnings: string[];
}

/** One `CODE:digits` of CURRENCY_MINOR_UNITS. */
const MINOR_UNITS_PAIR = new RegExp(`^[A-Z0-9]{3,8}\\s*:\\s*[0-${MAX_MINOR_UNITS}]$`);

const schema: Joi.PartialSchemaMap = {
  HOUSE_SUB_ACCOUNTS: Joi.number().integer().min(1).max(256).default(16),
  // Deprecated: only the minor units of a currency neither ISO 4217 nor CURRENCY_MINOR_UNITS knows.
  AMOUNT_SCALE: Joi.number().integer().min(0).max(2).optional(),
  CURRENCY_MINOR_UNITS: Joi.string()
    .custom((v: string, helpers) => {
      const bad = csv(v).filter((pair) => !MINOR_UNITS_PAIR.test(pair));
      const codes = csv(v).map((pair) => pair.split(':')[0].trim());
      const twice = codes.filter((c, i) => codes.indexOf(c) !== i);
      if (bad.length || twice.length)
        return helpers.message({
          custom: `CURRENCY_MINOR_UNITS must look like "USDT:6,BTC:8,JPY:0" (code of 3..8 A-Z 0-9, digits 0..${MAX_MINOR_UNITS}, each code once): ${[...bad, ...twice].join(', ')}`,
        });
      return v;
    })
    .optional(),
  CURRENCIES: Joi.string()
    .custom((v: string, helpers) => {
      const bad = csv(v).filter((c) => !CURRENCY_CODE.test(c));
      if (bad.length || !csv(v).length)
        return helpers.message({
          custom: `CURRENCIES must be comma-separated currency codes (3..8 of A-Z 0-9): ${bad.join(', ') || 'none given'}`,
        });
      return v;
    })
    .optional(),
};

/**
 * The currency table of `CURRENCY_MINOR_UNITS`, `CURRENCIES` and `AMOUNT_SCALE` (values as Joi
 * validated them). @throws Error naming the variable when `CURRENCIES` lists an unknown code.
 */
function currencyTable(v: Record<string, unknown>): CurrencyTable {
  const overrides = Object.fromEntries(
    csv(v.CURRENCY_MINOR_UNITS as string | undefined).map((pair) => {
      const [code, digits] = pair.split(':').map((s) => s.trim());
      return [code, Number(digits)];
    }),
  );
  const allowed = v.CURRENCIES === undefined ? null : csv(v.CURRENCIES as string);
  try {
    return CurrencyTable.of(overrides, allowed, (v.AMOUNT_SCALE as number | undefined) ?? LEGACY_MINOR_UNITS);
  } catch (err) {
    throw new Error(`Invalid configuration:\n  - CURRENCIES: ${(err as Error).message}`, { cause: err });
  }
}

/** `HOUSE_SUB_ACCOUNTS`, `AMOUNT_SCALE` (deprecated), `CURRENCY_MINOR_UNITS`, `CURRENCIES` (docs/configuration.md#currencies). */
export const moneyConfig = configFragment('money', {
  schema,
  /** @throws Error naming `CURRENCIES` when it lists an unknown code. */
  build: (v): MoneyConfig => ({
    amountScale: (v.AMOUNT_SCALE as number | undefined) ?? LEGACY_MINOR_UNITS,
    currencies: currencyTable(v),
    houseSubAccounts: v.HOUSE_SUB_ACCOUNTS as number,
    warnings:
      v.AMOUNT_SCALE === undefined
        ? []
        : [
            'AMOUNT_SCALE is deprecated: each currency has its own minor units (ISO 4217, CURRENCY_MINOR_UNITS); ' +
              'it now only sets those of a stored currency that neither knows (docs/configuration.md#currencies)',
          ],
  }),
});

/** Injection token of the {@link MoneyConfig} slice. */
export const MONEY_CONFIG = moneyConfig.token;

/**
 * The currency table alone, from the environment (`npm run ledger:verify` needs no secrets).
 * @throws Error naming a wrong currency variable.
 */
export function loadCurrencyTable(env: NodeJS.ProcessEnv = process.env): CurrencyTable {
  const v: Record<string, unknown> = {};
  for (const name of ['CURRENCY_MINOR_UNITS', 'CURRENCIES', 'AMOUNT_SCALE']) {
    if (env[name] === undefined || env[name] === '') continue;
    const { error, value } = (schema[name] as Joi.Schema).validate(env[name], { convert: true });
    if (error) throw new Error(`Invalid configuration:\n  - ${name}: ${error.message}`);
    v[name] = value;
  }
  return currencyTable(v);
}
