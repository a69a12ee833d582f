import Joi from 'joi';
import ms from 'ms';

/**
 * A feature's part of the configuration (docs/configuration.md): the Joi rules of the variables
 * it reads and how it builds its typed fields from their validated values. Each feature owns its
 * fragment (e.g. `src/wallet/wallet.config.ts`) and adds its fields to `AppConfig` by declaration
 * merging (`declare module '../config/configuration.js'`); the app lists the fragments it is
 * made of (`src/app.config.ts`). config/ itself imports no feature.
 */
export interface ConfigFragment<T extends object = object> {
  /** Environment variable → rule (defaults included). */
  schema: Joi.PartialSchemaMap;
  /**
   * The feature's fields of `AppConfig` from the validated values of every variable.
   * @throws Error `Invalid configuration:\n  - NAME: why` for a rule Joi cannot say.
   */
  build(values: Record<string, unknown>): T;
}

/** A fragment, typed (an identity: it only checks the shape). */
export function configFragment<T extends object>(fragment: ConfigFragment<T>): ConfigFragment<T> {
  return fragment;
}

/** The comma-separated items of a variable, trimmed, empty ones left out. */
export const csv = (v: string | undefined): string[] =>
  (v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);

/**
 * A duration: milliseconds as a bare integer (`5400000`) or a number with a unit that the `ms`
 * package reads (`90m`, `1.5h`, `30s`, `2 days`). `allowOff` also accepts `off`/`false`/`0` as 0.
 */
export function duration(allowOff = false) {
  return Joi.string().custom((v: string, helpers) => {
    const text = v.trim();
    if (allowOff && /^(off|false|0)$/i.test(text)) return 0;
    const value = /^\d+$/.test(text) ? Number(text) : ms(text as ms.StringValue);
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || !Number.isInteger(value))
      return helpers.message({
        custom: `{{#label}} must be milliseconds or a duration like "90m", "30s", "2h"${allowOff ? ', or "off"' : ''}`,
      });
    return value;
  });
}

/** A comma-separated list of names among `known` (at least one), for the variable `name`. */
export function namesOf(name: string, known: readonly string[]) {
  return Joi.string().custom((v: string, helpers) => {
    const bad = csv(v).filter((t) => !known.includes(t));
    return bad.length || !csv(v).length
      ? helpers.message({
          custom: `${name} must be comma-separated names among ${known.join(', ')}: ${bad.join(', ') || 'none given'}`,
        })
      : v;
  });
}

/** Throws the start error naming each `problem` (`NAME: why`) when there is any. */
export function refuse(problems: string[]): void {
  const found = problems.filter(Boolean);
  if (found.length) throw new Error(`Invalid configuration:\n${found.map((m) => `  - ${m}`).join('\n')}`);
}
