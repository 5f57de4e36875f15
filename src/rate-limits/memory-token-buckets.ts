import { TokenBucket } from 'limiter';
import type { LRUCache } from 'lru-cache';
import { boundedLru } from '../core/bounded-lru.ts';
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
    this.buckets = boundedLru(maxKeys);
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
