import { DomainException, ErrorCode } from '../common/domain.exception.js';

/**
 * PostgreSQL errors classified by SQLSTATE. TypeORM wraps driver errors (`err.driverError`);
 * both shapes are read here so callers never parse messages.
 */
export const SQLSTATE = {
  SERIALIZATION_FAILURE: '40001',
  DEADLOCK_DETECTED: '40P01',
  LOCK_NOT_AVAILABLE: '55P03',
  QUERY_CANCELED: '57014',
  ADMIN_SHUTDOWN: '57P01',
  CRASH_SHUTDOWN: '57P02',
  CANNOT_CONNECT_NOW: '57P03',
  IDLE_IN_TRANSACTION_TIMEOUT: '25P03',
  TOO_MANY_CONNECTIONS: '53300',
  UNIQUE_VIOLATION: '23505',
  CHECK_VIOLATION: '23514',
} as const;

/** SQLSTATE of an error thrown by pg or TypeORM, if any. */
export function sqlStateOf(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as { code?: unknown; driverError?: { code?: unknown } };
  const code = e.driverError?.code ?? e.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** 40001 and 40P01: the whole transaction may be re-run. */
export function isRetryable(err: unknown): boolean {
  const s = sqlStateOf(err);
  return s === SQLSTATE.SERIALIZATION_FAILURE || s === SQLSTATE.DEADLOCK_DETECTED;
}

const TRANSIENT_STATES = new Set<string>([
  SQLSTATE.SERIALIZATION_FAILURE,
  SQLSTATE.DEADLOCK_DETECTED,
  SQLSTATE.LOCK_NOT_AVAILABLE,
  SQLSTATE.QUERY_CANCELED,
  SQLSTATE.ADMIN_SHUTDOWN,
  SQLSTATE.CRASH_SHUTDOWN,
  SQLSTATE.CANNOT_CONNECT_NOW,
  SQLSTATE.IDLE_IN_TRANSACTION_TIMEOUT,
  SQLSTATE.TOO_MANY_CONNECTIONS,
]);

const TRANSIENT_NETWORK = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EHOSTUNREACH',
]);

/**
 * True for trouble that a later delivery may not meet: lock/statement timeouts, serialization
 * failures, deadlocks, a database that is down, restarting or out of connections, a broken
 * connection. Such failures are answered 503 (CONTRACT §5).
 */
export function isTransient(err: unknown): boolean {
  const s = sqlStateOf(err);
  if (s !== undefined) return TRANSIENT_STATES.has(s) || s.startsWith('08');
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { code?: unknown; message?: unknown; driverError?: { code?: unknown } };
  const code = String(e.driverError?.code ?? e.code ?? '');
  if (TRANSIENT_NETWORK.has(code)) return true;
  const msg = String(e.message ?? '');
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|Connection is not established|not queryable|Query runner already released|QueryRunnerAlreadyReleased|Query read timeout/i.test(
    msg,
  );
}

/**
 * The connection broke or was given up (destroyed at the deadline, terminated, reset) rather
 * than PostgreSQL answering with an error: a COMMIT in flight then has an unknown outcome.
 */
export function isConnectionLoss(err: unknown): boolean {
  if (sqlStateOf(err) !== undefined) return sqlStateOf(err)?.startsWith('08') === true;
  const message = String((err as { message?: unknown } | null)?.message ?? '');
  return /Query read timeout|Connection terminated|not queryable|ECONNRESET|EPIPE|socket/i.test(message);
}

/**
 * SQLSTATE class 22 (data exception: invalid text, out-of-range number, …) or a CHECK violation
 * (a length or range limit of the schema): the request carried a value the database cannot hold,
 * so it is the caller's error (400), not a server fault.
 */
export function isDataException(err: unknown): boolean {
  const state = sqlStateOf(err);
  return state !== undefined && (state.startsWith('22') || state === SQLSTATE.CHECK_VIOLATION);
}

/**
 * A data exception ({@link isDataException}) as the refusal it is: VALIDATION_FAILED with
 * `message` (400 on a request, 422 on a quarantine replay, quarantined at once in the inbox);
 * undefined for any other error.
 */
export function dataExceptionRefusal(err: unknown, message: string): DomainException | undefined {
  return isDataException(err) ? new DomainException(ErrorCode.VALIDATION_FAILED, message) : undefined;
}
