import { configFragment, Joi } from '../../src/extensions.js';

/** The example partner's settings (docs/extending.md#configuration): validated at start with the receiver's. */
export interface PartnerConfig {
  /** Loyalty points per whole unit of a win's `final_credit` (`PARTNER_POINTS_PER_UNIT`, default 1). */
  pointsPerUnit: number;
}

/** `PARTNER_…`: its slice is provided under {@link PARTNER_CONFIG}. */
export const partnerConfig = configFragment('partner', {
  schema: {
    PARTNER_POINTS_PER_UNIT: Joi.number().integer().min(1).max(1000).default(1),
  },
  build: (v): PartnerConfig => ({ pointsPerUnit: v.PARTNER_POINTS_PER_UNIT as number }),
});

/** Injection token of the partner's slice ({@link PartnerConfig}). */
export const PARTNER_CONFIG = partnerConfig.token;
