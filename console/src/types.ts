/** The API's records as the console reads them (docs/api.md; amounts are decimal strings). */

/** A page of a keyset-paginated list, newest first; `nextCursor` null on the last page. */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export interface WhoAmI {
  name: string;
  scopes: string[];
  /** What the receiver is set up to do (docs/api.md, `GET /auth/whoami`). */
  receiver: ReceiverSettings;
}

export interface ReceiverSettings {
  /** SportAPI polling on: Reconcile now works (off: it answers 501). */
  polling: boolean;
  scheduledReconciliation: boolean;
  /** null: no wallet connector, the wallet outbox delivers nothing. */
  walletConnector: string | null;
  /** The kind of each coupon status code (`STATUS_MAP`); any other code is UNKNOWN. */
  statusKinds: Record<string, string>;
}

export interface DeliverySeries {
  from: string;
  minutes: number;
  series: Record<string, number[]>;
  totals: Record<string, number>;
}

export interface Overview {
  generatedAt: string;
  deliveries: { lastHour: DeliverySeries; lastDay: DeliverySeries; rolledUntil: string | null };
  coupons: { needsReview: number; byReviewReason: Record<string, number>; unallocated: number };
  quarantine: { notReplayed: number; oldestNotReplayedAt: string | null };
  inbox: { pending: number; oldestPendingAgeSeconds: number };
  walletOutbox: OutboxFigures;
  events: (OutboxFigures & { publisher: string })[];
}

/** The overview's figures of an outbox (the wallet's, a publisher's). */
export interface OutboxFigures {
  paused: boolean;
  pending: number;
  parked: number;
  skipped: number;
  oldestUndeliveredAgeSeconds: number;
}

export interface SearchHit {
  kind: string;
  id: string;
  label: string;
  link: string;
}

export interface CouponSummary {
  coupon_code: string;
  accountId: string | null;
  stake: string | null;
  currency: string | null;
  status: number | null;
  realWin: string | null;
  settlementGeneration: number;
  settled: boolean;
  recalculationOpen: boolean;
  needsReview: boolean;
  reviewReason: string | null;
  unallocated: boolean;
  lastBatchId?: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface CouponOperation {
  key: string;
  type: string;
  generation: number | null;
  amount: string;
}

export interface Coupon extends Omit<CouponSummary, 'createdAt' | 'updatedAt'> {
  registeredBy: string | null;
  events: Record<string, unknown>[];
  operations: CouponOperation[];
}

export interface Snapshot {
  id: string;
  batchId: string;
  receivedAt: string;
  status: number;
  realWin: string | null;
  transition: string;
  generation: number;
  applied: boolean;
  actor: string | null;
  decidedOperations: { type: string; generation: number; amount: string }[];
  operations: (CouponOperation & { createdAt: string })[];
}

export interface Resolution {
  idempotencyKey: string;
  coupon_code: string;
  status: number;
  realWin: string;
  reason: string;
  resolvedBy: string;
  actor: string | null;
  batchId: string;
  transition: string;
  generation: number;
  operations: string[];
  resolvedAt: string;
}

export interface QuarantineEntry {
  id: string;
  batchId: string | null;
  reason: string;
  details: unknown;
  httpStatus: number;
  contentType: string | null;
  payloadHash: string;
  receivedAt: string;
  bodyBytes: number;
  bodyPreview: string;
  replayedAt: string | null;
  replayOutcome: string | null;
  replayCount: number;
  inboxId: string | null;
  replayedBy: string | null;
}

export interface QuarantineDetail extends QuarantineEntry {
  body: string;
  bodyBase64: string;
}

export interface DeliveryAttempt {
  id: string;
  batchId: string | null;
  requestId: string | null;
  receivedAt: string;
  outcome: string;
  httpStatus: number;
  errorCode: string | null;
  couponCount: number | null;
  durationMs: number;
  payloadHash: string | null;
  actor: string | null;
  /** OpenTelemetry trace id; null when tracing was off. */
  traceId: string | null;
}

export interface BatchAudit {
  batchId: string;
  committed: boolean;
  payloadHash: string | null;
  couponCount: number | null;
  committedAt: string | null;
  actor: string | null;
  coupons: {
    coupon_code: string;
    status: number;
    realWin: string | null;
    applied: boolean;
    transition: string;
    generation: number;
  }[];
  operations: {
    key: string;
    type: string;
    couponCode: string | null;
    accountId: string;
    amount: string;
    currency: string;
    createdAt: string;
  }[];
  deliveries: DeliveryAttempt[];
  quarantined: number;
}

export interface OutboxRow {
  id: string;
  /** A pending row waiting behind its account's parked row: that row's id. */
  heldBy: string | null;
  operationKey: string;
  type: string;
  accountId: string;
  amount: string;
  currency: string;
  couponCode: string | null;
  status: string;
  attempts: number;
  nextAttemptAt: string;
  leasedUntil: string | null;
  lastStatus: number | null;
  lastError: string | null;
  parkedReason: string | null;
  createdAt: string;
  deliveredAt: string | null;
  parkedAt: string | null;
  skippedAt: string | null;
  skippedBy: string | null;
  skipReason: string | null;
  retriedAt: string | null;
  retriedBy: string | null;
}

export interface OutboxDetail extends OutboxRow {
  deliveryAttempts: {
    attempt: number;
    requestId: string;
    connector: string;
    startedAt: string;
    durationMs: number;
    outcome: string;
    httpStatus: number | null;
    answer: string | null;
    traceId: string | null;
  }[];
  body: string | null;
}

/** `GET /wallet/status`, or one publisher's entry of `GET /events/status`. */
export interface OutboxStatus {
  /** The wallet's connector (wallet only). */
  connector?: string | null;
  /** The publisher's name (settlement events only). */
  publisher?: string;
  paused: boolean;
  reason: string | null;
  /** null: never paused nor resumed. */
  changedAt: string | null;
  changedBy: string | null;
  pending: number;
  parked: number;
  oldestPendingAgeSeconds: number;
}

export interface AccountSummary {
  id: string;
  currency: string;
  balance: string;
  createdAt: string;
  updatedAt: string;
}

export interface StatementEntry {
  entryId: string;
  at: string;
  operationKey: string;
  type: string;
  couponCode: string | null;
  amount: string;
  balanceAfter: string;
  currency: string;
}

export interface Statement {
  accountId: string;
  currency: string;
  balance: string;
  items: StatementEntry[];
  nextCursor: string | null;
}

export interface OperatorAction {
  id: string;
  at: string;
  actor: string;
  action: string;
  targetKind: string | null;
  targetId: string | null;
  reason: string | null;
  requestId: string | null;
  outcome: string;
  details: unknown;
}

export type BulkKind = 'quarantine_replay' | 'outbox_retry' | 'outbox_skip';

export interface BulkPlan {
  kind: BulkKind;
  filter: Record<string, unknown>;
  matched: number;
  cap: number;
  wouldTouch: number;
  sample: string[];
}

export interface BulkAction {
  id: string;
  kind: BulkKind;
  filter: Record<string, unknown>;
  reason: string;
  actor: string;
  cap: number;
  total: number;
  status: 'running' | 'done' | 'cancelled';
  done: number;
  skipped: number;
  failed: number;
  pending: number;
  createdAt: string;
  finishedAt: string | null;
  cancelledBy: string | null;
}

export interface BulkItem {
  seq: number;
  targetId: string;
  outcome: string;
  code: string | null;
  message: string | null;
  groupKeys: string[] | null;
  attempts: number;
  finishedAt: string | null;
}

export interface BulkDetail extends BulkAction {
  items: BulkItem[];
  nextCursor: string | null;
}
