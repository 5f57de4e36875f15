import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'drizzle-orm';
import pRetry from 'p-retry';
import type pg from 'pg';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Database } from './database.ts';

/*
 * Cache invalidation across replicas (docs/contract.md Part B, "Running several replicas"): every
 * transaction that revokes a key, deletes a workspace or changes the catalogue sends
 * `NOTIFY wum_caches`, which PostgreSQL delivers to every listening session when (and only if)
 * the transaction commits. Each server process keeps one dedicated connection, outside its
 * request pool, that `LISTEN`s on the channel and empties the process's read cache on every
 * notification. A notification sent while that connection is down is lost, so every
 * (re)connection empties the cache as well; meanwhile `CACHE_TTL_MS` bounds staleness as before.
 */

/** The PostgreSQL channel of cache invalidations (an identifier: no quoting needed). */
export const CACHE_CHANNEL = 'wum_caches';

/**
 * Announces that cached keys, workspaces or products changed. Run inside the changing
 * transaction: PostgreSQL delivers the notification at commit, and never for a rollback.
 * Outside a transaction it is delivered at once. Works on PGlite too (where nobody listens).
 * Source: PostgreSQL documentation, NOTIFY ("if a NOTIFY is executed inside a transaction,
 * the notify events are not delivered until and unless the transaction is committed").
 */
export async function announceCacheChange(db: Database): Promise<void> {
  await db.execute(sql.raw(`notify ${CACHE_CHANNEL}`));
}

/** The PostgreSQL channel on which a process announces webhook deliveries it wrote but will not send itself. */
export const DELIVERIES_CHANNEL = 'wum_deliveries';

/**
 * Announces to the delivery workers of every process that webhook deliveries were committed
 * (docs/operations.md, "Webhooks and the event feed"): sent after the commit by a process without a worker of its
 * own, so that a worker elsewhere claims them at once rather than at its next poll. Outside the
 * writing transaction on purpose: a transaction that notifies takes a cluster-wide lock at
 * commit, which would serialise every write; a sender gathers its announcements instead (at
 * most one per few ms). Source: PostgreSQL documentation, NOTIFY.
 */
export async function announceDeliveriesDue(db: Database): Promise<void> {
  await db.execute(sql.raw(`notify ${DELIVERIES_CHANNEL}`));
}

/** The few logger methods the listener uses (pino's shape: fields first, then the message). */
export interface ListenerLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

/** Options of {@link startCacheListener}. */
export interface CacheListenerOptions {
  /**
   * Opens a new, dedicated connection (never one of the request pool: a pooled connection
   * goes back to others, and `LISTEN` belongs to a session). The one place that decides where
   * the listener connects (`OpenDatabase.connectListener`).
   */
  readonly connect: () => Promise<pg.Client>;
  /** Forgets every cached read; called on each notification and after each (re)connection. */
  readonly onChange: () => void;
  /**
   * Called with `true` once listening (again) and with `false` when the connection is lost:
   * while it is down, changes made elsewhere go unannounced (during a database failover, for
   * seconds), so the cache should not be trusted meanwhile.
   */
  readonly onListening?: (listening: boolean) => void;
  readonly log: ListenerLog;
  /** Where the listener's metrics are registered (`/metrics`); none when absent. */
  readonly registry?: Registry;
  /** First reconnection delay, in ms (doubled per failed attempt, randomised ×1–2). Default 100. */
  readonly minDelayMs?: number;
  /** Longest reconnection delay, in ms. Default 5000. */
  readonly maxDelayMs?: number;
  /**
   * How often the connection is probed with `select 1`, in ms, so that a connection that died
   * silently (no reset reached us) is noticed and replaced. Default 10 000; the probe's own
   * time limit is the same.
   */
  readonly heartbeatMs?: number;
  /**
   * Further channels heard on the same connection, each with what to do on its notifications
   * and after each (re)connection (notifications sent meanwhile were lost), e.g.
   * {@link DELIVERIES_CHANNEL}.
   */
  readonly channels?: Readonly<Record<string, () => void>>;
}

/** A running listener. */
export interface CacheListener {
  /** True while a listening session is open. */
  readonly connected: boolean;
  /** Successful (re)connections so far. */
  readonly connections: number;
  /** Stops listening and closes the connection; no reconnection follows. */
  close(): Promise<void>;
}

function listenerMetrics(registry: Registry | undefined) {
  const registers = registry ? [registry] : [];
  return {
    connected: new Gauge({
      name: 'cache_listener_connected',
      help: '1 while this process listens for cache invalidations (PostgreSQL LISTEN), else 0.',
      registers,
    }),
    connects: new Counter({
      name: 'cache_listener_connects_total',
      help: 'Connections of the cache-invalidation listener (the first and every reconnection).',
      registers,
    }),
    notifications: new Counter({
      name: 'cache_listener_notifications_total',
      help: 'Cache invalidations received from PostgreSQL (changes made through any process).',
      registers,
    }),
  };
}

/** Resolves when `client` fails, ends, stops answering the heartbeat, or `signal` aborts. */
function untilLost(client: pg.Client, heartbeatMs: number, signal: AbortSignal): Promise<string> {
  return new Promise((resolve) => {
    const done = (reason: string) => {
      clearInterval(timer);
      signal.removeEventListener('abort', aborted);
      resolve(reason);
    };
    const aborted = () => done('closed');
    client.once('error', (error: Error) => done(error.message));
    client.once('end', () => done('connection ended'));
    signal.addEventListener('abort', aborted, { once: true });
    const timer = setInterval(() => {
      const probe = client.query('select 1');
      const limit = sleep(heartbeatMs, undefined, { ref: false }).then(() => {
        throw new Error('heartbeat timed out');
      });
      Promise.race([probe, limit]).catch((error: Error) => done(error.message));
    }, heartbeatMs);
    timer.unref();
  });
}

/**
 * Listens for cache invalidations on a dedicated PostgreSQL connection until closed:
 * connects (retrying with exponential backoff and jitter, forever), `LISTEN`s, forgets the
 * cache (notifications may have been missed while disconnected), then forgets it again on
 * every notification. A lost connection is replaced the same way. Never throws; failures
 * are logged once per connection loss. `options.channels` are listened to on the same
 * connection. Metrics: `cache_listener_connected`,
 * `cache_listener_connects_total`, `cache_listener_notifications_total`.
 * Source: docs/contract.md Part B, "Running several replicas"; PostgreSQL LISTEN/NOTIFY.
 */
export function startCacheListener(options: CacheListenerOptions): CacheListener {
  const minDelayMs = options.minDelayMs ?? 100;
  const maxDelayMs = options.maxDelayMs ?? 5000;
  const heartbeatMs = options.heartbeatMs ?? 10_000;
  const metrics = listenerMetrics(options.registry);
  const others = options.channels ?? {};
  const listened = [CACHE_CHANNEL, ...Object.keys(others)];
  const stop = new AbortController();
  let connected = false;
  let connections = 0;

  const open = async (): Promise<pg.Client> => {
    const client = await options.connect();
    // Errors after the session ended (a late socket error) must not crash the process.
    client.on('error', () => {});
    try {
      for (const channel of listened) await client.query(`listen ${channel}`);
    } catch (error) {
      // Not awaited: ending a broken connection may never settle.
      void client.end().catch(() => {});
      throw error;
    }
    return client;
  };

  const run = async () => {
    let attempt = 0;
    while (!stop.signal.aborted) {
      let client: pg.Client;
      try {
        client = await pRetry(open, {
          retries: Number.POSITIVE_INFINITY,
          minTimeout: minDelayMs,
          maxTimeout: maxDelayMs,
          randomize: true,
          signal: stop.signal,
          unref: true,
          onFailedAttempt: ({ error, attemptNumber }) => {
            if (attemptNumber === 1) options.log.warn({ err: error }, 'cache listener: cannot connect to PostgreSQL; retrying');
          },
        });
      } catch (error) {
        if (stop.signal.aborted) return;
        // Not retried by p-retry (a TypeError): wait the longest delay and start over.
        options.log.warn({ err: error }, 'cache listener: connection failed; retrying');
        await sleep(maxDelayMs, undefined, { ref: false });
        continue;
      }
      if (stop.signal.aborted) {
        void client.end().catch(() => {});
        return;
      }
      client.on('notification', (message) => {
        if (message.channel !== CACHE_CHANNEL) {
          others[message.channel]?.();
          return;
        }
        metrics.notifications.inc();
        options.onChange();
      });
      connected = true;
      connections += 1;
      attempt += 1;
      metrics.connected.set(1);
      metrics.connects.inc();
      // LISTEN is active: whatever changed before now is forgotten, whatever changes after is notified.
      options.onChange();
      for (const heard of Object.values(others)) heard();
      options.onListening?.(true);
      if (attempt > 1) options.log.info({}, 'cache listener: reconnected; cached reads forgotten');
      const reason = await untilLost(client, heartbeatMs, stop.signal);
      connected = false;
      metrics.connected.set(0);
      options.onListening?.(false);
      client.removeAllListeners('notification');
      void client.end().catch(() => {});
      if (!stop.signal.aborted) options.log.warn({ reason }, 'cache listener: connection lost; reconnecting');
    }
  };
  const running = run();

  return {
    get connected() {
      return connected;
    },
    get connections() {
      return connections;
    },
    async close() {
      stop.abort();
      // A connection attempt under way is bounded by its own timeout; shutdown does not wait for it.
      await Promise.race([running, sleep(1000, undefined, { ref: false })]);
      metrics.connected.set(0);
    },
  };
}
