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

/**
 * A map of at most `capacity` entries, for process-local memories that may be lost: setting past
 * the capacity forgets the entry set (or re-set) longest ago. {@link take} reads and forgets.
 */
export class RecentMap<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(private readonly capacity: number) {}

  set(key: K, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as K);
  }

  /** The value of `key`, forgotten; undefined when unknown (never set, taken, or forgotten). */
  take(key: K): V | undefined {
    const value = this.entries.get(key);
    this.entries.delete(key);
    return value;
  }

  get size(): number {
    return this.entries.size;
  }
}
