import type { OutboxDelivery, ParkReason } from './outbox.types.js';

/** The retry policy of an outbox destination (`WALLET_RETRY_*`, `EVENT_RETRY_*`), in milliseconds. */
export interface RetryPolicy {
  retryForMs: number;
  retryBaseMs: number;
  retryMaxMs: number;
}

/**
 * What the outbox does with a row after an attempt: done; again after `delayMs`; parked for an
 * operator; or all delivery paused (the row stays pending, due again at once on resume).
 */
export type OutboxStep =
  | { kind: 'delivered' }
  | { kind: 'retry'; delayMs: number }
  | { kind: 'park'; reason: ParkReason }
  | { kind: 'pause'; reason: string };

/**
 * The outbox's rule for one attempt's answer (docs/wallet.md, "Retries and parking"): a `retry`
 * waits `WALLET_RETRY_BASE_MS` doubled per attempt (`attempt` 1 for the first), at most
 * `WALLET_RETRY_MAX_MS`, and not less than the wallet's `Retry-After` unless that is above
 * `WALLET_RETRY_MAX_MS` (a far-off or garbage one would hold the row, and its account, beyond
 * its retry budget); once `retryForMs` has passed since `retryFrom`, a `retry` parks the row
 * instead. `refused` and `conflict` park it at once; `unauthorized` pauses delivery.
 */
export function nextStep(
  delivery: OutboxDelivery,
  attempt: { attempt: number; retryFrom: Date; now: Date },
  policy: RetryPolicy,
  destination = 'wallet',
): OutboxStep {
  switch (delivery.outcome) {
    case 'delivered':
      return { kind: 'delivered' };
    case 'refused':
      return { kind: 'park', reason: 'refused' };
    case 'conflict':
      return { kind: 'park', reason: 'conflict' };
    case 'unauthorized':
      return {
        kind: 'pause',
        reason: `${destination} answered ${delivery.status ?? '?'}: ${delivery.reason}`,
      };
    case 'retry': {
      if (attempt.now.getTime() - attempt.retryFrom.getTime() >= policy.retryForMs)
        return { kind: 'park', reason: 'retry_budget_exhausted' };
      const backoff = Math.min(
        policy.retryMaxMs,
        policy.retryBaseMs * 2 ** Math.min(attempt.attempt - 1, 30),
      );
      const after = Math.min(policy.retryMaxMs, Number.isFinite(delivery.afterMs) ? delivery.afterMs! : 0);
      return { kind: 'retry', delayMs: Math.max(backoff, after) };
    }
  }
}

/** Characters of a wallet's answer or of an error kept with an attempt. */
export const ANSWER_EXCERPT_CHARS = 500;

/**
 * At most {@link ANSWER_EXCERPT_CHARS} characters of `text`, storable as PostgreSQL `text`: a NUL
 * (which `text` refuses, so the attempt could never be recorded) becomes U+FFFD.
 */
export function excerpt(text: string): string {
  return text.slice(0, ANSWER_EXCERPT_CHARS).replaceAll('\u0000', '\uFFFD');
}

/**
 * An operation key as a header value (wallet `Idempotency-Key`, NATS `Nats-Msg-Id`;
 * docs/wallet-http-contract.md#the-operation-key-in-a-header): the key itself when every character
 * is visible ASCII (`!`..`~`) other than `%`, the usual case; else each other character, `%`
 * included, as `%XX` per byte of its UTF-8 (upper-case hex), e.g. `a\r\nb:0:final_credit` →
 * `a%0D%0Ab:0:final_credit`, `ä:0:stake_debit` → `%C3%A4:0:stake_debit`. Deterministic and
 * injective (`%` is always encoded, so `decodeURIComponent` of the token gives the key back): a
 * `coupon_code` holds any characters but U+0000 (CONTRACT §3), and a header cannot carry CR, LF
 * or, reliably, anything beyond visible ASCII.
 */
export function headerToken(key: string): string {
  if (HEADER_SAFE.test(key)) return key;
  let out = '';
  for (const char of key) {
    const c = char.charCodeAt(0);
    if (char.length === 1 && c >= 0x21 && c <= 0x7e && c !== 0x25) out += char;
    else for (const byte of UTF8.encode(char)) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** Visible ASCII without `%`: a header carries it as it is. */
const HEADER_SAFE = /^[\x21-\x24\x26-\x7e]*$/;
const UTF8 = new TextEncoder();

/** Error codes of a request that can never be sent as built (Node's and undici's header checks). */
const PERMANENT_CODES: ReadonlySet<string> = new Set([
  'UND_ERR_INVALID_ARG',
  'ERR_INVALID_CHAR',
  'ERR_INVALID_HTTP_TOKEN',
  'ERR_HTTP_INVALID_HEADER_VALUE',
]);

/**
 * The reason to park at once when `err` is one no retry can fix, else undefined: the client
 * refused to build the request or message (an invalid header or argument: undici's
 * `UND_ERR_INVALID_ARG`, Node's `ERR_INVALID_CHAR`, the NATS client's `InvalidArgumentError`), so
 * the same bytes would fail the same way for the whole retry budget while the account's later
 * rows wait behind it. Such an attempt is recorded `refused` with this reason (docs/wallet.md,
 * "Retries and parking").
 */
export function permanentFailure(err: unknown): string | undefined {
  if (!(err instanceof Error)) return undefined;
  const code = (err as Error & { code?: unknown }).code;
  if (err.name !== 'InvalidArgumentError' && !(typeof code === 'string' && PERMANENT_CODES.has(code)))
    return undefined;
  return excerpt(
    `undeliverable, no retry can fix it: ${typeof code === 'string' ? code : err.name}: ${err.message}`,
  );
}

const OUTCOMES: readonly string[] = ['delivered', 'retry', 'refused', 'conflict', 'unauthorized'];

/**
 * What a connector answered, made safe to act on and to store: an unknown outcome (or not an
 * object) is a `retry` naming the connector; `status` kept only as an HTTP status code, `afterMs`
 * only when finite and not negative; `reason` and `answer` as {@link excerpt}s. A connector is
 * the partner's code (docs/wallet.md, "Writing a connector module"): a wrong answer must not
 * leave a row that can never be recorded.
 */
export function checkedDelivery(value: unknown, connector: string): OutboxDelivery {
  const d = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const text = (v: unknown) => (typeof v === 'string' ? excerpt(v) : undefined);
  const status = Number.isInteger(d.status) && (d.status as number) >= 100 && (d.status as number) <= 599;
  const common = { status: status ? (d.status as number) : undefined, answer: text(d.answer) };
  if (typeof d.outcome !== 'string' || !OUTCOMES.includes(d.outcome)) {
    let shown: string;
    try {
      shown = String(JSON.stringify(value));
    } catch {
      shown = typeof value;
    }
    return {
      outcome: 'retry',
      reason: excerpt(`the ${connector} connector answered no known outcome: ${shown}`),
    };
  }
  if (d.outcome === 'delivered') return { outcome: 'delivered', ...common };
  const reason = text(d.reason) ?? `the ${connector} connector gave no reason`;
  if (d.outcome === 'retry') {
    const afterMs =
      typeof d.afterMs === 'number' && Number.isFinite(d.afterMs) && d.afterMs >= 0 ? d.afterMs : undefined;
    return { outcome: 'retry', reason, afterMs, ...common };
  }
  return { outcome: d.outcome as 'refused' | 'conflict' | 'unauthorized', reason, ...common };
}
