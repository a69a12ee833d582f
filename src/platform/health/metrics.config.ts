import Joi from 'joi';
import { configFragment, csv } from '../config/config-fragment.js';

/** Who may read `GET /metrics` without a bearer key. */
export interface MetricsConfig {
  /** IP addresses and CIDR blocks allowed to read `GET /metrics` without a bearer key. */
  metricsAllowedNetworks: string[];
}

/** `METRICS_ALLOWED_NETWORKS` (comma-separated IP addresses and CIDR blocks). */
export const metricsConfig = configFragment('metrics', {
  schema: {
    METRICS_ALLOWED_NETWORKS: Joi.string()
      .custom((v: string, helpers) => {
        const ip = Joi.string().ip({ cidr: 'optional' });
        const bad = csv(v).filter((entry) => ip.validate(entry).error);
        return bad.length
          ? helpers.message({
              custom: `METRICS_ALLOWED_NETWORKS: not an IP address or CIDR block: ${bad.join(', ')}`,
            })
          : v;
      })
      .optional(),
  },
  build: (v): MetricsConfig => ({
    metricsAllowedNetworks: csv(v.METRICS_ALLOWED_NETWORKS as string | undefined),
  }),
});

/** Injection token of the {@link MetricsConfig} slice. */
export const METRICS_CONFIG = metricsConfig.token;
