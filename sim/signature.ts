import { createHmac } from 'node:crypto';

/** `sha256=<hex>`: HMAC-SHA256 of the exact bytes with the shared secret (CONTRACT §3). */
export function signatureHeader(bytes: Buffer | string, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(bytes).digest('hex')}`;
}
