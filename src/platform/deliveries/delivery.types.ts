/** Outcomes of a delivery attempt (CONTRACT §8). */
export enum DeliveryOutcome {
  PROCESSED = 'processed',
  /** Inbox mode: committed to the inbox and answered 200; a worker applies it later. */
  ACCEPTED = 'accepted',
  DUPLICATE = 'duplicate',
  CONFLICT = 'conflict',
  REJECTED = 'rejected',
  UNAUTHORIZED = 'unauthorized',
  FAILED = 'failed',
}
