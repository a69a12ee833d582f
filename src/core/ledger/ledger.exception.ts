import { DomainException, ErrorCode } from '../../platform/common/domain.exception.js';
import { sqlStateOf } from '../../platform/database/pg-errors.js';

/** The ledger's refusals (CONTRACT §7); the exception filter maps them to HTTP. */
export type LedgerErrorCode =
  | ErrorCode.NOT_FOUND
  | ErrorCode.CURRENCY_MISMATCH
  | ErrorCode.INSUFFICIENT_FUNDS
  | ErrorCode.OPERATION_KEY_COLLISION;

/** A posting the ledger refused; nothing of it was written (the transaction is aborted). */
export class LedgerException extends DomainException {
  constructor(
    readonly code: LedgerErrorCode,
    message: string,
  ) {
    super(code, message);
    this.name = 'LedgerException';
  }
}

/**
 * SQLSTATEs the posting statement raises through `receiver_assert` (migration
 * CallbackHotPath1764580000000), one per {@link LedgerErrorCode}.
 */
export const LEDGER_SQLSTATE: Record<LedgerErrorCode, string> = {
  [ErrorCode.NOT_FOUND]: 'RL404',
  [ErrorCode.CURRENCY_MISMATCH]: 'RL422',
  [ErrorCode.INSUFFICIENT_FUNDS]: 'RL402',
  [ErrorCode.OPERATION_KEY_COLLISION]: 'RL409',
};

const CODE_OF_SQLSTATE = new Map(
  Object.entries(LEDGER_SQLSTATE).map(([code, state]) => [state, code as LedgerErrorCode]),
);

/** The ledger's own error for a failed posting statement; any other error unchanged. */
export function ledgerErrorOf(err: unknown): unknown {
  const code = CODE_OF_SQLSTATE.get(sqlStateOf(err) ?? '');
  return code ? new LedgerException(code, (err as Error).message) : err;
}
