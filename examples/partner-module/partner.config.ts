import { configFragment, Joi } from '../../src/extensions.js';
import type { AppConfig } from '../../src/extensions.js';

/** The example partner's settings (docs/extending.md#configuration): validated at start with the receiver's. */
export interface PartnerConfig {
  partner: {
    /** Loyalty points per whole unit of a win's `final_credit` (`PARTNER_POINTS_PER_UNIT`, default 1). */
    pointsPerUnit: number;
  };
}

/** The configuration of an app with the partner's extension. */
export type PartnerAppConfig = AppConfig & PartnerConfig;

export const partnerConfig = configFragment<PartnerConfig>({
  schema: {
    PARTNER_POINTS_PER_UNIT: Joi.number().integer().min(1).max(1000).default(1),
  },
  build: (v) => ({ partner: { pointsPerUnit: v.PARTNER_POINTS_PER_UNIT as number } }),
});
