/**
 * A broker publisher's connection: opened by `connect` at its first use and shared by the calls
 * after it; opened again at the next use after {@link BrokerConnection.forget} (a failure, a close)
 * or after an opening that failed.
 */
export class BrokerConnection<C> {
  private opened: Promise<C> | undefined;

  constructor(private readonly connect: () => Promise<C>) {}

  /** The open connection, opened now if there is none. @throws what `connect` throws. */
  get(): Promise<C> {
    this.opened ??= this.connect().catch((err: unknown) => {
      this.opened = undefined;
      throw err;
    });
    return this.opened;
  }

  /** Drops the connection: the next use opens another. */
  forget(): void {
    this.opened = undefined;
  }

  /** Forgets the connection and, if one was opened, closes it with `close`; a failure is ignored. */
  async close(close: (connection: C) => Promise<void>): Promise<void> {
    const opened = this.opened;
    this.opened = undefined;
    if (!opened) return;
    try {
      await close(await opened);
    } catch {
      // Never opened, or already gone.
    }
  }
}
