/** One coupon snapshot after validation: canonical `realWin` and the object exactly as parsed. */
export interface ParsedCoupon {
  couponCode: string;
  status: number;
  /** Canonical decimal string with the configured scale, or null. */
  realWin: string | null;
  events: { uuid: string; status: number; payload: Record<string, unknown> }[];
  /** The coupon as it came, unknown fields included. */
  payload: Record<string, unknown>;
}

/** A verified, parsed and validated batch with its raw bytes and their SHA-256 (CONTRACT §4). */
export interface ParsedBatch {
  batchId: string;
  couponCount: number;
  coupons: ParsedCoupon[];
  rawBody: Buffer;
  /** Hex SHA-256 of the raw (decoded) body. */
  payloadHash: string;
  /** Payloads hold `LosslessNumber`s (numbers kept with their digits) and need the exact writer. */
  losslessNumbers: boolean;
  /**
   * The body's own jsonb form can stand for the parsed coupon payloads (the same keys and strings;
   * numbers equal as numbers), so they need not be sent to the database again.
   */
  payloadsAsSent: boolean;
  /**
   * Set by the inbox workers: the `callback_inbox` row holding these exact bytes, which the claim
   * copies as stored instead of sending (and compressing) them again.
   */
  inboxId?: string;
}
