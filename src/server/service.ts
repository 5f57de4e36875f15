import type { FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import type { Config } from '../config/load-config.ts';
import { openDatabase, type OpenDatabase } from '../storage/database.ts';
import { maintainEmbeddedStore, type EmbeddedMaintenance } from '../storage/embedded-maintenance.ts';
import { createDeliveryQueue } from '../storage/deliveries.queries.ts';
import { createEventPruning } from '../storage/events.queries.ts';
import { createSessionPruning } from '../storage/sessions-pruning.queries.ts';
import { createAuditPruning } from '../storage/audit-pruning.queries.ts';
import { announceDeliveriesDue, DELIVERIES_CHANNEL, startCacheListener, type CacheListener, type CacheListenerOptions } from '../storage/notify.ts';
import { announceGathered } from './deliveries-due.ts';
import { rateLimitDependencies, storageDependencies } from './app-dependencies.ts';
import { createStore, type CachingStore } from '../storage/store.ts';
import { buildApp } from '../http/app.ts';
import { startDeliveryWorker, type DeliveryWorker } from '../webhooks/delivery-worker.ts';
import { startEventPruner, type EventPruner } from '../webhooks/event-pruner.ts';
import { startStreamWorker, type StreamWorker } from '../audit-streams/stream-worker.ts';
import { createStreamQueue } from '../storage/audit-streams.queries.ts';
import { openKeyRing, type OpenedKeyRing } from './secrets-key.ts';
import type { Store } from '../core/ports.ts';
import type { Logger } from '../core/logger.ts';
import { startLifecycleScheduler, type LifecycleScheduler } from '../lifecycle/scheduler.ts';
import { startImportWorker, type ImportWorker } from './import-worker.ts';

/**
 * Encrypts in place the secrets stored in clear before encryption at rest existed, before any
 * worker reads them (docs/operations.md, "The secrets key"): idempotent, and safe with several
 * replicas starting together (each row is written only while it still holds its plaintext).
 */
async function encryptPlaintextSecrets(store: Store, keys: OpenedKeyRing, log: Logger): Promise<void> {
  if (keys.source.kind === 'file' && keys.source.created) {
    log.info({ path: keys.source.path }, 'generated the key that encrypts stored secrets; back it up apart from the data (docs/operations.md)');
  }
  const report = await store.reencryptSecrets('plaintext');
  if (report.reencrypted > 0) log.info({ count: report.reencrypted, keyId: report.keyId }, 'encrypted the secrets stored in clear');
}

/** One server process's parts, built but not listening. */
export interface Service {
  readonly app: FastifyInstance;
  readonly store: CachingStore;
  readonly database: OpenDatabase;
  /** The cache listener (PostgreSQL only: PGlite serves one process). */
  readonly listener: CacheListener | undefined;
  /** The webhook delivery worker (absent with `WEBHOOK_WORKER=false`). */
  readonly deliveryWorker: DeliveryWorker | undefined;
  /** The pruner of events past their retention (absent with `WEBHOOK_WORKER=false`). */
  readonly eventPruner: EventPruner | undefined;
  /** The scheduler of expiries, inactivity and warnings (docs/contract.md Part B, "Access that ends on time"). */
  readonly lifecycle: LifecycleScheduler;
  /** The audit stream worker (every process runs one; replicas share the streams by claims). */
  readonly streamWorker: StreamWorker;
  /** The worker of bulk import jobs (docs/contract.md Part B, "Importing users in bulk"). */
  readonly imports: ImportWorker;
  /** The embedded store's ANALYZE and VACUUM (PGlite only, unless `EMBEDDED_MAINTENANCE=false`). */
  readonly maintenance: EmbeddedMaintenance | undefined;
  /**
   * Shuts down in order: stop accepting and finish in-flight requests (the app's close), close
   * the rate limits' Redis connection, let the delivery worker finish its attempts in flight,
   * stop the pruner and the cache listener, close the database.
   */
  close(): Promise<void>;
}

/** Options of {@link startService}. */
export interface ServiceOptions {
  /** Called after this process committed a change other processes may have cached (WORKERS relay). */
  readonly onChange?: () => void;
  /** Fastify logger option; default JSON logs at the configured level. */
  readonly logger?: boolean | object;
  /** Where the default logger writes; stdout when absent (see terminal-log.ts). */
  readonly logStream?: NodeJS.WritableStream;
  /** Overrides of the cache listener's connection and delays (tests). */
  readonly listener?: Partial<Pick<CacheListenerOptions, 'connect' | 'minDelayMs' | 'maxDelayMs' | 'heartbeatMs'>>;
}

/**
 * Opens and migrates storage, opens the secrets key ring (`secrets-key.ts`) and encrypts the
 * secrets still stored in clear, builds the app over it with one `/metrics` registry, and on
 * PostgreSQL starts the cache listener that empties this process's read cache whenever any
 * process changes keys, workspaces or the catalogue; starts the webhook delivery worker and the
 * event pruner (unless `WEBHOOK_WORKER=false`); a committed change that wrote webhook deliveries
 * wakes this process's worker, or, without one (PostgreSQL), is announced to the others' workers
 * with `NOTIFY`, which their listeners hear. What `server.ts` runs, and what tests of
 * several replicas in one process build. Source: docs/architecture.md ("What runs in the background …
 * is owned by server.ts, shut down in order"); docs/contract.md Part B, "Running several replicas".
 */
export async function startService(config: Config, options: ServiceOptions = {}): Promise<Service> {
  const database = await openDatabase(config.storage);
  const keys = await openKeyRing(config).catch(async (error: unknown) => {
    await database.close();
    throw error;
  });
  // Who is told of committed deliveries: this process's worker, or (without one) the others'.
  let deliveriesDue = (): void => {};
  // Bound below, once the scheduler runs: a user written here may be due sooner than it sleeps.
  let userWritten = (): void => {};
  const store = createStore(database.db, {
    keyRing: keys.ring,
    cacheTtlMs: config.cacheTtlMs,
    onDeliveriesDue: () => {
      deliveriesDue();
      userWritten();
    },
    ...(options.onChange ? { onChange: options.onChange } : {}),
  });
  const registry = new Registry();
  const limits = await rateLimitDependencies(config, registry);
  const app = await buildApp(config, {
    ...storageDependencies(config, database, store),
    rateLimits: limits.rateLimits,
    registry,
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    ...(options.logStream ? { logStream: options.logStream } : {}),
  });
  // With REDIS_URL the rate limits are shared by the replicas (connected in the background).
  limits.connect(app.log.child({ component: 'redis' }));
  await encryptPlaintextSecrets(store, keys, app.log);
  const connect = options.listener?.connect ?? database.connectListener;
  // Bound below, once the worker runs: another process's announcement wakes it.
  let wakeWorker = (): void => {};
  // Until the listener hears every change made elsewhere, nothing is served from the cache.
  if (connect) store.trustCache(false);
  const listener = connect
    ? startCacheListener({
        ...options.listener,
        connect,
        onChange: () => store.forgetCached(),
        onListening: (listening) => store.trustCache(listening),
        log: app.log.child({ component: 'cache-listener' }),
        registry,
        ...(config.webhooks.worker ? { channels: { [DELIVERIES_CHANNEL]: () => wakeWorker() } } : {}),
      })
    : undefined;
  // Deliveries and pruning run beside the requests in every process (docs/contract.md Part B, Events
  // and webhooks); on PostgreSQL the workers of several replicas share the work.
  const background = config.webhooks.worker
    ? {
        deliveryWorker: startDeliveryWorker({
          queue: createDeliveryQueue(database.db),
          store,
          config: config.webhooks,
          log: app.log.child({ component: 'webhooks' }),
          registry,
        }),
        eventPruner: startEventPruner({
          events: createEventPruning(database.db),
          sessions: { pruning: createSessionPruning(database.db), idleMs: config.sessions.idleMs },
          audit: { pruning: createAuditPruning(database.db), retention: config.bounds.auditRetention },
          intervalMs: config.webhooks.pruneIntervalMs,
          log: app.log.child({ component: 'event-pruner' }),
        }),
      }
    : undefined;
  if (background) {
    const worker = background.deliveryWorker;
    wakeWorker = () => worker.wake();
    deliveriesDue = wakeWorker;
  } else if (connect) {
    const log = app.log.child({ component: 'webhooks' });
    deliveriesDue = announceGathered({
      announce: () => announceDeliveriesDue(database.db),
      onError: (err) => log.warn({ err }, 'could not announce webhook deliveries; a worker will find them at its next poll'),
    });
  }
  const lifecycle = startLifecycleScheduler({
    store,
    log: app.log.child({ component: 'access-policies' }),
    sharedConnection: database.kind === 'pglite',
  });
  userWritten = () => lifecycle.wake();
  // Every process sends audit streams (docs/operations.md, "Audit streams"); claims keep one sender per stream at a time.
  const streamWorker = startStreamWorker({
    queue: createStreamQueue(database.db),
    store,
    settings: { policy: config.outbound, timeoutMs: config.webhooks.timeoutMs, pauseAfterMs: config.auditStreams.pauseAfterMs },
    log: app.log.child({ component: 'audit-streams' }),
    registry,
  });
  const imports = startImportWorker({
    store,
    log: app.log.child({ component: 'imports' }),
    sharedConnection: database.kind === 'pglite',
  });
  const maintenance = maintainEmbeddedStore(database, config.embeddedMaintenance, app.log.child({ component: 'embedded-maintenance' }), registry);
  return {
    app,
    store,
    database,
    maintenance,
    lifecycle,
    streamWorker,
    imports,
    listener,
    deliveryWorker: background?.deliveryWorker,
    eventPruner: background?.eventPruner,
    async close() {
      await app.close();
      await limits.close();
      await lifecycle.stop();
      await imports.stop();
      await background?.deliveryWorker.stop();
      await streamWorker.stop();
      await background?.eventPruner.stop();
      await listener?.close();
      await maintenance?.stop();
      await database.close();
    },
  };
}
