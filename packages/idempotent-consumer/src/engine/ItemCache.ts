import type { Item } from '../types.js';

/** What an execution environment last knew of an item: it exists with this value, or it does not exist. */
export interface CachedItem {
  readonly exists: boolean;
  readonly item: Item | undefined;
}

/**
 * The items this execution environment committed or read last, by item id, so that the next
 * batch can decide without reading them (the commit's conditions check that they did not change;
 * when they did, the cancellation returns the current item). Least recently used entries go
 * first beyond `maxEntries`. Values are not verified: never act on them alone.
 */
export class ItemCache {
  readonly #entries = new Map<string, CachedItem>();

  constructor(private readonly maxEntries = 10_000) {}

  get(id: string): CachedItem | undefined {
    const entry = this.#entries.get(id);
    if (entry !== undefined) {
      this.#entries.delete(id);
      this.#entries.set(id, entry);
    }
    return entry;
  }

  /** Remembers `item` (`undefined`: the item does not exist). */
  set(id: string, item: Item | undefined): void {
    this.#entries.delete(id);
    this.#entries.set(id, { exists: item !== undefined, item });
    if (this.#entries.size > this.maxEntries) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
  }

  /** Forgets an item whose value is no longer known (e.g. after an `Update`). */
  delete(id: string): void {
    this.#entries.delete(id);
  }

  get size(): number {
    return this.#entries.size;
  }
}
