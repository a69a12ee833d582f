import { ValidationPipe, ValidationPipeOptions } from '@nestjs/common';
import {
  registerDecorator,
  ValidationArguments,
  ValidationError,
  ValidationOptions,
  ValidatorOptions,
} from 'class-validator';
import { CURRENCY_CODE, CurrencyTable, MAX_MINOR_UNITS } from './currency.js';
import { isLosslessNumber } from 'lossless-json';
import { FieldError } from './domain.exception.js';
import { parseAmount } from './money.js';

/** Where {@link CurrencyValidationPipe} puts the currency table on the object it validates. */
const CURRENCY_TABLE = Symbol('currencyTable');

function currencyTableOf(object: object): CurrencyTable | undefined {
  return (object as Record<symbol, CurrencyTable | undefined>)[CURRENCY_TABLE];
}

/**
 * The global validation pipe of the partner API: class-validator's, with the receiver's currency
 * table handed to {@link IsDecimalAmount} and {@link IsAllowedCurrency} (CONTRACT §3, §10).
 */
export class CurrencyValidationPipe extends ValidationPipe {
  constructor(
    private readonly currencies: CurrencyTable,
    options: ValidationPipeOptions,
  ) {
    super(options);
  }

  protected validate(object: object, validatorOptions?: ValidatorOptions) {
    Object.defineProperty(object, CURRENCY_TABLE, { value: this.currencies, configurable: true });
    return super.validate(object, validatorOptions);
  }
}

interface DecimalAmountOptions {
  /** Fraction digits allowed; default: those of the currency in `currencyField`, else the most any allowed currency has. */
  scale?: number;
  /** Property holding the amount's currency code. */
  currencyField?: string;
  allowNegative?: boolean;
  allowZero?: boolean;
  allowNumber?: boolean;
}

/** Fraction digits an amount may have (see {@link DecimalAmountOptions.scale}). */
function amountScale(opts: DecimalAmountOptions, object: object): number {
  if (opts.scale !== undefined) return opts.scale;
  const table = currencyTableOf(object);
  if (!table) return MAX_MINOR_UNITS;
  const currency = opts.currencyField ? (object as Record<string, unknown>)[opts.currencyField] : undefined;
  return typeof currency === 'string' && table.isAllowed(currency)
    ? table.minorUnits(currency)
    : table.maxMinorUnits;
}

/**
 * Property is a decimal amount: a JSON string (or number) of at most 13 integer digits whose value
 * needs no more fraction digits than its currency has (`"1500"` JPY, `"12.345"` KWD; see
 * {@link DecimalAmountOptions.scale}), positive unless `allowNegative`/`allowZero` say otherwise.
 */
export function IsDecimalAmount(
  opts: DecimalAmountOptions = {},
  validationOptions?: ValidationOptions,
): PropertyDecorator {
  const sign = opts.allowNegative
    ? opts.allowZero
      ? ''
      : ', not zero'
    : opts.allowZero
      ? ', not negative'
      : ', greater than zero';
  return (object: object, propertyName: string | symbol) => {
    registerDecorator({
      name: 'isDecimalAmount',
      target: object.constructor,
      propertyName: propertyName as string,
      options: {
        message: (args: ValidationArguments) =>
          `${args.property} must be a decimal string with at most ${amountScale(opts, args.object)} fraction digits${sign}`,
        ...validationOptions,
      },
      validator: {
        validate(value: unknown, args: ValidationArguments): boolean {
          if (typeof value !== 'string' && !(opts.allowNumber && typeof value === 'number')) return false;
          const parsed = parseAmount(value, amountScale(opts, args.object), opts.allowNegative);
          if (parsed === null) return false;
          if (!opts.allowZero && /^-?0(\.0+)?$/.test(parsed)) return false;
          return true;
        },
      },
    });
  };
}

/**
 * Property is a currency code the receiver accepts: 3..8 of A-Z 0-9, ISO 4217 or configured in
 * `CURRENCY_MINOR_UNITS`, and in `CURRENCIES` when that is set.
 */
export function IsAllowedCurrency(validationOptions?: ValidationOptions): PropertyDecorator {
  return (object: object, propertyName: string | symbol) => {
    registerDecorator({
      name: 'isAllowedCurrency',
      target: object.constructor,
      propertyName: propertyName as string,
      options: {
        message: (args: ValidationArguments) => {
          const table = currencyTableOf(args.object);
          const codes = table?.allowedCodes() ?? [];
          return `${args.property} must be an allowed currency code (3..8 of A-Z 0-9${
            codes.length && codes.length <= 20
              ? `: ${codes.join(', ')}`
              : ', ISO 4217 or CURRENCY_MINOR_UNITS'
          })`;
        },
        ...validationOptions,
      },
      validator: {
        validate(value: unknown, args: ValidationArguments): boolean {
          if (typeof value !== 'string' || !CURRENCY_CODE.test(value)) return false;
          return currencyTableOf(args.object)?.isAllowed(value) ?? true;
        },
      },
    });
  };
}

/** Flattens class-validator errors into JSON paths (`coupons[0].events[1].uuid`) and messages. */
export function flattenValidationErrors(errors: ValidationError[], prefix = ''): FieldError[] {
  const out: FieldError[] = [];
  for (const e of errors) {
    const path = /^\d+$/.test(e.property)
      ? `${prefix}[${e.property}]`
      : prefix
        ? `${prefix}.${e.property}`
        : e.property;
    for (const message of Object.values(e.constraints ?? {})) out.push({ path, message });
    if (e.children?.length) out.push(...flattenValidationErrors(e.children, path));
  }
  return out;
}

/** U+0000 or an unpaired UTF-16 surrogate: valid in JSON, not storable in PostgreSQL text. */
export const UNSTORABLE_TEXT =
  // eslint-disable-next-line no-control-regex -- U+0000 is exactly what is looked for
  /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Property is a string PostgreSQL can store: no U+0000, no unpaired surrogates. */
export function IsStorableText(validationOptions?: ValidationOptions): PropertyDecorator {
  return (object: object, propertyName: string | symbol) => {
    registerDecorator({
      name: 'isStorableText',
      target: object.constructor,
      propertyName: propertyName as string,
      options: { message: '$property must not contain U+0000 or unpaired surrogates', ...validationOptions },
      validator: {
        validate: (value: unknown) => typeof value !== 'string' || !UNSTORABLE_TEXT.test(value),
      },
    });
  };
}

const UNSTORABLE_TEXT_ALL = new RegExp(UNSTORABLE_TEXT.source, 'g');

/** The string with U+0000 and unpaired surrogates replaced by U+FFFD (storable in text/jsonb). */
export function toStorableText(value: string): string {
  return value.replace(UNSTORABLE_TEXT_ALL, '\ufffd');
}

/**
 * Copy of a parsed JSON value that PostgreSQL jsonb can hold: U+0000 and unpaired surrogates in
 * strings and keys become U+FFFD (`LosslessNumber`s are kept as they are).
 */
export function toStorable(value: unknown): unknown {
  if (isLosslessNumber(value)) return value;
  if (typeof value === 'string') return toStorableText(value);
  if (Array.isArray(value)) return value.map(toStorable);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [toStorableText(k), toStorable(v)]));
  }
  return value;
}
