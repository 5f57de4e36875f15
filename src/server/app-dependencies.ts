import type { Config } from '../config/load-config.ts';
import type { Store } from '../core/ports.ts';
import type { AppDependencies } from '../http/app.ts';
import type { OpenDatabase } from '../storage/database.ts';
import { createRelyingParty } from '../http/oidc/relying-party.ts';
import { createIdempotencyStore } from '../storage/idempotency.queries.ts';
import { webhookUrlCheck } from '../webhooks/url-guard.ts';
import { streamDependencies } from '../audit-streams/stream-dependencies.ts';
import type { Registry } from 'prom-client';
import { memoryRateLimits, type RateLimits } from '../rate-limits/rate-limits.ts';
import { createSharedRedis, type RedisLog } from '../rate-limits/shared-redis.ts';
import { redisRateLimits } from '../rate-limits/redis-rate-limits.ts';

/** The part of {@link AppDependencies} that comes from the database and the configuration. */
export type StorageDependencies = Pick<AppDependencies, 'store' | 'idempotency' | 'ping' | 'beginTransaction' | 'checkWebhookUrl' | 'auditStreams' | 'relyingParty'>;

/**
 * What `buildApp` needs from an open database, its store and the configuration: the store, the
 * idempotency store on the same database, its ping (for `/readyz`), its request transactions
 * where the backend has them (PostgreSQL), the webhook URL policy, the audit streams' checks and test send,
 * and the OpenID Connect relying party under the outbound policy. One place, so that the
 * server and the tests build the app the same way. Source: docs/architecture.md (how a request
 * flows). Throws nothing.
 */
export function storageDependencies(config: Config, database: OpenDatabase, store: Store): StorageDependencies {
  return {
    store,
    checkWebhookUrl: webhookUrlCheck(config.webhooks),
    relyingParty: createRelyingParty(config.outbound),
    auditStreams: streamDependencies(config.outbound, config.webhooks.timeoutMs),
    idempotency: createIdempotencyStore(database.db),
    ping: database.ping,
    ...(database.beginRequestTransaction ? { beginTransaction: database.beginRequestTransaction } : {}),
  };
}

/** The rate limits of one process and the connection they may hold (Redis), built before the app. */
export interface RateLimitDependencies {
  /** What `buildApp` is given as `rateLimits`. */
  readonly rateLimits: RateLimits;
  /** Starts the connection to Redis in the background, logging to `log`; nothing without `REDIS_URL`. */
  connect(log: RedisLog): void;
  /** Closes the Redis connection, if any (after the app, which no longer asks the limits). */
  close(): Promise<void>;
}

/**
 * The rate limits of `config`: in Redis with `REDIS_URL` (shared by the replicas, failing open;
 * its connection gauge and fail-open counter registered in `registry`), else in this process's
 * memory. Nothing connects until `connect`, so the app can be built first and lend its logger.
 * Source: docs/architecture.md, "The rate limits"; docs/contract.md Part B, "Running several
 * replicas". Throws nothing.
 */
export async function rateLimitDependencies(config: Config, registry?: Registry): Promise<RateLimitDependencies> {
  if (!config.redis) return { rateLimits: memoryRateLimits(config), connect: () => {}, close: async () => {} };
  const redis = await createSharedRedis(config.redis, registry ? { registry } : {});
  return { rateLimits: redisRateLimits(config, redis, registry), connect: (log) => redis.connect(log), close: () => redis.close() };
}
