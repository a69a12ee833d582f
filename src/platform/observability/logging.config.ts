import Joi from 'joi';
import { configFragment } from '../config/config-fragment.js';

/** The JSON logs (docs/operating.md#logs). */
export interface LoggingConfig {
  /** pino level: fatal, error, warn, info, debug, trace or silent. */
  logLevel: string;
}

/** `LOG_LEVEL`. */
export const loggingConfig = configFragment('logging', {
  schema: {
    LOG_LEVEL: Joi.string()
      .valid('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent')
      .default('info'),
  },
  build: (v): LoggingConfig => ({ logLevel: v.LOG_LEVEL as string }),
});

/** Injection token of the {@link LoggingConfig} slice. */
export const LOGGING_CONFIG = loggingConfig.token;
