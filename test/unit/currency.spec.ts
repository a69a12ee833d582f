import {
  CurrencyTable,
  ISO_4217_MINOR_UNITS,
  ISO_4217_PUBLISHED,
  LEGACY_MINOR_UNITS,
} from '../../src/platform/common/currency.js';
import { fractionDigits, formatAmount, parseAmount } from '../../src/platform/common/money.js';
import { loadConfig } from '../../src/app.config.js';
import { loadCurrencyTable } from '../../src/core/ledger/money.config.js';
import { REQUIRED_ENV } from '../support/secrets.js';

// Minor units per currency (CONTRACT §3 "at most the currency's minor-unit digits"): ISO 4217 by
// default, CURRENCY_MINOR_UNITS on top, CURRENCIES restricting what is accepted (issue 17).

const base = REQUIRED_ENV;
const crypto = { ...base, CURRENCY_MINOR_UNITS: 'USDT:6,BTC:8' };

describe('ISO 4217 minor units (currency-codes)', () => {
  it.each([
    ['JPY', 0],
    ['KRW', 0],
    ['ISK', 0],
    ['XOF', 0],
    ['EUR', 2],
    ['USD', 2],
    ['HUF', 2],
    ['IDR', 2],
    ['KWD', 3],
    ['BHD', 3],
    ['IQD', 3],
    ['TND', 3],
    ['CLF', 4],
    ['UYW', 4],
  ])('%s has %i', (code, digits) => {
    expect(ISO_4217_MINOR_UNITS.get(code)).toBe(digits);
  });

  it('leaves out the codes ISO lists without minor units (N.A.) and knows 166 currencies', () => {
    for (const code of ['XAU', 'XAG', 'XPT', 'XPD', 'XDR', 'XBA', 'XSU', 'XUA', 'XTS', 'XXX'])
      expect(ISO_4217_MINOR_UNITS.has(code)).toBe(false);
    expect(ISO_4217_MINOR_UNITS.size).toBe(166);
    expect(ISO_4217_PUBLISHED).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });
});

describe('CurrencyTable', () => {
  it('defaults: every ISO currency allowed, the largest precision 4 (CLF, UYW)', () => {
    const t = loadConfig(base).money.currencies;
    expect([t.isAllowed('EUR'), t.isAllowed('JPY'), t.isAllowed('USDT'), t.isAllowed('XAU')]).toEqual([
      true,
      true,
      false,
      false,
    ]);
    expect(t.maxMinorUnits).toBe(4);
    expect(t.minorUnits('NOTACODE')).toBe(LEGACY_MINOR_UNITS);
  });

  it('CURRENCY_MINOR_UNITS overrides and extends, CURRENCIES restricts', () => {
    const t = loadConfig({
      ...crypto,
      CURRENCY_MINOR_UNITS: 'USDT:6, BTC:8,JPY:0,HUF:0',
      CURRENCIES: 'EUR,JPY,KWD',
    }).money.currencies;
    expect(t.allowedCodes()).toEqual(['EUR', 'JPY', 'KWD']);
    expect(t.maxMinorUnits).toBe(3);
    expect([t.minorUnits('HUF'), t.minorUnits('BTC'), t.isAllowed('BTC'), t.isAllowed('USD')]).toEqual([
      0,
      8,
      false,
      false,
    ]);
    expect(loadConfig(crypto).money.currencies.maxMinorUnits).toBe(8);
    expect(loadConfig({ ...crypto, CURRENCIES: 'JPY' }).money.currencies.maxMinorUnits).toBe(0);
  });

  it.each([
    ['JPY', '1500', true, '1500'],
    ['JPY', '1500.00', true, '1500'],
    ['JPY', '1500.50', false, '1500.5'],
    ['EUR', '185.5', true, '185.50'],
    ['EUR', '185.505', false, '185.505'],
    ['KWD', '12.345', true, '12.345'],
    ['KWD', '12.3456', false, '12.3456'],
    ['USDT', '0.000001', true, '0.000001'],
    ['USDT', '0.0000001', false, '0.0000001'],
    ['BTC', '0.00012345', true, '0.00012345'],
    ['BTC', '0.12345000', true, '0.12345000'],
  ])('%s %s fits: %s, shown as %s (never rounded)', (code, amount, fits, shown) => {
    const t = loadConfig(crypto).money.currencies;
    expect(t.fits(amount, code)).toBe(fits);
    expect(t.format(amount, code)).toBe(shown);
  });

  it('shows an unallocated coupon amount (no currency) with 2 digits or more', () => {
    const t = loadConfig(base).money.currencies;
    expect(t.format('185.50000000', null)).toBe('185.50');
    expect(t.format('0.00012345', null)).toBe('0.00012345');
  });

  it.each([
    [{ CURRENCY_MINOR_UNITS: 'usdt:6' }, 'CURRENCY_MINOR_UNITS'],
    [{ CURRENCY_MINOR_UNITS: 'USDT:9' }, 'CURRENCY_MINOR_UNITS'],
    [{ CURRENCY_MINOR_UNITS: 'US:2' }, 'CURRENCY_MINOR_UNITS'],
    [{ CURRENCY_MINOR_UNITS: 'ABCDEFGHI:2' }, 'CURRENCY_MINOR_UNITS'],
    [{ CURRENCY_MINOR_UNITS: 'BTC:8,BTC:6' }, 'CURRENCY_MINOR_UNITS'],
    [{ CURRENCY_MINOR_UNITS: 'BTC=8' }, 'CURRENCY_MINOR_UNITS'],
    [{ CURRENCIES: 'EUR,XYZ' }, 'CURRENCIES'],
    [{ CURRENCIES: 'EUR,XAU' }, 'CURRENCIES'],
    [{ CURRENCIES: 'eur' }, 'CURRENCIES'],
    [{ CURRENCIES: ' , ' }, 'CURRENCIES'],
    [{ AMOUNT_SCALE: '3' }, 'AMOUNT_SCALE'],
  ])('a wrong currency variable stops the start with its name (%#)', (env, name) => {
    expect(() => loadConfig({ ...base, ...env })).toThrow(name);
  });

  it('AMOUNT_SCALE is a deprecated alias: a warning, and only the digits of an unknown stored currency', () => {
    expect(loadConfig(base).money.warnings).toEqual([]);
    const c = loadConfig({ ...base, AMOUNT_SCALE: '0' }).money;
    expect(c.warnings).toEqual([expect.stringMatching(/^AMOUNT_SCALE is deprecated/)]);
    expect([c.amountScale, c.currencies.minorUnits('EUR'), c.currencies.minorUnits('ABC')]).toEqual([
      0, 2, 0,
    ]);
  });

  it('loadCurrencyTable reads the currency variables alone (ledger:verify)', () => {
    const t = loadCurrencyTable({ CURRENCY_MINOR_UNITS: 'BTC:8', CURRENCIES: 'BTC,EUR' });
    expect([t.maxMinorUnits, t.allowedCodes()]).toEqual([8, ['BTC', 'EUR']]);
    expect(() => loadCurrencyTable({ CURRENCIES: 'ZZZ' })).toThrow('CURRENCIES');
  });

  it('rejects a table it cannot hold', () => {
    expect(() => CurrencyTable.of({ ETH: 18 })).toThrow('0..8');
    expect(() => CurrencyTable.of({}, [])).toThrow('no currency');
  });
});

describe('amounts by value (issue 17)', () => {
  it.each([
    ['1500.00', 0, '1500'],
    ['1500', 0, '1500'],
    ['12.3450', 3, '12.345'],
    ['0.00012345', 8, '0.00012345'],
    ['9999999999999.99999999', 8, '9999999999999.99999999'],
  ])('parseAmount(%p, %i) = %p', (text, scale, want) => {
    expect(parseAmount(text, scale)).toBe(want);
  });

  it.each([
    ['1500.5', 0],
    ['12.3456', 3],
    ['0.000000001', 8],
  ])('parseAmount(%p, %i) refuses a value finer than the scale', (text, scale) => {
    expect(parseAmount(text, scale)).toBeNull();
  });

  it('fractionDigits counts what the value needs; formatAmount never rounds', () => {
    expect(['185.50000000', '1500.00', '1500', '0.00012345'].map(fractionDigits)).toEqual([1, 0, 0, 8]);
    expect(formatAmount('185.505', 2)).toBe('185.505');
    expect(formatAmount('1500.00000000', 0)).toBe('1500');
  });
});
