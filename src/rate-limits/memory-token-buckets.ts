import { TokenBucket } from 'limiter';
import { LRUCache } from 'lru-cache';
import { takeResult, type TakeResult, type TokenBuckets } from './token-buckets.ts';

/**
 * {@link TokenBuckets} in this process's memory, created full on first use and kept in a
 * bounded LRU so memory stays flat however many keys are seen. Without `REDIS_URL` each
 * replica limits alone: with N replicas a key may use up to N times the limit
 * (docs/operations.md).
 */
export class KeyedTokenBuckets implements TokenBuckets {
  private readonly buckets: LRUCache<string, TokenBucket>;

  /**
   * @param burst - bucket size (tokens).
   * @param refill - tokens added per `intervalMs`.
   * @param intervalMs - refill interval in milliseconds.
   * @param maxKeys - most buckets kept; the least recently used is dropped (it refills anyway).
   */
  constructor(
    readonly burst: number,
    readonly refill: number,
    readonly intervalMs: number,
    maxKeys = 100_000,
  ) {
    // Bounded through `maxSize` (each bucket counts 1), not `max`: with `max`, lru-cache
    // allocates storage for every entry up front (about 2.7 MB per 100,000 keys: typed arrays
    // and two arrays of that many slots), whether any key is ever seen
    // (test/reliability/bounded-caches.test.ts).
    this.buckets = new LRUCache({ maxSize: maxKeys, sizeCalculation: () => 1 });
  }

  private bucket(key: string): TokenBucket {
    let bucket = this.buckets.get(key);
    if (!bucket) {
      bucket = new TokenBucket({ bucketSize: this.burst, tokensPerInterval: this.refill, interval: this.intervalMs });
      bucket.content = this.burst;
      this.buckets.set(key, bucket);
    }
    return bucket;
  }

  /** Takes one token for `key` if there is one. */
  take(key: string): TakeResult {
    const bucket = this.bucket(key);
    const allowed = bucket.tryRemoveTokens(1);
    return takeResult(this, bucket.content, allowed);
  }

  /** Reports `key`'s bucket without taking a token (allowed when at least one is left). */
  peek(key: string): TakeResult {
    const bucket = this.bucket(key);
    bucket.drip();
    return takeResult(this, bucket.content, bucket.content >= 1);
  }
}
