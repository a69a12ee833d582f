/**
 * An error that says "not now": the transaction it ends is rolled back and the work is tried
 * again (the callback answers 503 so that SportAPI delivers again, an inbox row is retried with
 * its back-off, an operator is answered 503). Subclasses name what failed (e.g. a settlement
 * hook); the filters classify it without knowing the feature.
 */
export class TransientError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TransientError';
  }
}
