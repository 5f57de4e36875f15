import { LRUCache } from 'lru-cache';

/**
 * An LRU of at most `maxEntries` entries that allocates nothing until entries arrive: bounded
 * through `maxSize` with each entry counting 1, not through `max`, for which lru-cache
 * allocates storage for every entry up front (about 2.7 MB per 100,000: typed arrays and two
 * arrays of that many slots), whether any key is ever seen. For the large per-key caches (rate
 * limits, last-use touches) a process makes several of (test/reliability/bounded-caches.test.ts).
 * @param maxEntries - most entries kept; past it the least recently used is dropped.
 * @returns an empty `LRUCache`.
 */
export function boundedLru<K extends NonNullable<unknown>, V extends NonNullable<unknown>>(maxEntries: number): LRUCache<K, V> {
  return new LRUCache<K, V>({ maxSize: maxEntries, sizeCalculation: () => 1 });
}
