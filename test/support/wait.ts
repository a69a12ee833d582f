/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Polls `probe` every `intervalMs` until it returns a truthy value and resolves with that value: for
 * states reached by work the test does not await (inbox workers, scheduled jobs, other processes).
 * @throws `timed out waiting for <what>` once `timeoutMs` (default 10 s) have passed.
 */
export async function eventually<T>(
  probe: () => Promise<T>,
  what: string,
  { timeoutMs = 10_000, intervalMs = 20 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<Exclude<T, false | null | undefined>> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value as Exclude<T, false | null | undefined>;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(intervalMs);
  }
}
