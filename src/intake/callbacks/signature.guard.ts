import { createHmac } from 'node:crypto';
import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { CALLBACK_CONFIG } from './callback.config.js';
import type { CallbackConfig } from './callback.config.js';
import { DomainException, ErrorCode } from '../../platform/common/domain.exception.js';
import type { CallbackRequest } from './callback-request.js';
import { secureEquals } from '../../platform/common/secure-compare.js';
import { tracedSync } from '../../platform/observability/tracing.js';

/**
 * The signature header's value in the API description (the parameter and the security scheme):
 * Markdown, so the placeholder is in backticks; bare, Swagger UI would drop it as an HTML tag.
 */
export const SIGNATURE_FORMAT =
  '`sha256=<hex HMAC-SHA256 of the raw body>` with one of SPORTAPI_WEBHOOK_SECRETS (the bare hex digest is accepted too)';

/**
 * Verifies a signature header value against the raw body: `sha256=<hex>` or a bare hex digest
 * (either case) of HMAC-SHA256(secret, body), for any of `secrets` (rotation). Every secret is
 * tried and compared in constant time (CONTRACT §3, §4 step 1).
 */
export function verifySignature(rawBody: Buffer, header: string | undefined, secrets: string[]): boolean {
  if (!header) return false;
  const match = /^\s*(?:sha256=)?([0-9a-fA-F]{64})\s*$/.exec(header);
  if (!match) return false;
  const sent = Buffer.from(match[1].toLowerCase(), 'hex');
  let ok = false;
  for (const secret of secrets) {
    const expected = createHmac('sha256', secret).update(rawBody).digest();
    ok = secureEquals(sent, expected) || ok;
  }
  return ok;
}

/**
 * First step of the callback: throws what the body middleware found (413/415/400), then checks
 * the signature over the raw bytes before anything parses them.
 * @throws DomainException INVALID_SIGNATURE (401) and the body errors.
 */
@Injectable()
export class SignatureGuard implements CanActivate {
  constructor(@Inject(CALLBACK_CONFIG) private readonly config: CallbackConfig) {}

  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<CallbackRequest>();
    const state = req.callback;
    if (!state) throw new DomainException(ErrorCode.UNSUPPORTED_MEDIA_TYPE, 'body was not read');
    if (state.bodyError) throw state.bodyError;
    const header = req.headers[this.config.signatureHeader];
    const value = Array.isArray(header) ? undefined : header;
    const body = state.rawBody ?? Buffer.alloc(0);
    const secrets = this.config.webhookSecrets;
    if (!tracedSync('callback.signature', () => verifySignature(body, value, secrets))) {
      throw new DomainException(ErrorCode.INVALID_SIGNATURE, 'signature missing or wrong');
    }
    state.signatureVerified = true;
    return true;
  }
}
