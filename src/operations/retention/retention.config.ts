import Joi from 'joi';
import ms from 'ms';
import { configFragment, csv, duration, namesOf, refuse } from '../../platform/config/config-fragment.js';

/**
 * The data classes of the retention policy (docs/retention.md): what each removes, by which
 * variable, its default and its floor. Everything else (ledger, coupons and bets, resolutions,
 * operator actions) is kept forever.
 */
export const RETENTION_CLASSES = {
  /** `callback_batches` rows (batch id, payload hash): recognise a redelivery, answer an audit. */
  batch_ids: { variable: 'RETENTION_BATCH_IDS', defaultDays: 400, floorDays: 120 },
  /** Raw bodies: `callback_batches.payload`, finished inbox rows, replayed quarantined bodies, finished outbox bodies. */
  raw_bodies: { variable: 'RETENTION_RAW_BODIES', defaultDays: 90, floorDays: 30 },
  /** `coupon_snapshots` (the snapshot JSON with its decided operations), monthly partitions. */
  snapshots: { variable: 'RETENTION_SNAPSHOTS', defaultDays: 90, floorDays: 30 },
  /** `delivery_attempts` (attempt metadata of the callback), monthly partitions. */
  delivery_attempts: { variable: 'RETENTION_DELIVERY_ATTEMPTS', defaultDays: 400, floorDays: 30 },
  /** Delivered or skipped `wallet_outbox`/`event_outbox` rows and their attempts (monthly partitions). */
  outbox: { variable: 'RETENTION_OUTBOX', defaultDays: 400, floorDays: 30 },
} as const;

/** A data class of the retention policy. */
export type RetentionClass = keyof typeof RETENTION_CLASSES;

/** The classes, in report order. */
export const RETENTION_CLASS_NAMES = Object.keys(RETENTION_CLASSES) as RetentionClass[];

/** Milliseconds of a day. */
export const DAY_MS = 86_400_000;

/** The retention policy (docs/retention.md); durations in milliseconds. */
export interface RetentionConfig {
  /** How long each class is kept; `null`: forever (`off`). Never below the class's floor. */
  keepMs: Record<RetentionClass, number | null>;
  /** Milliseconds between runs of the scheduled maintenance job; 0: no scheduled runs. */
  intervalMs: number;
  /** Monthly partitions created ahead of the current month (at least 2). */
  partitionsAhead: number;
  /** Classes whose expiring partitions are archived before they are dropped. */
  archiveClasses: RetentionClass[];
  /** Name of the archive connector (`directory` by default, or any registered `ArchiveConnector`). */
  archiveConnector: string;
  /** Folder of the `directory` connector. */
  archiveDir: string | undefined;
  /** Rows a bounded delete or update of a non-partitioned table touches per statement. */
  batchRows: number;
}

const schema: Joi.PartialSchemaMap = {
  RETENTION_INTERVAL: duration(true).default(3_600_000),
  RETENTION_PARTITIONS_AHEAD: Joi.number().integer().min(2).max(24).default(3),
  RETENTION_ARCHIVE: namesOf('RETENTION_ARCHIVE', RETENTION_CLASS_NAMES).optional(),
  RETENTION_ARCHIVE_CONNECTOR: Joi.string()
    .pattern(/^[a-z][a-z0-9-]{0,63}$/)
    .default('directory'),
  RETENTION_ARCHIVE_DIR: Joi.string().optional(),
  RETENTION_BATCH_ROWS: Joi.number().integer().min(1).max(100_000).default(1000),
};
/** The longest bare number of days taken (100 years): a larger one is a millisecond count misread. */
const MAX_BARE_DAYS = 36_500;

for (const [name, c] of Object.entries(RETENTION_CLASSES))
  schema[c.variable] = retentionPeriod(name, c.floorDays).optional();

/**
 * A class's retention period (docs/retention.md): a bare number is days (`400`, `0.5`), a number
 * with a unit the `ms` package reads is that (`400d`, `90 days`, `2160h`, `34560000000ms`), and
 * `off`/`false`/`0` is forever (0). Refused, quoting what was read and naming the units: an
 * unreadable value, a bare number over 100 years, or a period below the class's floor.
 */
function retentionPeriod(name: string, floorDays: number) {
  return Joi.string().custom((v: string, helpers) => {
    const text = v.trim();
    if (/^(off|false|0)$/i.test(text)) return 0;
    const bare = /^\d+(\.\d+)?$/.test(text);
    const parsed = bare ? Number(text) * DAY_MS : ms(text as ms.StringValue);
    const read = `"${text}"`;
    if (typeof parsed !== 'number' || !Number.isFinite(parsed) || parsed <= 0)
      return helpers.message({
        custom: `${read} is not a period: days as a bare number ("400"), a number with a unit ("400d", "90 days", "2160h"), or "off"`,
      });
    if (bare && Number(text) > MAX_BARE_DAYS)
      return helpers.message({
        custom: `${read} would be ${text} days (a bare number is days): write milliseconds with their unit ("${text}ms") or days ("400d")`,
      });
    const value = Math.round(parsed);
    if (value < floorDays * DAY_MS)
      return helpers.message({
        custom: `${read} is ${days(value)}${bare ? ' (a bare number is days)' : ''}, below the floor of ${floorDays} days for ${name} (docs/retention.md)`,
      });
    return value;
  });
}

/**
 * `RETENTION_*` (docs/retention.md, "Changing the policy"): each class's period (`400`/`400d`, `90
 * days`, `off` for forever), refused below its floor with a start error naming the variable.
 */
export const retentionConfig = configFragment('retention', {
  schema,
  /** @throws Error when archiving with the directory connector without a folder. */
  build: (v): RetentionConfig => {
    const keepMs = {} as Record<RetentionClass, number | null>;
    const problems: string[] = [];
    for (const name of RETENTION_CLASS_NAMES) {
      const { variable, defaultDays } = RETENTION_CLASSES[name];
      // Validated by retentionPeriod: at or above the class's floor, or 0 (off).
      const given = v[variable] as number | undefined;
      keepMs[name] = given === undefined ? defaultDays * DAY_MS : given === 0 ? null : given;
    }
    const archiveClasses = csv(v.RETENTION_ARCHIVE as string | undefined) as RetentionClass[];
    const connector = v.RETENTION_ARCHIVE_CONNECTOR as string;
    const archiveDir = v.RETENTION_ARCHIVE_DIR as string | undefined;
    if (archiveClasses.length && connector === 'directory' && !archiveDir)
      problems.push('RETENTION_ARCHIVE_DIR: required to archive with the directory connector');
    refuse(problems);
    return {
      keepMs,
      intervalMs: v.RETENTION_INTERVAL as number,
      partitionsAhead: v.RETENTION_PARTITIONS_AHEAD as number,
      archiveClasses,
      archiveConnector: connector,
      archiveDir,
      batchRows: v.RETENTION_BATCH_ROWS as number,
    };
  },
});

/** Injection token of the {@link RetentionConfig} slice. */
export const RETENTION_CONFIG = retentionConfig.token;

/** Milliseconds as days for a message (`12.5 days`). */
function days(millis: number): string {
  const d = Math.round((millis / DAY_MS) * 100) / 100;
  return `${d} day${d === 1 ? '' : 's'}`;
}

/**
 * The retention policy alone from `env` (for `npm run retention`, which needs no other variable).
 * @throws Error `Invalid configuration:` naming each wrong variable, as at start.
 */
export function loadRetentionConfig(env: NodeJS.ProcessEnv): RetentionConfig {
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const { error, value } = Joi.object(schema)
    .unknown(true)
    .validate(present, { abortEarly: false, convert: true });
  if (error) refuse(error.details.map((d) => `${d.context?.label ?? d.path.join('.')}: ${d.message}`));
  return retentionConfig.build(value as Record<string, unknown>);
}
