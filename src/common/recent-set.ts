/**
 * A set of at most `capacity` strings, for process-local memories of what was committed: adding
 * past the capacity forgets the string added (or re-added) longest ago.
 */
export class RecentSet {
  private readonly items = new Set<string>();

  constructor(private readonly capacity: number) {}

  has(item: string): boolean {
    return this.items.has(item);
  }

  /** True when every one of `items` is in the set (true for none). */
  hasAll(items: readonly string[]): boolean {
    for (const item of items) if (!this.items.has(item)) return false;
    return true;
  }

  add(item: string): void {
    this.items.delete(item);
    this.items.add(item);
    if (this.items.size > this.capacity) this.items.delete(this.items.values().next().value as string);
  }

  delete(item: string): void {
    this.items.delete(item);
  }
}
