import { DomainException, ErrorCode } from '../../platform/common/domain.exception.js';
import { rowIdParam } from '../../platform/common/id-page-query.dto.js';

/** An outbox's refusals of operator actions (docs/wallet.md); mapped to HTTP at the edge. */
export type OutboxErrorCode = ErrorCode.NOT_FOUND | ErrorCode.OUTBOX_ENTRY_STATE;

/** An operator action the outbox refused; nothing was changed. */
export class OutboxException extends DomainException {
  constructor(
    readonly code: OutboxErrorCode,
    message: string,
  ) {
    super(code, message);
    this.name = 'OutboxException';
  }
}

/** An outbox id path parameter: digits only, else 404 (never a database error; {@link rowIdParam}). */
export function outboxRowId(id: string): string {
  return rowIdParam(id, 'outbox row');
}
