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
import { retentionPass, RETENTION_FIRST_DELAY_MS } from './retention.ts';
import { createScheduler, type ScheduledJob, type Scheduler } from './scheduler.ts';
import { PAUSE_CHECK_MS, startStreamWorker, type StreamWorker } from '../audit-streams/stream-worker.ts';
import { createStreamQueue } from '../storage/audit-streams.queries.ts';
import { openKeyRing, type OpenedKeyRing } from './secrets-key.ts';
import type { Store } from '../core/ports.ts';
import type { Logger } from '../core/logger.ts';
import { createLifecycleSweeper, LIFECYCLE_MAX_WAIT_MS } from '../lifecycle/sweeper.ts';
import { startImportWorker, type ImportWorker } from './import-worker.ts';

/** How often expired idempotency records are purged, in ms. */
const IDEMPOTENCY_PURGE_EVERY_MS = 10 * 60_000;

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
  /** The periodic work of this process: retention, idempotency records, audit stream pauses, embedded upkeep. */
  readonly scheduler: Scheduler;
  /** The retention pass (events, sessions, sign-ins, audit rows) as scheduled; absent with `WEBHOOK_WORKER=false`. */
  readonly retention: ScheduledJob | undefined;
  /** The sweeps of expiries, inactivity and warnings as scheduled (docs/contract.md Part B, "Access that ends on time"). */
  readonly lifecycle: ScheduledJob;
  /** The audit stream worker (every process runs one; replicas share the streams by claims). */
  readonly streamWorker: StreamWorker;
  /** The worker of bulk import jobs (docs/contract.md Part B, "Importing users in bulk"). */
  readonly imports: ImportWorker;
  /** The embedded store's ANALYZE and VACUUM (PGlite only, unless `EMBEDDED_MAINTENANCE=false`). */
  readonly maintenance: EmbeddedMaintenance | undefined;
  /**
   * Shuts down in order: stop accepting and finish in-flight requests (the app's close), close
   * the rate limits' Redis connection, stop the scheduler (waiting for its passes under way) and
   * the import worker, let the delivery and stream workers finish what is in flight, stop the
   * cache listener and the maintenance, close the database.
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
 * retention pass on the process's scheduler (unless `WEBHOOK_WORKER=false`); a committed change that wrote webhook deliveries
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
  // Bound below, once the worker runs: it takes the deliveries of this process's user writes.
  let worker: DeliveryWorker | undefined;
  // Bound below, once the scheduler runs: a user written here may be due sooner than it sleeps
  // (only such writes call it: a look after every write cost a quarter to a third of a write's CPU,
  // docs/performance.md, "Writes against the plain SQL").
  let userWritten = (): void => {};
  // Bound below, once the import worker runs: a job queued here starts without waiting for its poll.
  let importQueued = (): void => {};
  const store = createStore(database.db, {
    keyRing: keys.ring,
    cacheTtlMs: config.cacheTtlMs,
    onDeliveriesDue: () => deliveriesDue(),
    deliveryHandOff: { leaseMs: () => worker?.leaseMs() ?? 0, take: (deliveries) => worker?.take(deliveries) },
    onDueSooner: () => userWritten(),
    onImportQueued: () => importQueued(),
    ...(options.onChange ? { onChange: options.onChange } : {}),
  });
  const registry = new Registry();
  const limits = await rateLimitDependencies(config, registry);
  const storage = storageDependencies(config, database, store);
  const app = await buildApp(config, {
    ...storage,
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
  // One scheduler for the periodic work, logging through one logger (docs/architecture.md,
  // "What runs in the background").
  const schedulerLog = app.log.child({ component: 'scheduler' });
  const scheduler = createScheduler(schedulerLog);
  // Deliveries and retention run beside the requests in every process (docs/contract.md Part B, Events
  // and webhooks); on PostgreSQL the workers of several replicas share the work.
  const prune = retentionPass({
    events: createEventPruning(database.db),
    sessions: { pruning: createSessionPruning(database.db), idleMs: config.sessions.idleMs },
    audit: { pruning: createAuditPruning(database.db), retention: config.bounds.auditRetention },
    log: schedulerLog,
  });
  const background = config.webhooks.worker
    ? {
        deliveryWorker: startDeliveryWorker({
          queue: createDeliveryQueue(database.db),
          store,
          config: config.webhooks,
          log: app.log.child({ component: 'webhooks' }),
          registry,
        }),
        retention: scheduler.add({
          name: 'retention',
          intervalMs: config.webhooks.pruneIntervalMs,
          firstDelayMs: Math.min(RETENTION_FIRST_DELAY_MS, config.webhooks.pruneIntervalMs),
          run: async (stopping) => void (await prune(stopping)),
        }),
      }
    : undefined;
  // Idempotency records past their 24 hours (docs/contract.md Part B, "Retries, limits and audit").
  scheduler.add({
    name: 'idempotency-records',
    intervalMs: IDEMPOTENCY_PURGE_EVERY_MS,
    firstDelayMs: RETENTION_FIRST_DELAY_MS,
    run: async () => void (await storage.idempotency.purgeExpired()),
  });
  if (background) {
    worker = background.deliveryWorker;
    const running = worker;
    wakeWorker = () => running.wake();
    deliveriesDue = wakeWorker;
  } else if (connect) {
    const log = app.log.child({ component: 'webhooks' });
    deliveriesDue = announceGathered({
      announce: () => announceDeliveriesDue(database.db),
      onError: (err) => log.warn({ err }, 'could not announce webhook deliveries; a worker will find them at its next poll'),
    });
  }
  const sweeper = createLifecycleSweeper({
    store,
    log: app.log.child({ component: 'access-policies' }),
    sharedConnection: database.kind === 'pglite',
  });
  // A sweep at once, then at the next due instant the database knows (at most 5 s).
  const lifecycle = scheduler.add({
    name: 'access-lifecycle',
    intervalMs: LIFECYCLE_MAX_WAIT_MS,
    firstDelayMs: 0,
    run: async (stopping) => {
      await sweeper.sweep(stopping);
      return sweeper.nextDelayMs();
    },
  });
  // A user written here may be due sooner than the sweep sleeps: look at the next due instant
  // again, once at a time, so a burst of writes costs one query, not one each.
  let waking = false;
  const wakeLifecycle = () => {
    if (waking) return;
    waking = true;
    void sweeper
      .nextDelayMs()
      .then((delayMs) => lifecycle.runIn(delayMs))
      .finally(() => (waking = false));
  };
  userWritten = wakeLifecycle;
  // Every process sends audit streams (docs/operations.md, "Audit streams"); claims keep one sender per stream at a time.
  const streamWorker = startStreamWorker({
    queue: createStreamQueue(database.db),
    store,
    settings: { policy: config.outbound, timeoutMs: config.webhooks.timeoutMs, pauseAfterMs: config.auditStreams.pauseAfterMs },
    log: app.log.child({ component: 'audit-streams' }),
    registry,
  });
  scheduler.add({ name: 'audit-stream-pauses', intervalMs: PAUSE_CHECK_MS, run: () => streamWorker.checkPauses() });
  const imports = startImportWorker({
    store,
    log: app.log.child({ component: 'imports' }),
    sharedConnection: database.kind === 'pglite',
  });
  importQueued = () => imports.wake();
  const maintenance = maintainEmbeddedStore(database, config.embeddedMaintenance, app.log.child({ component: 'embedded-maintenance' }), registry);
  if (maintenance && config.embeddedMaintenance) {
    scheduler.add({ name: 'embedded-maintenance', intervalMs: config.embeddedMaintenance.intervalMs, run: async () => maintenance.delayAfter(await maintenance.step()) });
  }
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
    scheduler,
    retention: background?.retention,
    async close() {
      await app.close();
      await limits.close();
      await scheduler.stop();
      await imports.stop();
      await background?.deliveryWorker.stop();
      await streamWorker.stop();
      await listener?.close();
      await maintenance?.stop();
      await database.close();
    },
  };
}
