import { Type } from 'class-transformer';
import { IsArray, IsString, ValidateNested } from 'class-validator';
import { parsePartnerBody } from '../../src/platform/common/partner-body.js';
import { loadCurrencyTable } from '../../src/core/ledger/money.config.js';
import { DomainException } from '../../src/platform/common/domain.exception.js';
import { CurrencyValidationPipe } from '../../src/platform/common/validation.js';

// The partner API's validation pipe on nested DTOs (no partner DTO nests today; the pipe is
// generic): undeclared fields, keys named like Object.prototype's properties included, are refused
// at their paths at every level, and each path has one message (CONTRACT §10).

class Leg {
  @IsString()
  name: string;
}

class Ticket {
  @ValidateNested()
  @Type(() => Leg)
  first: Leg;

  @IsArray()
  @ValidateNested({ each: true })
  @Type(() => Leg)
  legs: Leg[];
}

const pipe = new CurrencyValidationPipe(loadCurrencyTable({}));

/** The fields of the 400 the pipe answers to this JSON body, or 'valid'. */
async function verdict(text: string): Promise<unknown> {
  try {
    await pipe.transform(parsePartnerBody(text), { type: 'body', metatype: Ticket, data: '' });
    return 'valid';
  } catch (err) {
    if (!(err instanceof DomainException)) throw err;
    return { code: err.code, fields: err.fields };
  }
}

describe('CurrencyValidationPipe on nested DTOs', () => {
  it('accepts a body with only declared fields', async () => {
    expect(await verdict('{"first":{"name":"a"},"legs":[{"name":"b"}]}')).toBe('valid');
  });

  it.each(['constructor', '__proto__', 'prototype', 'toString', 'hasOwnProperty'])(
    'refuses "%s" at every level, at its path, beside ordinary undeclared fields',
    async (key) => {
      const k = JSON.stringify(key);
      const text =
        `{${k}:{"a":1},"first":{"name":"a",${k}:1},` +
        `"legs":[{"name":"b"},{"name":"c",${k}:{"x":1},"extra":1}],"more":2}`;
      expect(await verdict(text)).toEqual({
        code: 'validation_failed',
        fields: [
          { path: key, message: `property ${key} should not exist` },
          { path: `first.${key}`, message: `property ${key} should not exist` },
          { path: `legs[1].${key}`, message: `property ${key} should not exist` },
          { path: 'more', message: 'property more should not exist' },
          { path: 'legs[1].extra', message: 'property extra should not exist' },
        ],
      });
    },
  );

  it('reports a nested field once, with its first rule', async () => {
    expect(await verdict('{"first":{},"legs":"x"}')).toEqual({
      code: 'validation_failed',
      fields: [
        { path: 'first.name', message: 'name must be a string' },
        { path: 'legs', message: 'legs must be an array' },
      ],
    });
  });

  it('changes no prototype', async () => {
    await verdict('{"__proto__":{"polluted":true},"first":{"name":"a"},"legs":[]}');
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
  });
});
