import Joi from 'joi';
import type { ConfigFragment, ConfigOf } from './config-fragment.js';

/**
 * Validates `env` against the variables of every fragment at once (one Joi object, in the order
 * of the list; defaults applied, an empty variable counting as unset) and returns their values.
 * @throws Error naming every wrong or missing variable: `Invalid configuration:\n  - NAME: why`.
 */
export function validateEnv(
  env: NodeJS.ProcessEnv,
  fragments: readonly ConfigFragment[],
): Record<string, unknown> {
  // An empty variable counts as unset (e.g. `DATABASE_URL=` selects the embedded server).
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const schema = fragments.reduce((all, f) => all.keys(f.schema), Joi.object().unknown(true));
  const { error, value } = schema.validate(present, { abortEarly: false, convert: true });
  if (error) {
    const lines = error.details.map((d) => `  - ${d.context?.label ?? d.path.join('.')}: ${d.message}`);
    throw new Error(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return value as Record<string, unknown>;
}

/**
 * Each fragment's slice, built from the validated `values`, under its key.
 * @throws Error `Invalid configuration:` of a fragment's own rule (e.g. a connector without URL).
 */
export function buildSlices<const F extends readonly ConfigFragment[]>(
  values: Record<string, unknown>,
  fragments: F,
): ConfigOf<F> {
  const keys = fragments.map((f) => f.key);
  const twice = keys.filter((k, i) => keys.indexOf(k) !== i);
  if (twice.length) throw new Error(`configuration slices listed twice: ${twice.join(', ')}`);
  return Object.fromEntries(fragments.map((f) => [f.key, f.build(values)])) as ConfigOf<F>;
}

/**
 * Validates `env` against the variables of `fragments` and returns the typed configuration: each
 * fragment's slice under its key (the app's list: `src/app.config.ts`).
 * @throws Error naming every wrong or missing variable (the app does not start).
 */
export function loadConfigWith<const F extends readonly ConfigFragment[]>(
  env: NodeJS.ProcessEnv,
  fragments: F,
): ConfigOf<F> {
  return buildSlices(validateEnv(env, fragments), fragments);
}
