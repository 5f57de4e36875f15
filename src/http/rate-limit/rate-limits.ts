import { Counter, type Registry } from 'prom-client';
import type { Config } from '../../config/load-config.ts';
import { RedisTokenBuckets } from './redis-token-buckets.ts';
import type { SharedRedis } from './shared-redis.ts';
import { KeyedTokenBuckets, type TokenBuckets } from './token-buckets.ts';

/** The limits of the external API and of the sign-in starts; a limit set to 0 is absent. */
export interface RateLimits {
  /** Token bucket per API key id (`RATE_LIMIT_PER_KEY` a second, `RATE_LIMIT_BURST` tokens). */
  readonly perKey: TokenBuckets | undefined;
  /** Failed key and token attempts, per client address and per credential (`AUTH_FAILURE_LIMIT` a minute each; failed-attempts.ts). */
  readonly authFailures: TokenBuckets | undefined;
  /** Sign-in starts per client address (`SIGN_IN_START_LIMIT` a minute). */
  readonly signInStartsPerAddress: TokenBuckets | undefined;
  /** Sign-in starts per workspace, the operators' counting as one (`SIGN_IN_START_LIMIT_PER_WORKSPACE` a minute). */
  readonly signInStartsPerWorkspace: TokenBuckets | undefined;
}

/**
 * Builds the limits of `config`: in Redis when `redis` is given (shared by every replica, and
 * failing open while Redis is unreachable, counted by `rate_limit_fail_open_total{limit}` in
 * `registry`), else in this process's memory.
 * Source: docs/contract.md Part B, "Retries, limits and audit" and "Running several replicas".
 */
export function createRateLimits(config: Config, options: { readonly redis?: SharedRedis; readonly registry?: Registry } = {}): RateLimits {
  const { redis } = options;
  let buckets: (policy: string, burst: number, refill: number, intervalMs: number) => TokenBuckets;
  if (redis) {
    const failOpen = new Counter({
      name: 'rate_limit_fail_open_total',
      help: 'Requests let through unlimited because Redis (REDIS_URL) could not answer, by limit.',
      labelNames: ['limit'] as const,
      registers: options.registry ? [options.registry] : [],
    });
    const countFailOpen = (limit: string) => failOpen.inc({ limit });
    buckets = (policy, burst, refill, intervalMs) => new RedisTokenBuckets(redis, policy, burst, refill, intervalMs, countFailOpen);
  } else {
    buckets = (_policy, burst, refill, intervalMs) => new KeyedTokenBuckets(burst, refill, intervalMs);
  }
  const { perSecond, burst } = config.rateLimit;
  const perMinute = (policy: string, limit: number) => (limit > 0 ? buckets(policy, limit, limit, 60_000) : undefined);
  return {
    signInStartsPerAddress: perMinute('sign-in-starts', config.bounds.signInStartsPerAddress),
    signInStartsPerWorkspace: perMinute('sign-in-starts-workspace', config.bounds.signInStartsPerWorkspace),
    perKey: perSecond > 0 && burst > 0 ? buckets('per-key', burst, perSecond, 1000) : undefined,
    authFailures:
      config.authFailureLimit > 0 ? buckets('auth-failures', config.authFailureLimit, config.authFailureLimit, 60_000) : undefined,
  };
}
