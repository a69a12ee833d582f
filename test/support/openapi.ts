import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { openapiSchemaToJsonSchema } from '@openapi-contrib/openapi-schema-to-json-schema';
import ajvDraft04 from 'ajv-draft-04';
import ajvFormats from 'ajv-formats';
import { Decimal } from 'decimal.js';
import fc from 'fast-check';

/** An OpenAPI 3.0 schema object (or a `$ref`), as `openapi.json` holds it. */
export type Schema = Record<string, unknown>;

export interface OpenApiOperation {
  parameters?: { name: string; in: string; required?: boolean; schema?: Schema }[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<string, { content?: Record<string, { schema?: Schema }> }>;
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, OpenApiOperation>>;
  components: { schemas: Record<string, Schema> };
}

/** The API description in the repository (`npm run openapi` writes it). */
export function loadOpenApi(): OpenApiDocument {
  return JSON.parse(readFileSync(resolve(process.cwd(), 'openapi.json'), 'utf8')) as OpenApiDocument;
}

/** A component schema by name, or the one a `$ref` names. */
export function resolveRef(doc: OpenApiDocument, schema: Schema): Schema {
  const ref = schema.$ref;
  return typeof ref === 'string' ? doc.components.schemas[ref.replace('#/components/schemas/', '')] : schema;
}

/**
 * A validator of values against schemas of `doc`: OpenAPI 3.0 schemas converted to JSON Schema
 * draft 04 (`nullable`, boolean `exclusiveMaximum`) by @openapi-contrib/openapi-schema-to-json-schema,
 * checked by Ajv (patterns with the `u` flag, formats of ajv-formats). `errors` is [] when the
 * value is valid, else Ajv's messages with their paths.
 */
export function schemaValidator(doc: OpenApiDocument): (schema: Schema, value: unknown) => string[] {
  // CommonJS packages: their classes are the `default` of the module object.
  const ajv = new ajvDraft04.default({ allErrors: true, strict: false });
  ajvFormats.default(ajv);
  // multipleOf on the number's shortest decimal text, as JSON carries it (1234567890123.4567 is a
  // multiple of 0.0001), not by float division, which Ajv does and which fails such amounts.
  ajv.removeKeyword('multipleOf');
  ajv.addKeyword({
    keyword: 'multipleOf',
    type: 'number',
    schemaType: 'number',
    validate: (step: number, value: number) => new Decimal(String(value)).mod(String(step)).isZero(),
  });
  const converted = openapiSchemaToJsonSchema({ components: doc.components } as Record<string, unknown>);
  ajv.addSchema({ ...converted, $schema: undefined, id: 'openapi.json' } as object);
  const compiled = new Map<string, ReturnType<typeof ajv.compile>>();
  return (schema, value) => {
    const key = JSON.stringify(schema);
    let validate = compiled.get(key);
    if (!validate) {
      const json = openapiSchemaToJsonSchema(schema) as Record<string, unknown>;
      const relink = (v: unknown): unknown =>
        Array.isArray(v)
          ? v.map(relink)
          : v !== null && typeof v === 'object'
            ? Object.fromEntries(
                Object.entries(v).map(([k, x]) => [
                  k,
                  k === '$ref' && typeof x === 'string' ? `openapi.json${x}` : relink(x),
                ]),
              )
            : v;
      const { $schema: _, ...body } = relink(json) as Record<string, unknown>;
      validate = ajv.compile(body);
      compiled.set(key, validate);
    }
    return validate(value)
      ? []
      : (validate.errors ?? []).map((e: { instancePath: string; message?: string }) =>
          `${e.instancePath || '/'} ${e.message ?? ''}`.trim(),
        );
  };
}

/** Code points of a string: what `minLength`/`maxLength` count. */
const codePoints = (s: string) => [...s].length;

/**
 * fast-check arbitrary of values that `schema` (OpenAPI 3.0, `$ref`s into `doc`) accepts: objects
 * with every required property and some optional ones; arrays within `minItems`..`maxItems`
 * (kept small by fast-check's size); strings of `pattern` (fc.stringMatching) within the lengths;
 * integers and numbers within their bounds, `multipleOf` kept exactly; `oneOf` any branch;
 * `nullable` null among them. Only what the callback body and its parts use is supported.
 */
export function arbitraryOf(doc: OpenApiDocument, schema: Schema): fc.Arbitrary<unknown> {
  const s = resolveRef(doc, schema);
  if (Array.isArray(s.oneOf)) return fc.oneof(...(s.oneOf as Schema[]).map((b) => arbitraryOf(doc, b)));
  const base = ((): fc.Arbitrary<unknown> => {
    if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
    switch (s.type) {
      case 'object': {
        const properties = (s.properties ?? {}) as Record<string, Schema>;
        const required = (s.required ?? []) as string[];
        const model = Object.fromEntries(
          Object.entries(properties).map(([k, p]) => [k, arbitraryOf(doc, p)]),
        );
        return fc.record(model, { requiredKeys: required });
      }
      case 'array':
        return fc.array(arbitraryOf(doc, s.items as Schema), {
          minLength: (s.minItems as number | undefined) ?? 0,
          maxLength: s.maxItems as number | undefined,
        });
      case 'string': {
        const min = (s.minLength as number | undefined) ?? 0;
        const max = (s.maxLength as number | undefined) ?? Infinity;
        const strings = s.pattern
          ? fc.stringMatching(new RegExp(s.pattern as string, 'u'))
          : fc.string({ unit: 'binary', minLength: min, maxLength: Number.isFinite(max) ? max : undefined });
        return strings.filter((v) => codePoints(v) >= min && codePoints(v) <= max);
      }
      case 'integer':
        return fc.integer({
          min: (s.minimum as number | undefined) ?? Number.MIN_SAFE_INTEGER,
          max: (s.maximum as number | undefined) ?? Number.MAX_SAFE_INTEGER,
        });
      case 'number': {
        const step = s.multipleOf as number | undefined;
        if (step === undefined) return fc.double({ noNaN: true, noDefaultInfinity: true });
        // k × 10^-n as the decimal text of k with n fraction digits: no float error.
        const n = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
        const scale = 10n ** BigInt(n);
        const lowest = BigInt(Math.ceil(((s.minimum as number | undefined) ?? 0) / step));
        const limit = BigInt(Math.floor(((s.maximum as number | undefined) ?? 1e15) / step));
        const highest = s.exclusiveMaximum === true ? limit - 1n : limit;
        return (
          fc
            .bigInt({ min: lowest, max: highest })
            .map((k) => Number(`${k / scale}.${(k % scale).toString().padStart(n, '0')}`))
            // Near the top, k × 10^-n may round to the bound itself as a double.
            .filter((v) => (s.exclusiveMaximum === true ? v < Number(s.maximum) : true))
        );
      }
      case 'boolean':
        return fc.boolean();
      default:
        throw new Error(`arbitraryOf: unsupported schema ${JSON.stringify(s)}`);
    }
  })();
  return s.nullable === true ? fc.oneof(base, fc.constant(null)) : base;
}

/** One way a value breaks its schema: where, what the schema says there, the new value or removal. */
export interface Violation {
  path: (string | number)[];
  rule: string;
  apply: (value: unknown) => unknown;
}

/**
 * Every single change to `value` (valid for `schema`) that makes it invalid for the schema at one
 * place: a required property removed, a value of another JSON type, a string past `maxLength` or
 * short of `minLength` or off its `pattern`, an integer that is fractional or out of range, an
 * array with too many or too few items, an unknown property where `additionalProperties` is false.
 */
export function violationsOf(doc: OpenApiDocument, schema: Schema, value: unknown): Violation[] {
  const out: Violation[] = [];
  const walk = (sch: Schema, v: unknown, path: (string | number)[]): void => {
    const s = resolveRef(doc, sch);
    const at = (rule: string, replace: (old: unknown) => unknown) =>
      out.push({ path, rule, apply: (root) => setAt(root, path, replace) });
    if (Array.isArray(s.oneOf)) {
      // Another JSON type than every branch allows.
      const types = new Set((s.oneOf as Schema[]).map((b) => resolveRef(doc, b).type));
      const nullable = (s.oneOf as Schema[]).some((b) => resolveRef(doc, b).nullable === true);
      if (!types.has('boolean')) at('type', () => true);
      if (!types.has('array')) at('type', () => []);
      if (!nullable) at('type', () => null);
      if (typeof v === 'string') {
        const branch = (s.oneOf as Schema[]).map((b) => resolveRef(doc, b)).find((b) => b.type === 'string');
        if (branch?.pattern) at('pattern', () => `${v}x`);
      }
      return;
    }
    if (v === null) return;
    switch (s.type) {
      case 'object': {
        at('type', () => []);
        const properties = (s.properties ?? {}) as Record<string, Schema>;
        for (const key of (s.required ?? []) as string[])
          out.push({ path: [...path, key], rule: 'required', apply: (root) => setAt(root, [...path, key]) });
        if (s.additionalProperties === false)
          at('additionalProperties', (o) => ({ ...(o as object), zz: 1 }));
        for (const [key, p] of Object.entries(properties))
          if (key in (v as object)) walk(p, (v as Record<string, unknown>)[key], [...path, key]);
        return;
      }
      case 'array': {
        at('type', () => ({}));
        const items = v as unknown[];
        if (s.maxItems !== undefined)
          at('maxItems', () =>
            Array.from({ length: (s.maxItems as number) + 1 }, (_, i) => items[i % items.length]),
          );
        if (typeof s.minItems === 'number' && s.minItems > 0)
          at('minItems', () => items.slice(0, (s.minItems as number) - 1));
        items.forEach((item, i) => walk(s.items as Schema, item, [...path, i]));
        return;
      }
      case 'string':
        at('type', () => 7);
        if (s.maxLength !== undefined) at('maxLength', () => 'a'.repeat((s.maxLength as number) + 1));
        if (typeof s.minLength === 'number' && s.minLength > 0) at('minLength', () => '');
        if (s.pattern) at('pattern', (old) => `${String(old)}\u0000`);
        return;
      case 'integer':
        at('type', () => '1');
        at('integer', (old) => (old as number) + 0.5);
        if (s.minimum !== undefined) at('minimum', () => (s.minimum as number) - 1);
        if (s.maximum !== undefined) at('maximum', () => (s.maximum as number) + 1);
        return;
      default:
        return;
    }
  };
  walk(schema, value, []);
  return out;
}

/** A deep copy of `root` with the value at `path` replaced by `replace(old)`, or removed without it. */
function setAt(root: unknown, path: (string | number)[], replace?: (old: unknown) => unknown): unknown {
  if (!path.length) return replace ? replace(root) : undefined;
  const [head, ...rest] = path;
  const copy = (Array.isArray(root) ? [...root] : { ...(root as object) }) as Record<
    string | number,
    unknown
  >;
  if (!rest.length && !replace) delete copy[head];
  else copy[head] = setAt(copy[head], rest, replace);
  return copy;
}
