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
