import type { Redis } from 'ioredis';
import type { SharedRedis } from './shared-redis.ts';
import { takeResult, type TakeResult, type TokenBuckets } from './token-buckets.ts';

/*
 * Why a script and not a ready-made Redis limiter: docs/contract.md Part B specifies a token bucket
 * (100/s, burst 200) and the per-process limiter is one (`limiter`'s TokenBucket); the Redis
 * limiters of rate-limiter-flexible count fixed windows in whole seconds, which would let a
 * key through twice the burst across a window boundary, make a client wait a whole window
 * after a burst, and could not express the fractional rates the configuration allows
 * (`RATE_LIMIT_PER_KEY=0.5`). The script below is the same continuous refill as `limiter`'s,
 * run atomically in Redis (one round trip, no race between replicas), on Redis' own clock so
 * replicas with skewed clocks agree.
 */
const TOKEN_BUCKET_SCRIPT = `
local burst = tonumber(ARGV[1])
local per_ms = tonumber(ARGV[2])
local take = tonumber(ARGV[3])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + tonumber(clock[2]) / 1000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1])
local at = tonumber(state[2])
if tokens == nil or at == nil then
  tokens = burst
  at = now
end
tokens = math.min(burst, tokens + math.max(0, now - at) * per_ms)
local allowed = 0
if tokens >= 1 then
  allowed = 1
  tokens = tokens - take
end
if take > 0 then
  redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
  redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / per_ms) + 1000)
end
return { allowed, tostring(tokens) }
`;

/** The script's name on the ioredis client (`defineCommand`). */
const COMMAND = 'wumTokenBucket';

type WithTokenBucket = Redis & {
  [COMMAND](key: string, burst: number, perMs: number, take: 0 | 1): Promise<[number, string]>;
};

function withScript(client: Redis): WithTokenBucket {
  if (!(COMMAND in client)) client.defineCommand(COMMAND, { numberOfKeys: 1, lua: TOKEN_BUCKET_SCRIPT });
  return client as WithTokenBucket;
}

/**
 * {@link TokenBuckets} in Redis, shared by every replica on the same `REDIS_URL`: one hash per
 * key (`wum:rl:<policy>:<key>`, expiring once the bucket would be full again). While Redis is
 * unreachable, or does not answer within its command timeout, `take` and `peek` resolve to
 * `undefined` at once (the limit fails open), and `onFailOpen` counts it.
 * Source: docs/contract.md Part B, "Retries, limits and audit" (token bucket) and "Running several
 * replicas" (shared, fail open).
 */
export class RedisTokenBuckets implements TokenBuckets {
  private readonly client: WithTokenBucket;
  private readonly perMs: number;

  /**
   * @param redis - the shared connection (its health is updated by every call).
   * @param policy - the limit's name, in the Redis keys and for `onFailOpen`.
   * @param burst - bucket size (tokens).
   * @param refill - tokens added per `intervalMs`.
   * @param intervalMs - refill interval in milliseconds.
   * @param onFailOpen - called once per request let through because Redis could not answer.
   */
  constructor(
    private readonly redis: SharedRedis,
    private readonly policy: string,
    readonly burst: number,
    readonly refill: number,
    readonly intervalMs: number,
    private readonly onFailOpen: (policy: string) => void,
  ) {
    this.client = withScript(redis.client);
    this.perMs = refill / intervalMs;
  }

  private async run(key: string, take: 0 | 1): Promise<TakeResult | undefined> {
    try {
      const [allowed, tokens] = await this.client[COMMAND](`wum:rl:${this.policy}:${key}`, this.burst, this.perMs, take);
      this.redis.succeeded();
      return takeResult(this, Number(tokens), allowed === 1);
    } catch (error) {
      this.redis.failed(error);
      this.onFailOpen(this.policy);
      return undefined;
    }
  }

  /** Takes one token for `key` if there is one; `undefined` when Redis cannot answer. */
  take(key: string): Promise<TakeResult | undefined> {
    return this.run(key, 1);
  }

  /** Reports `key`'s bucket without taking a token; `undefined` when Redis cannot answer. */
  peek(key: string): Promise<TakeResult | undefined> {
    return this.run(key, 0);
  }
}
