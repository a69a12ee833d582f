import { registerDecorator, ValidationError, ValidationOptions } from 'class-validator';
import { isLosslessNumber } from 'lossless-json';
import { FieldError } from './domain.exception.js';
import { parseAmount } from './money.js';

/**
 * Property is a decimal amount: a JSON string (or number) with at most `scale` fraction digits,
 * at most 13 integer digits, positive unless `allowNegative`/`allowZero` say otherwise.
 */
export function IsDecimalAmount(
  opts: { scale?: number; allowNegative?: boolean; allowZero?: boolean; allowNumber?: boolean } = {},
  validationOptions?: ValidationOptions,
): PropertyDecorator {
  const scale = opts.scale ?? 2;
  return (object: object, propertyName: string | symbol) => {
    registerDecorator({
      name: 'isDecimalAmount',
      target: object.constructor,
      propertyName: propertyName as string,
      options: {
        message: `$property must be a decimal string with at most ${scale} fraction digits${
          opts.allowNegative
            ? opts.allowZero
              ? ''
              : ', not zero'
            : opts.allowZero
              ? ', not negative'
              : ', greater than zero'
        }`,
        ...validationOptions,
      },
      validator: {
        validate(value: unknown): boolean {
          if (typeof value !== 'string' && !(opts.allowNumber && typeof value === 'number')) return false;
          const parsed = parseAmount(value, scale, opts.allowNegative);
          if (parsed === null) return false;
          if (!opts.allowZero && /^-?0(\.0+)?$/.test(parsed)) return false;
          return true;
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
