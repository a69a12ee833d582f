import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { APP_CONFIG } from '../config/configuration.js';
import type { AppConfig } from '../config/configuration.js';
import { DomainException, ErrorCode } from '../common/domain.exception.js';
import { secureEquals } from '../common/secure-compare.js';

/**
 * Partner API guard (CONTRACT §10): `Authorization: Bearer <key>` with one of `OPS_API_KEYS`,
 * compared in constant time against every key.
 * @throws DomainException UNAUTHORIZED (401) otherwise.
 */
@Injectable()
export class BearerKeyGuard implements CanActivate {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<Request>();
    const header = req.headers.authorization ?? '';
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (match) {
      let ok = false;
      for (const key of this.config.opsApiKeys) ok = secureEquals(match[1], key) || ok;
      if (ok) return true;
    }
    throw new DomainException(ErrorCode.UNAUTHORIZED, 'a valid bearer key is required');
  }
}
