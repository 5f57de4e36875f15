import type { Redis } from 'ioredis';
import { Gauge, type Registry } from 'prom-client';

/** The few logger methods used (pino's shape: fields first, then the message). */
export interface RedisLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

/** Longest pause between two reconnection attempts, in ms. */
const MAX_RECONNECT_DELAY_MS = 2000;

/**
 * The Redis connection the replicas share their rate limits through (`REDIS_URL`), and
 * whether it works. Nothing ever waits for Redis: commands fail at once while the connection
 * is down (no offline queue) and after `timeoutMs` when Redis does not answer; the callers
 * then let the request through (fail open).
 */
export interface SharedRedis {
  readonly client: Redis;
  /** Records a failed command; logs the outage once, on the transition. */
  failed(error: unknown): void;
  /** Records a successful command; logs the recovery once, on the transition. */
  succeeded(): void;
  /**
   * Starts connecting in the background (the server starts whether or not Redis answers) and
   * keeps reconnecting; the outage and the recovery are logged to `log`. Until then every
   * command fails at once (the limits fail open).
   */
  connect(log: RedisLog): void;
  /** Closes the connection (QUIT, or a disconnect when Redis does not answer); no reconnection follows. */
  close(): Promise<void>;
}

/**
 * The client of Redis at `url`, not yet connected ({@link SharedRedis.connect} starts it, so
 * building it does no I/O); once connected it keeps reconnecting with a growing pause (up to
 * 2 s). `timeoutMs` bounds every command and each connection attempt. The outage and the
 * recovery are each logged once per transition; `rate_limit_redis_connected` (1 or 0) is
 * registered in `registry`.
 * Source: docs/contract.md Part B, "Running several replicas" (fail open, promptly, logged);
 * ioredis options `lazyConnect`, `enableOfflineQueue`, `commandTimeout`, `retryStrategy`.
 */
export async function createSharedRedis(
  config: { readonly url: string; readonly timeoutMs: number },
  options: { readonly registry?: Registry } = {},
): Promise<SharedRedis> {
  // Loaded only with REDIS_URL: a single replica never needs the client.
  const { Redis } = await import('ioredis');
  const connected = new Gauge({
    name: 'rate_limit_redis_connected',
    help: '1 while the Redis of the shared rate limits (REDIS_URL) is connected, else 0.',
    registers: options.registry ? [options.registry] : [],
  });
  const client = new Redis(config.url, {
    lazyConnect: true,
    // A command while disconnected fails at once instead of waiting for the connection.
    enableOfflineQueue: false,
    commandTimeout: config.timeoutMs,
    connectTimeout: Math.max(config.timeoutMs, 1000),
    // Commands lost with a connection fail rather than being sent again later.
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    retryStrategy: (attempt) => Math.min(attempt * 100, MAX_RECONNECT_DELAY_MS),
  });
  // 'starting' until the first connection attempt ends: requests in the first milliseconds
  // fail open unlogged, as Redis has not had the time to answer, not failed to.
  let state: 'starting' | 'up' | 'down' = 'starting';
  let closing = false;
  let log: RedisLog | undefined;
  const down = (reason: string) => {
    connected.set(0);
    if (state === 'down' || closing) return;
    state = 'down';
    log?.warn({ reason }, 'Redis unreachable: rate limits fail open (each request goes on unlimited) until it answers again');
  };
  const up = () => {
    connected.set(1);
    const was = state;
    state = 'up';
    if (was === 'down') log?.info({}, 'Redis reachable again: rate limits shared across replicas');
  };
  client.on('ready', up);
  client.on('close', () => down('connection closed'));
  // Without a listener ioredis prints every connection error; the transition is logged once instead.
  client.on('error', (error: Error) => down(error.message));
  return {
    client,
    failed: (error) => {
      if (state !== 'starting') down(error instanceof Error ? error.message : String(error));
    },
    succeeded: () => {
      if (state !== 'up') up();
    },
    connect(to) {
      log = to;
      // A first attempt that fails is retried by `retryStrategy` like any lost connection.
      client.connect().catch(() => {});
    },
    async close() {
      closing = true;
      connected.set(0);
      if (client.status !== 'ready') {
        client.disconnect();
        return;
      }
      await Promise.race([client.quit(), new Promise((resolve) => setTimeout(resolve, config.timeoutMs))]).catch(() => {});
      client.disconnect();
    },
  };
}
