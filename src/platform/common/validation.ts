import { applyDecorators, ArgumentMetadata, PipeTransform, ValidationPipe } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import {
  IsOptional,
  IsString,
  Matches,
  registerDecorator,
  ValidationArguments,
  ValidationError,
  ValidationOptions,
  ValidatorOptions,
} from 'class-validator';
import { CURRENCY_CODE, CurrencyTable, MAX_MINOR_UNITS } from './currency.js';
import { isLosslessNumber } from 'lossless-json';
import { DomainException, ErrorCode, FieldError } from './domain.exception.js';
import { parseAmount } from './money.js';

/** Where {@link CurrencyValidationPipe} puts the currency table on the object it validates. */
const CURRENCY_TABLE = Symbol('currencyTable');

function currencyTableOf(object: object): CurrencyTable | undefined {
  return (object as Record<symbol, CurrencyTable | undefined>)[CURRENCY_TABLE];
}

/** The 400 of a partner API request that does not match its DTO, with the failing paths. */
function validationFailed(fields: FieldError[]): DomainException {
  return new DomainException(ErrorCode.VALIDATION_FAILED, 'the request does not match the schema', fields);
}

/**
 * The global validation pipe of the partner API (CONTRACT §10): class-validator's, with the
 * receiver's currency table handed to {@link IsDecimalAmount} and {@link IsAllowedCurrency}. A DTO
 * body must be a JSON object (`null`, an array or a scalar: 400 at path `""`; none: `{}`). A body
 * or query field the DTO does not declare is refused, one named like a property of
 * `Object.prototype` included ({@link prototypeKeyErrors}); each failing path is reported once
 * ({@link flattenValidationErrors}).
 * @throws DomainException VALIDATION_FAILED (400) with `fields`.
 */
export class CurrencyValidationPipe extends ValidationPipe {
  constructor(private readonly currencies: CurrencyTable) {
    super({
      whitelist: true,
      forbidNonWhitelisted: true,
      exceptionFactory: (errors) => validationFailed(flattenValidationErrors(errors)),
    });
  }

  async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const checked = (metadata.type === 'body' || metadata.type === 'query') && this.toValidate(metadata);
    if (checked && metadata.type === 'body' && metadata.data === undefined) {
      // A DTO body is a JSON object: `null`, an array or a scalar would reach the handler as it is
      // (class-validator passes `null` of an all-optional DTO). No body at all is an empty object.
      if (value === undefined) value = {};
      else if (value === null || typeof value !== 'object' || Array.isArray(value) || isLosslessNumber(value))
        throw validationFailed([{ path: '', message: 'must be an object' }]);
    }
    // Read before super.transform, which deletes `__proto__`, `prototype` and `constructor` in place.
    const fields = checked ? prototypeKeyErrors(value) : [];
    if (!fields.length) return super.transform(value, metadata);
    try {
      await super.transform(value, metadata);
    } catch (err) {
      if (!(err instanceof DomainException && err.code === ErrorCode.VALIDATION_FAILED)) throw err;
      fields.push(...(err.fields ?? []));
    }
    throw validationFailed(fields);
  }

  protected validate(object: object, validatorOptions?: ValidatorOptions) {
    Object.defineProperty(object, CURRENCY_TABLE, { value: this.currencies, configurable: true });
    return super.validate(object, validatorOptions);
  }
}

/** Keys no DTO can declare: {@link prototypeKeyErrors}. */
const isPrototypeKey = (key: string): boolean => key === 'prototype' || key in Object.prototype;

/** The JSON path of `key` under `prefix`: `coupons[0]`, `coupons[0].status`, `status`. */
function childPath(prefix: string, key: string): string {
  if (/^\d+$/.test(key)) return `${prefix}[${key}]`;
  return prefix ? `${prefix}.${key}` : key;
}

/**
 * `property <key> should not exist` at the JSON path of each own key, at any depth of a parsed
 * body or query, that names a property of
 * `Object.prototype` (`constructor`, `__proto__`, `toString`, `hasOwnProperty`, `valueOf`, …) or
 * are `prototype`. No DTO declares such a field, and the validation would not see one:
 * class-validator's whitelist looks fields up in a plain object, where these names always
 * resolve, class-transformer skips them, and Nest's ValidationPipe deletes `__proto__`,
 * `prototype` and `constructor`; so they are refused here, not dropped unseen.
 */
export function prototypeKeyErrors(value: unknown, prefix = ''): FieldError[] {
  if (value === null || typeof value !== 'object' || isLosslessNumber(value)) return [];
  const out: FieldError[] = [];
  for (const [key, child] of Object.entries(value)) {
    const path = childPath(prefix, key);
    if (!Array.isArray(value) && isPrototypeKey(key))
      out.push({ path, message: `property ${key} should not exist` });
    out.push(...prototypeKeyErrors(child, path));
  }
  return out;
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

/** A body's `currency`, checked by {@link IsAllowedCurrency} and documented as such. */
export function CurrencyProperty(): PropertyDecorator {
  return applyDecorators(
    ApiProperty({
      example: 'EUR',
      pattern: CURRENCY_CODE.source,
      description: 'ISO 4217 code or one of CURRENCY_MINOR_UNITS (e.g. USDT), restricted by CURRENCIES.',
    }),
    IsAllowedCurrency(),
  );
}

/**
 * Flattens class-validator errors into JSON paths (`coupons[0].events[1].uuid`), one message per
 * path: that of the rule written first on the property, its type before its length or pattern (a
 * missing `reason` is `reason must be a string`, not also too short and blank). class-validator
 * lists a property's failed rules in reverse source order (decorators apply bottom-up), then
 * `@ValidateNested`'s: so the last one that is not the nested rule, else the nested rule.
 */
export function flattenValidationErrors(errors: ValidationError[], prefix = ''): FieldError[] {
  const out: FieldError[] = [];
  for (const e of errors) {
    const path = childPath(prefix, e.property);
    const failed = Object.entries(e.constraints ?? {});
    const own = failed.filter(([rule]) => rule !== 'nestedValidation');
    const first = (own.length ? own : failed).at(-1);
    if (first) out.push({ path, message: first[1] });
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

/**
 * What keeps `value` from being stored as an identifier of 1..`max` characters (code points, as
 * the database's CHECK constraints count them), or undefined. Such a value must be a 400, not a
 * database error answered 503 (or 500) and retried forever.
 */
export function identifierProblem(value: string, max: number): string | undefined {
  if (UNSTORABLE_TEXT.test(value)) return 'must not contain U+0000 or unpaired surrogates';
  const length = [...value].length;
  if (length < 1) return 'must not be empty';
  if (length > max) return `must be at most ${max} characters`;
  return undefined;
}

/**
 * Property is a string of `min`..`max` characters counted as code points, as a schema's
 * `minLength`/`maxLength` count them (class-validator's `@Length` does not count U+FE0F/U+FE0E);
 * `@Length`'s messages. See {@link textSchema}.
 */
export function TextLength(
  min: number,
  max: number,
  validationOptions?: ValidationOptions,
): PropertyDecorator {
  return (object: object, propertyName: string | symbol) => {
    registerDecorator({
      name: 'textLength',
      target: object.constructor,
      propertyName: propertyName as string,
      options: {
        message: (args: ValidationArguments) =>
          typeof args.value === 'string' && [...args.value].length < min
            ? `${args.property} must be longer than or equal to ${min} characters`
            : `${args.property} must be shorter than or equal to ${max} characters`,
        ...validationOptions,
      },
      validator: {
        validate: (value: unknown) =>
          typeof value === 'string' && [...value].length >= min && [...value].length <= max,
      },
    });
  };
}

/**
 * The schema (`@ApiProperty` options) of free text checked by {@link TextLength}`(min, max)`,
 * {@link IsStorableText} and, when `notBlank`, `@Matches(/\S/)`.
 */
export function textSchema(min: number, max: number, notBlank = false) {
  const storable = STORABLE_TEXT_PATTERN.slice(1);
  return {
    type: 'string',
    minLength: min,
    maxLength: max,
    pattern: notBlank ? `^(?=[\\s\\S]*\\S)${storable}` : STORABLE_TEXT_PATTERN,
  } as const;
}

/**
 * The `reason` an operator's action is recorded with: 1..500 characters ({@link TextLength}),
 * {@link IsStorableText}, and not blank; or, `optional`, absent or 1..500 characters, blank
 * allowed. `example` and `description` document it in the schema ({@link textSchema}).
 */
export function ActionReason(example: string, description: string, optional = false): PropertyDecorator {
  const rules = [
    (optional ? ApiPropertyOptional : ApiProperty)({
      ...textSchema(1, 500, !optional),
      example,
      description,
    }),
    ...(optional ? [IsOptional()] : []),
    IsString(),
    TextLength(1, 500),
    ...(optional ? [] : [Matches(/\S/, { message: 'reason must not be blank' })]),
    IsStorableText(),
  ];
  // Last first, as stacked decorators apply: flattenValidationErrors reports the rule written first.
  return applyDecorators(...rules.reverse());
}

/**
 * ECMA-262 pattern (for an OpenAPI schema) of text {@link identifierProblem} and
 * {@link IsStorableText} accept: no U+0000, no unpaired surrogate; the same verdict with or
 * without the `u` flag (a surrogate pair is one code point, or the pair alternative).
 */
export const STORABLE_TEXT_PATTERN = '^(?:[^\\u0000\\ud800-\\udfff]|[\\ud800-\\udbff][\\udc00-\\udfff])*$';

/**
 * Property is an identifier of 1..`max` characters that PostgreSQL can store
 * ({@link identifierProblem}): code points are counted, as the schema's `maxLength` and the
 * database's CHECK constraints count them (class-validator's `@Length` does not count U+FE0F).
 */
export function IsIdentifier(max: number, validationOptions?: ValidationOptions): PropertyDecorator {
  return (object: object, propertyName: string | symbol) => {
    registerDecorator({
      name: 'isIdentifier',
      target: object.constructor,
      propertyName: propertyName as string,
      options: {
        message: (args: ValidationArguments) =>
          `${args.property} ${typeof args.value === 'string' ? identifierProblem(args.value, max) : 'must be a string'}`,
        ...validationOptions,
      },
      validator: {
        validate: (value: unknown) =>
          typeof value === 'string' && identifierProblem(value, max) === undefined,
      },
    });
  };
}

/**
 * A path parameter that is an identifier of 1..`max` characters ({@link identifierProblem}), e.g.
 * `@Param('batchId', new IdentifierParamPipe(128))`: checked before any query runs, so that a
 * value PostgreSQL cannot take (U+0000) is the same 400 every time.
 * @throws DomainException VALIDATION_FAILED (400) naming the parameter.
 */
export class IdentifierParamPipe implements PipeTransform<string, string> {
  constructor(private readonly max: number) {}

  transform(value: string, metadata: ArgumentMetadata): string {
    const name = metadata.data ?? 'parameter';
    const problem = typeof value === 'string' ? identifierProblem(value, this.max) : 'must be a string';
    if (problem) throw validationFailed([{ path: name, message: `${name} ${problem}` }]);
    return value;
  }
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
