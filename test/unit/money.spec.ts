import {
  addAmounts,
  formatAmount,
  isPositive,
  lessThan,
  negate,
  parseAmount,
  sameAmount,
} from '../../src/platform/common/money.js';

describe('money (CONTRACT §3, §7: decimal, never floating point)', () => {
  it.each([
    ['185.50', '185.50'],
    ['185.5', '185.50'],
    ['7', '7.00'],
    ['0', '0.00'],
    [12.5, '12.50'],
    [0, '0.00'],
    [1e3, '1000.00'],
    ['9999999999999.99', '9999999999999.99'],
  ])('parses %p as %p', (input, want) => {
    expect(parseAmount(input, 2)).toBe(want);
  });

  it.each([
    ['abc'],
    ['1.005'],
    ['-1.00'],
    [''],
    ['1e3'],
    ['0x10'],
    ['1,50'],
    ['10000000000000.00'],
    [NaN],
    [Infinity],
    [1.005],
    [1e21],
    [null],
    [true],
    [{}],
    ['.5'],
    ['5.'],
  ])('rejects %p', (input) => {
    expect(parseAmount(input, 2)).toBeNull();
  });

  it('accepts negatives only when asked', () => {
    expect(parseAmount('-30.00', 2, true)).toBe('-30.00');
    expect(parseAmount('-30.00', 2)).toBeNull();
  });

  it('respects the currency scale (AMOUNT_SCALE 0..2)', () => {
    expect(parseAmount('1.5', 0)).toBeNull();
    expect(parseAmount('15', 0)).toBe('15');
    expect(parseAmount('1.2', 1)).toBe('1.2');
    expect(parseAmount('1.23', 1)).toBeNull();
  });

  it('adds without floating point error', () => {
    expect(addAmounts(['0.10', '0.20'])).toBe('0.30');
    expect(addAmounts(Array(10).fill('0.10'))).toBe('1.00');
    expect(addAmounts(['9999999999999.99', '0.01'])).toBe('10000000000000.00');
  });

  it('compares and formats exactly', () => {
    expect(sameAmount('5', '5.00')).toBe(true);
    expect(sameAmount('5.01', '5.00')).toBe(false);
    expect(isPositive('0.00')).toBe(false);
    expect(isPositive('0.01')).toBe(true);
    expect(lessThan('9.99', '10')).toBe(true);
    expect(negate('25.50')).toBe('-25.50');
    expect(formatAmount('90')).toBe('90.00');
  });
});
