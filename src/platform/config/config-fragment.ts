import Joi from 'joi';
import ms from 'ms';

/**
 * A feature's slice of the configuration (docs/configuration.md): the Joi rules of the variables
 * it reads, how it builds its typed slice from their validated values, the key of that slice in
 * the whole configuration and the injection token the slice is provided under. Each feature owns
 * its fragment (e.g. `walletConfig` and `WALLET_CONFIG` in `src/outbound/wallet/wallet.config.ts`) and its
 * classes inject only the slices they use; the app lists the fragments it is made of
 * (`src/app.config.ts`), and the whole configuration's type is derived from that list
 * ({@link ConfigOf}). config/ itself imports no feature.
 */
export interface ConfigFragment<K extends string = string, T extends object = object> {
  /** The slice's key in the whole configuration (`wallet`: `config.wallet`). */
  readonly key: K;
  /** The Nest injection token the slice is provided under (`@Inject(WALLET_CONFIG)`). */
  readonly token: symbol;
  /** Environment variable → rule (defaults included). */
  readonly schema: Joi.PartialSchemaMap;
  /**
   * The slice, from the validated values of every variable (its own are what it may read).
   * @throws Error `Invalid configuration:\n  - NAME: why` for a rule Joi cannot say.
   */
  build(values: Record<string, unknown>): T;
}

/** The slice type a fragment builds. */
export type SliceOf<F> = F extends ConfigFragment<string, infer T> ? T : never;

/**
 * The whole configuration of a list of fragments: each fragment's slice under its key, and
 * nothing else (a feature whose fragment is not listed has no field here).
 */
export type ConfigOf<F extends readonly ConfigFragment[]> = {
  [P in F[number] as P['key']]: SliceOf<P>;
};

/**
 * A fragment with its own injection token (`Symbol('<key> configuration')`), typed by `build`.
 * `key` names the slice in the whole configuration; an extension's slice is kept under the
 * extension's name whatever its key (docs/extending.md#configuration).
 */
export function configFragment<K extends string, T extends object>(
  key: K,
  fragment: Pick<ConfigFragment<K, T>, 'schema' | 'build'>,
): ConfigFragment<K, T> {
  return { key, token: Symbol(`${key} configuration`), schema: fragment.schema, build: fragment.build };
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
