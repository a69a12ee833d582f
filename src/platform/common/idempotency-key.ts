import type { Type } from '@nestjs/common';
import { DomainException, ErrorCode } from './domain.exception.js';

/** What an `Idempotency-Key` header may hold: no colon, so it never meets a coupon operation key. */
export const IDEMPOTENCY_KEY = /^[A-Za-z0-9._~+/=@-]{1,128}$/;

/**
 * The `Idempotency-Key` header of a partner API write (adjustments, operator resolutions;
 * CONTRACT §10), checked.
 * @throws DomainException IDEMPOTENCY_KEY_REQUIRED (400) when it is missing or malformed.
 */
export function requireIdempotencyKey(header: string | undefined): string {
  if (!header || !IDEMPOTENCY_KEY.test(header)) {
    throw new DomainException(
      ErrorCode.IDEMPOTENCY_KEY_REQUIRED,
      'an Idempotency-Key header of 1..128 characters from A-Z a-z 0-9 . _ ~ + / = @ - is required',
    );
  }
  return header;
}

/**
 * The stored first result of an `Idempotency-Key` when the same request comes again: `earlier`
 * (what the key stored; undefined or null: a new key, then undefined) when its `requestHash` is
 * that of this request.
 * @throws DomainException IDEMPOTENCY_CONFLICT (409) when the key was used with another request.
 */
export function replayOf<T extends { requestHash: string }>(
  earlier: T | null | undefined,
  requestHash: string,
): T | undefined {
  if (!earlier) return undefined;
  if (earlier.requestHash !== requestHash)
    throw new DomainException(
      ErrorCode.IDEMPOTENCY_CONFLICT,
      'this Idempotency-Key was used with a different request',
    );
  return earlier;
}

/**
 * `@ApiResponse` options of the 201 of a write under an `Idempotency-Key`: its body `type`, also
 * answered again to the same key and body, then with the header `Idempotent-Replayed: true`.
 */
export function apiIdempotentCreated(type: Type<unknown>) {
  return {
    status: 201,
    type,
    description: 'applied (also returned again for the same key and body, with Idempotent-Replayed: true)',
    headers: {
      'Idempotent-Replayed': {
        description: '"true" when this is the stored first result',
        schema: { type: 'string' },
      },
    },
  };
}
