import { Counter, type Registry } from 'prom-client';
import type { Config } from '../config/load-config.ts';
import { rateLimitsOf, type RateLimits } from './rate-limits.ts';
import { RedisTokenBuckets } from './redis-token-buckets.ts';
import type { SharedRedis } from './shared-redis.ts';

/**
 * The limits of `config` in Redis (`REDIS_URL`), shared by every replica and failing open while
 * Redis is unreachable, which `rate_limit_fail_open_total{limit}` in `registry` counts.
 * Source: docs/contract.md Part B, "Retries, limits and audit" and "Running several replicas".
 */
export function redisRateLimits(config: Config, redis: SharedRedis, registry?: Registry): RateLimits {
  const failOpen = new Counter({
    name: 'rate_limit_fail_open_total',
    help: 'Requests let through unlimited because Redis (REDIS_URL) could not answer, by limit.',
    labelNames: ['limit'] as const,
    registers: registry ? [registry] : [],
  });
  const countFailOpen = (limit: string) => failOpen.inc({ limit });
  return rateLimitsOf(config, (policy, burst, refill, intervalMs) => new RedisTokenBuckets(redis, policy, burst, refill, intervalMs, countFailOpen));
}
