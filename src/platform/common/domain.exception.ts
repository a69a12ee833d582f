/**
 * Error codes of every module, as they appear in response bodies (`error.code`). Services throw
 * {@link DomainException}s carrying one of these; only the exception filter knows HTTP
 * (CONTRACT §5, §10).
 */
export enum ErrorCode {
  // callbacks (CONTRACT §5)
  INVALID_SIGNATURE = 'invalid_signature',
  MALFORMED_JSON = 'malformed_json',
  VALIDATION_FAILED = 'validation_failed',
  BATCH_CONFLICT = 'batch_conflict',
  PAYLOAD_TOO_LARGE = 'payload_too_large',
  UNSUPPORTED_MEDIA_TYPE = 'unsupported_media_type',
  TRANSIENT_FAILURE = 'transient_failure',
  /** A quarantined body replayed and still refused by validation (CONTRACT §8). */
  REPLAY_REJECTED = 'replay_rejected',
  // partner API (CONTRACT §10)
  UNAUTHORIZED = 'unauthorized',
  /** A known key without the scope the route needs. */
  INSUFFICIENT_SCOPE = 'insufficient_scope',
  /** Too many failed authentications from one client address: wait for Retry-After. */
  TOO_MANY_AUTH_FAILURES = 'too_many_auth_failures',
  NOT_FOUND = 'not_found',
  COUPON_CONFLICT = 'coupon_conflict',
  IDEMPOTENCY_CONFLICT = 'idempotency_conflict',
  IDEMPOTENCY_KEY_REQUIRED = 'idempotency_key_required',
  INSUFFICIENT_FUNDS = 'insufficient_funds',
  CURRENCY_MISMATCH = 'currency_mismatch',
  /** An operation key that exists already names another operation: a defect, never paid twice. */
  OPERATION_KEY_COLLISION = 'operation_key_collision',
  // polling fallback and reconciliation (CONTRACT §9)
  POLLING_DISABLED = 'polling_disabled',
  SPORTAPI_UNAVAILABLE = 'sportapi_unavailable',
  SPORTAPI_COUPON_NOT_FOUND = 'sportapi_coupon_not_found',
  SPORTAPI_BAD_RESPONSE = 'sportapi_bad_response',
  COUPON_NOT_FLAGGED = 'coupon_not_flagged',
  /** The inbox holds pending batches of the coupon: a read or resolution would overtake them. */
  COUPON_INBOX_PENDING = 'coupon_inbox_pending',
  /** Other batches changed the coupon during every read from SportAPI (a read may predate them). */
  COUPON_CHANGED_DURING_READ = 'coupon_changed_during_read',
  // wallet outbox (docs/wallet.md)
  /** An operator action that the outbox row's state does not allow (e.g. retry of a delivered row). */
  OUTBOX_ENTRY_STATE = 'outbox_entry_state',
  // bulk actions (docs/api.md#bulk-actions)
  /** A bulk action that has already ended (done or cancelled) cannot be cancelled. */
  BULK_ACTION_STATE = 'bulk_action_state',
  INTERNAL = 'internal_error',
}

/** HTTP status of every {@link ErrorCode}; the single place where codes meet HTTP. */
export const HTTP_STATUS_OF: Record<ErrorCode, number> = {
  [ErrorCode.INVALID_SIGNATURE]: 401,
  [ErrorCode.MALFORMED_JSON]: 400,
  [ErrorCode.VALIDATION_FAILED]: 400,
  [ErrorCode.BATCH_CONFLICT]: 409,
  [ErrorCode.PAYLOAD_TOO_LARGE]: 413,
  [ErrorCode.UNSUPPORTED_MEDIA_TYPE]: 415,
  [ErrorCode.TRANSIENT_FAILURE]: 503,
  [ErrorCode.REPLAY_REJECTED]: 422,
  [ErrorCode.UNAUTHORIZED]: 401,
  [ErrorCode.INSUFFICIENT_SCOPE]: 403,
  [ErrorCode.TOO_MANY_AUTH_FAILURES]: 429,
  [ErrorCode.NOT_FOUND]: 404,
  [ErrorCode.COUPON_CONFLICT]: 409,
  [ErrorCode.IDEMPOTENCY_CONFLICT]: 409,
  [ErrorCode.IDEMPOTENCY_KEY_REQUIRED]: 400,
  [ErrorCode.INSUFFICIENT_FUNDS]: 422,
  [ErrorCode.CURRENCY_MISMATCH]: 422,
  [ErrorCode.OPERATION_KEY_COLLISION]: 500,
  [ErrorCode.POLLING_DISABLED]: 501,
  [ErrorCode.SPORTAPI_UNAVAILABLE]: 503,
  [ErrorCode.SPORTAPI_COUPON_NOT_FOUND]: 404,
  [ErrorCode.OUTBOX_ENTRY_STATE]: 409,
  [ErrorCode.SPORTAPI_BAD_RESPONSE]: 502,
  [ErrorCode.COUPON_NOT_FLAGGED]: 409,
  [ErrorCode.COUPON_INBOX_PENDING]: 409,
  [ErrorCode.COUPON_CHANGED_DURING_READ]: 409,
  [ErrorCode.BULK_ACTION_STATE]: 409,
  [ErrorCode.INTERNAL]: 500,
};

/** A field that failed validation: its JSON path (`coupons[0].realWin`) and what is wrong. */
export interface FieldError {
  path: string;
  message: string;
}

/**
 * A failure a module reports without knowing HTTP: a stable {@link ErrorCode}, a message safe to
 * show to the caller (never SQL, stack or secrets) and optional field errors.
 */
export class DomainException extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly fields?: FieldError[],
  ) {
    super(message);
    this.name = 'DomainException';
  }
}
