import { DomainException, ErrorCode } from '../common/domain.exception.js';

/** The wallet outbox's refusals of operator actions (docs/wallet.md); mapped to HTTP at the edge. */
export type WalletErrorCode = ErrorCode.NOT_FOUND | ErrorCode.OUTBOX_ENTRY_STATE;

/** An operator action the outbox refused; nothing was changed. */
export class WalletException extends DomainException {
  constructor(
    readonly code: WalletErrorCode,
    message: string,
  ) {
    super(code, message);
    this.name = 'WalletException';
  }
}
