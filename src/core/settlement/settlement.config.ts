import Joi from 'joi';
import { configFragment, csv } from '../../platform/config/config-fragment.js';

/** How SportAPI's coupon status codes are read (CONTRACT §6). */
export interface SettlementConfig {
  /** Status code → kind; defaults of CONTRACT §6 when unset. */
  statusMap: Record<number, string>;
}

/** Default status-code map of CONTRACT §6. */
export const DEFAULT_STATUS_MAP: Record<number, string> = {
  1: 'PENDING',
  2: 'WIN',
  3: 'REFUND',
  4: 'LOSS',
  15: 'RECALCULATION',
};

/** `STATUS_MAP` (`code:KIND`, comma-separated; it replaces the whole default map). */
export const settlementConfig = configFragment('settlement', {
  schema: {
    STATUS_MAP: Joi.string()
      .pattern(
        /^\s*\d+\s*:\s*(PENDING|WIN|REFUND|LOSS|RECALCULATION)\s*(,\s*\d+\s*:\s*(PENDING|WIN|REFUND|LOSS|RECALCULATION)\s*)*$/,
      )
      .optional()
      .messages({
        'string.pattern.base': 'STATUS_MAP must look like "1:PENDING,2:WIN,3:REFUND,4:LOSS,15:RECALCULATION"',
      }),
  },
  build: (v): SettlementConfig => {
    const statusMap: Record<number, string> = v.STATUS_MAP ? {} : { ...DEFAULT_STATUS_MAP };
    for (const pair of csv(v.STATUS_MAP as string | undefined)) {
      const [code, kind] = pair.split(':').map((s) => s.trim());
      statusMap[Number(code)] = kind;
    }
    return { statusMap };
  },
});

/** Injection token of the {@link SettlementConfig} slice. */
export const SETTLEMENT_CONFIG = settlementConfig.token;
