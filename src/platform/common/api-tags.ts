/**
 * The OpenAPI tags (Swagger UI's sections), in the order Swagger UI shows them, each with the
 * one-line description it shows beside the name. Controllers take their `@ApiTags` name from here
 * and `buildOpenApiDocument` declares every one, so no tag goes without a description.
 */
export const API_TAGS = {
  callback: {
    name: 'callback',
    description:
      "SportAPI's HMAC-signed settlement callback (CONTRACT §3–§5): batches of coupon snapshots, applied exactly once",
  },
  coupons: {
    name: 'coupons',
    description:
      'Register coupons (debits the stake); list them (flagged, unallocated); one with bets, operations, snapshot history',
  },
  accounts: {
    name: 'accounts',
    description:
      'Player accounts: list, balance, statement (JSON or CSV), deposits and withdrawals through the ledger (CONTRACT §10)',
  },
  reconciliation: {
    name: 'reconciliation',
    description:
      'Read a coupon from SportAPI now (polling fallback), or resolve a coupon flagged needs_review by hand (CONTRACT §9)',
  },
  quarantine: {
    name: 'quarantine',
    description:
      'Signed callback bodies refused with 400 or 409, kept verbatim; replay one once the cause is fixed (CONTRACT §8)',
  },
  inbox: {
    name: 'inbox',
    description:
      'Inbox mode (CALLBACK_MODE=inbox): batches committed at the answer, applied by workers moments later',
  },
  deliveryAudit: {
    name: 'delivery audit',
    description: 'Every delivery attempt of the callback, and what one batch wrote (CONTRACT §8)',
  },
  wallet: {
    name: 'wallet',
    description:
      "The wallet outbox: settled money pushed to the bookmaker's wallet; retry, skip, pause and resume its delivery",
  },
  events: {
    name: 'settlement events',
    description:
      "Each financial operation published to the bookmaker's message broker; retry, skip, pause, resume per publisher",
  },
  operatorConsole: {
    name: 'operator console',
    description:
      "One search box for any id, and the console's first screen: deliveries per minute, flags, backlogs",
  },
  bulkActions: {
    name: 'bulk actions',
    description:
      'Replay quarantined bodies, retry or skip parked outbox rows in bulk: plan, run in order, watch, cancel',
  },
  operatorActions: {
    name: 'operator actions',
    description:
      'The append-only log of every action taken with a key of scope money or operate, refusals included',
  },
  healthAndMetrics: {
    name: 'health and metrics',
    description: 'Liveness and readiness probes (no key) and Prometheus metrics of the receiver itself',
  },
} as const;
