import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Constant-time comparison of two strings of any length: both are hashed to 32 bytes first, so
 * neither the content nor the length of the expected value leaks through timing.
 */
export function secureEquals(a: string | Buffer, b: string | Buffer): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}
