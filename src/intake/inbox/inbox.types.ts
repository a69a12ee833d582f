/** State of an inbox row: waiting to be applied, applied (or found a duplicate), or quarantined. */
export type InboxStatus = 'pending' | 'done' | 'quarantined';
