/**
 * Anything that runs SQL with positional parameters: a `pg.Client`, a `pg.Pool`, a pool client,
 * a {@link Tx} of the transaction runner.
 */
export interface SqlQueryable {
  query<R extends Record<string, unknown> = Record<string, unknown>>(
    sql: string,
    params?: unknown[],
  ): Promise<{ rows: R[] }>;
}
