/** A running PgBouncer of {@link startPgBouncer}. */
export interface PgBouncer {
  port: number;
  /** The upstream URL's user and `database` (its own by default) through PgBouncer. */
  url(database?: string): string;
  /** PgBouncer's log so far. */
  log(): string;
  /** Stops it and removes its folder. */
  stop(): Promise<void>;
}

/** Starts Debian's PgBouncer in front of `upstream` (see pgbouncer.mjs). */
export function startPgBouncer(options: {
  port: number;
  upstream: string;
  poolSize?: number;
  poolMode?: string;
  maxClientConn?: number;
}): Promise<PgBouncer>;
