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
 * One token bucket per key (API key id, client address): `burst` tokens, refilled by `refill`
 * tokens per `intervalMs`. A result of `undefined` means the bucket could not be read (the
 * shared store is unreachable) and the request goes on: the limit fails open.
 */
export interface TokenBuckets {
  /** Bucket size, in tokens. */
  readonly burst: number;
  /** Tokens added per `intervalMs`. */
  readonly refill: number;
  /** Refill interval, in ms. */
  readonly intervalMs: number;
  /** Takes one token for `key` if there is one. */
  take(key: string): TakeResult | undefined | Promise<TakeResult | undefined>;
  /** Reports `key`'s bucket without taking a token (allowed when at least one is left). */
  peek(key: string): TakeResult | undefined | Promise<TakeResult | undefined>;
}

/**
 * The {@link TakeResult} of a bucket of `buckets`' shape holding `tokens` (fractional) after
 * the request. Shared by the in-process and the Redis buckets, so both report alike.
 */
export function takeResult(buckets: Pick<TokenBuckets, 'burst' | 'refill' | 'intervalMs'>, tokens: number, allowed: boolean): TakeResult {
  const perMs = buckets.refill / buckets.intervalMs;
  return {
    allowed,
    remaining: Math.floor(tokens),
    retryAfterSeconds: Math.max(1, Math.ceil((1 - tokens) / perMs / 1000)),
    resetSeconds: Math.ceil((buckets.burst - tokens) / perMs / 1000),
  };
}

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
