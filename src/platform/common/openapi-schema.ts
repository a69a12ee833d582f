import { getSchemaPath } from '@nestjs/swagger';

/**
 * OpenAPI 3.0 schema of the value null alone. 3.0 has no `type: null`, and `nullable` is valid
 * only beside a `type` in the same schema (not beside a `$ref`, not on a `oneOf` without a type),
 * and with an `enum` only when the enum lists null.
 */
export const NULL_ONLY: { type: 'object'; nullable: true; enum: null[] } = {
  type: 'object',
  nullable: true,
  enum: [null],
};

/** `@ApiProperty` options of a property that is the model (a `$ref`) or null. */
export function nullableRef(model: abstract new (...args: never[]) => unknown) {
  return { oneOf: [{ $ref: getSchemaPath(model) }, NULL_ONLY] };
}
