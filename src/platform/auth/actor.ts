import type { Tx } from '../database/transaction.js';
import type { Scope } from './api-keys.js';

/** How an action ended, as its operator action and a bulk action's row record it. */
export type ActionOutcome =
  { ok: true; details: Record<string, unknown> } | { ok: false; code: string; message: string };

/**
 * A row of a bulk action run through the single action's service method (docs/api.md, "Bulk
 * actions"): `begin` runs first in the action's transaction (it locks the bulk action and stops
 * the action when the row is no longer to do), `end` last, with how it ended, in the same
 * transaction (or in the refusal's, after a rollback), so a row is never done twice.
 */
export interface BulkRowHooks {
  bulkActionId: string;
  begin(tx: Tx): Promise<void>;
  end(tx: Tx, outcome: ActionOutcome): Promise<void>;
}

/**
 * Who acts on the partner API (CONTRACT §10): the key's name (recorded as the actor of what it
 * does), its scopes and the request's id; set by `@Actor()` on a route, or by the bulk action
 * worker for each row it runs (`row`). Never the secret.
 */
export interface Actor {
  name: string;
  scopes: readonly Scope[];
  /** `X-Request-Id` of the request; `bulk-action:<id>` for a bulk action's row. */
  requestId: string | null;
  /** The client address of the request (`clientAddressOf`); null for a bulk action's row. */
  clientAddress: string | null;
  row?: BulkRowHooks;
}
