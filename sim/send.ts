import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { describeBatch, listBatchFiles } from './batch-files.js';
import { signatureHeader } from './signature.js';

/**
 * `send`: delivers batch files the way SportAPI does (CONTRACT §2): the exact bytes, signed; 10 s
 * per attempt; 200 is delivered (a 200 saying `"success": false` and any other 2xx are final
 * contract violations); timeouts, transport errors and 500/502/503/504 are retried after 1, 5, 15
 * and 60 min (times `timeScale`), at most 5 attempts; anything else is final. Batches go one at a
 * time in order: one waiting for a retry holds back the later ones. docs/simulator.md has the rest.
 */

/** Waits before attempts 2..5, in milliseconds (CONTRACT §2). */
export const RETRY_DELAYS_MS = [60_000, 300_000, 900_000, 3_600_000] as const;
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1;
export const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_CALLBACK_PATH = '/sportapi/callback';
const RETRIED_STATUSES = new Set([500, 502, 503, 504]);

export type Outcome = 'delivered' | 'contract_violation' | 'rejected' | 'gave_up';

export interface Attempt {
  attempt: number;
  /** HTTP status, or null when no answer came. */
  status: number | null;
  /** `timeout` or the transport error code when no answer came. */
  error?: string;
  latencyMs: number;
  body?: string;
}

export interface BatchResult {
  file: string;
  batchId: string | null;
  couponCount: number | null;
  outcome: Outcome;
  attempts: Attempt[];
  /** Status of the last attempt, or its error. */
  finalStatus: number | string;
  /** Latency of the last attempt. */
  latencyMs: number;
  /** Response body said `"duplicate": true`. */
  duplicate: boolean;
  notes: string[];
}

export interface SendReport {
  batches: BatchResult[];
  delivered: number;
  contractViolations: number;
  rejected: number;
  gaveUp: number;
  attempts: number;
  durationMs: number;
  /** True when every batch was delivered. */
  ok: boolean;
}

export interface SendOptions {
  /** Callback URL; a bare origin (`http://host:3000`) gets `/sportapi/callback`. */
  url: string;
  secret: string;
  /** Multiplies the retry waits (0.001: 1 min becomes 60 ms). Default 1. */
  timeScale?: number;
  timeoutMs?: number;
  signatureHeader?: string;
  /** One line per batch. */
  log?: (line: string) => void;
  /** Progress notes (retries). */
  warn?: (line: string) => void;
  /** How to wait between attempts (tests may record the waits). */
  sleep?: (ms: number) => Promise<void>;
}

/** `http://host:3000` → `http://host:3000/sportapi/callback`; a URL with a path is kept. */
export function callbackUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.pathname === '/') parsed.pathname = DEFAULT_CALLBACK_PATH;
  return parsed.toString();
}

function transportError(error: unknown): string {
  // By name, not instanceof: the abort reason is a DOMException, possibly of another realm.
  const name = (error as { name?: string } | null)?.name;
  const cause = (error as { cause?: { code?: string; name?: string } } | null)?.cause;
  if (name === 'TimeoutError' || name === 'AbortError' || cause?.name === 'TimeoutError') return 'timeout';
  return (
    cause?.code ?? (error as { code?: string } | null)?.code ?? String((error as Error)?.message ?? error)
  );
}

/** One HTTP attempt: the whole request, body included, within `timeoutMs`. */
async function attemptOnce(
  url: string,
  bytes: Buffer,
  headers: Record<string, string>,
  timeoutMs: number,
  attempt: number,
): Promise<Attempt> {
  const started = performance.now();
  try {
    const response = await fetch(url, {
      method: 'POST',
      body: bytes,
      headers,
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
    const body = await response.text();
    return { attempt, status: response.status, latencyMs: performance.now() - started, body };
  } catch (error) {
    return { attempt, status: null, error: transportError(error), latencyMs: performance.now() - started };
  }
}

function parseBody(body: string | undefined): Record<string, unknown> | null {
  try {
    const parsed: unknown = JSON.parse(body ?? '');
    return parsed !== null && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** Delivers one batch body with SportAPI's retries. */
export async function deliverBatch(
  bytes: Buffer,
  options: SendOptions & { file?: string },
): Promise<BatchResult> {
  const url = callbackUrl(options.url);
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const timeScale = options.timeScale ?? 1;
  const sleep = options.sleep ?? ((ms: number) => delay(ms));
  const { batchId, couponCount } = describeBatch(bytes);
  const file = options.file ?? '-';
  const attempts: Attempt[] = [];
  const notes: string[] = [];
  const finish = (outcome: Outcome, duplicate = false): BatchResult => {
    const last = attempts[attempts.length - 1];
    return {
      file,
      batchId,
      couponCount,
      outcome,
      attempts,
      finalStatus: last.status ?? (last.error as string),
      latencyMs: last.latencyMs,
      duplicate,
      notes,
    };
  };

  for (let n = 1; n <= MAX_ATTEMPTS; n++) {
    if (n > 1) {
      const wait = Math.round(RETRY_DELAYS_MS[n - 2] * timeScale);
      const previous = attempts[attempts.length - 1];
      options.warn?.(
        `${basename(file)} ${batchId ?? '?'}: attempt ${n - 1} got ${previous.status ?? previous.error}; ` +
          `attempt ${n}/${MAX_ATTEMPTS} in ${wait} ms`,
      );
      await sleep(wait);
    }
    const headers = {
      'content-type': 'application/json',
      [options.signatureHeader ?? 'x-signature']: signatureHeader(bytes, options.secret),
      'x-request-id': randomUUID(),
      'user-agent': 'sportapi-simulator',
    };
    const result = await attemptOnce(url, bytes, headers, timeoutMs, n);
    attempts.push(result);
    const status = result.status;
    if (status === null || RETRIED_STATUSES.has(status)) continue;
    const body = parseBody(result.body);
    if (status === 200) {
      if (body?.success === false) {
        notes.push('200 with "success": false (CONTRACT §5: never; the sender treats it as final)');
        return finish('contract_violation');
      }
      if (body?.success !== true) notes.push('200 without "success": true');
      else if (couponCount !== null && body.processed !== couponCount) {
        notes.push(`processed ${String(body.processed)} is not couponCount ${couponCount}`);
      }
      return finish('delivered', body?.duplicate === true);
    }
    if (status >= 200 && status < 300) {
      notes.push(`${status} is not 200 (CONTRACT §2, §5: success is HTTP 200 only; not retried)`);
      return finish('contract_violation');
    }
    return finish('rejected');
  }
  return finish('gave_up');
}

/** `0003.json  batchId=…  attempts=2  status=200  delivered  latency=12ms` */
export function formatBatchLine(r: BatchResult): string {
  const parts = [
    basename(r.file),
    `batchId=${r.batchId ?? '?'}`,
    `attempts=${r.attempts.length}`,
    `status=${r.finalStatus}`,
    r.outcome === 'delivered' && r.duplicate ? 'delivered(duplicate)' : r.outcome,
    `latency=${Math.round(r.latencyMs)}ms`,
  ];
  if (r.attempts.length > 1) parts.push(`history=${r.attempts.map((a) => a.status ?? a.error).join(',')}`);
  for (const note of r.notes) parts.push(`note: ${note}`);
  return parts.join('  ');
}

export function formatSummary(report: SendReport): string {
  const notDelivered = report.batches.length - report.delivered;
  return (
    `summary: ${report.batches.length} batches, ${report.delivered} delivered, ${notDelivered} not delivered ` +
    `(${report.contractViolations} contract violations, ${report.rejected} rejected, ${report.gaveUp} given up), ` +
    `${report.attempts} attempts, ${(report.durationMs / 1000).toFixed(1)} s`
  );
}

/** Delivers FILE or every batch file of DIR in file-name order (see `listBatchFiles`). */
export async function sendBatches(path: string, options: SendOptions): Promise<SendReport> {
  const started = performance.now();
  const batches: BatchResult[] = [];
  for (const file of await listBatchFiles(path)) {
    const result = await deliverBatch(await readFile(file), { ...options, file });
    options.log?.(formatBatchLine(result));
    batches.push(result);
  }
  const count = (outcome: Outcome) => batches.filter((b) => b.outcome === outcome).length;
  const report: SendReport = {
    batches,
    delivered: count('delivered'),
    contractViolations: count('contract_violation'),
    rejected: count('rejected'),
    gaveUp: count('gave_up'),
    attempts: batches.reduce((sum, b) => sum + b.attempts.length, 0),
    durationMs: performance.now() - started,
    ok: batches.every((b) => b.outcome === 'delivered'),
  };
  options.log?.(formatSummary(report));
  return report;
}
