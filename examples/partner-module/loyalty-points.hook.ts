import { Inject, Injectable } from '@nestjs/common';
import { OperationType, SettlementHook } from '../../src/extensions.js';
import type { CouponTransition, SettlementHookContext } from '../../src/extensions.js';
import { PARTNER_CONFIG } from './partner.config.js';
import type { PartnerConfig } from './partner.config.js';

/**
 * An example settlement hook (docs/extending.md): each settled win of a registered coupon earns
 * the player `PARTNER_POINTS_PER_UNIT` loyalty points per whole unit of its `final_credit`
 * (its tables: migrations/1796700000000-PartnerTables.ts), written to the partner's
 * table in the settlement transaction itself (`context.write`: with the batch's last group, no
 * round trip of its own), so points exist exactly when the win does. While the player's loyalty
 * account is frozen it refuses the settlement (it throws): the batch rolls back, the callback is
 * answered 503 and SportAPI delivers it again; once unfrozen, the redelivery applies it once.
 */
@Injectable()
export class LoyaltyPointsHook extends SettlementHook {
  readonly name = 'loyalty-points';

  constructor(@Inject(PARTNER_CONFIG) private readonly config: PartnerConfig) {
    super();
  }

  async onTransition(t: CouponTransition, context: SettlementHookContext): Promise<void> {
    const credits = t.operations.filter((op) => op.type === OperationType.FINAL_CREDIT);
    if (!t.posted || !credits.length || t.accountId === null) return;
    // A read in the settlement transaction: one round trip, only for coupons that won.
    const { rows } = await context.tx.query<{ reason: string }>(
      'SELECT reason FROM partner_loyalty.frozen_accounts WHERE account_id = $1',
      [t.accountId],
    );
    if (rows.length) throw new Error(`loyalty account ${t.accountId} is frozen (${rows[0].reason})`);
    for (const op of credits) {
      // Unnamed: the batch's group may hold several (a name is for a statement sent once per group).
      context.write({
        text: `INSERT INTO partner_loyalty.points (operation_key, account_id, coupon_code, points, batch_id)
               VALUES ($1, $2, $3, floor($4::numeric)::bigint * $6, $5) ON CONFLICT (operation_key) DO NOTHING`,
        values: [op.operationKey, t.accountId, t.couponCode, op.amount, t.batchId, this.config.pointsPerUnit],
      });
    }
  }
}
