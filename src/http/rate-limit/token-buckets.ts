import { TokenBucket } from 'limiter';
import { LRUCache } from 'lru-cache';

/** The outcome of taking one token: whether allowed, and what the RateLimit fields report. */
export interface TakeResult {
  readonly allowed: boolean;
  /** Whole tokens left after this request. */
  readonly remaining: number;
  /** Seconds (rounded up, ≥ 1) until one token is back; the `Retry-After` of a 429. */
  readonly retryAfterSeconds: number;
  /** Seconds (rounded up) until the bucket is full again. */
  readonly resetSeconds: number;
}

/**
 * One token bucket per key (API key id, client address), created full on first use and
 * kept in a bounded LRU so memory stays flat however many keys are seen. Buckets live in
 * this process: with N replicas a key may use up to N times the limit (docs/operations.md).
 */
export class KeyedTokenBuckets {
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
    this.buckets = new LRUCache({ max: maxKeys });
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

  private result(bucket: TokenBucket, allowed: boolean): TakeResult {
    const perMs = this.refill / this.intervalMs;
    return {
      allowed,
      remaining: Math.floor(bucket.content),
      retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.content) / perMs / 1000)),
      resetSeconds: Math.ceil((this.burst - bucket.content) / perMs / 1000),
    };
  }

  /** Takes one token for `key` if there is one. */
  take(key: string): TakeResult {
    const bucket = this.bucket(key);
    return this.result(bucket, bucket.tryRemoveTokens(1));
  }

  /** Reports `key`'s bucket without taking a token (allowed when at least one is left). */
  peek(key: string): TakeResult {
    const bucket = this.bucket(key);
    bucket.drip();
    return this.result(bucket, bucket.content >= 1);
  }
}
