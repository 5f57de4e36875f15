import { mayBeDueSooner } from '../core/lifecycle/due-sooner.ts';
import type { Repositories, Store } from '../core/ports.ts';
import { decryptSecret, type KeyRing } from '../core/secrets/secret-box.ts';
import type { ClaimedDelivery, DeliveriesDue, DeliveryHandOff } from '../core/webhooks/delivery-queue.ts';
import { createApiKeyRepository } from './api-keys.queries.ts';
import { createAuditRepository } from './audit.queries.ts';
import { createAuditStreamRepository } from './audit-streams.queries.ts';
import { createEventRepository } from './events.queries.ts';
import { createGroupRepository } from './groups.queries.ts';
import type { Database } from './database.ts';
import { announceCacheChange } from './notify.ts';
import { mapDatabaseError } from './pg-errors.ts';
import { afterCommit } from './request-transaction.ts';
import { createIdentityProviderRepository } from './identity-providers.queries.ts';
import { createLifecycleRepository } from './lifecycle.queries.ts';
import { createPolicyRepository } from './policies.queries.ts';
import { createProductRepository } from './products.queries.ts';
import { DEFAULT_CACHE_TTL_MS, ReadCache } from './read-cache.ts';
import { createSessionRepository } from './sessions.queries.ts';
import { createOperatorSessionRepository } from './operator-sessions.queries.ts';
import { createUserRepository } from './users.queries.ts';
import type { UserDeliverySink } from './user-sql.ts';
import { createUserImportRepository } from './user-imports.queries.ts';
import { createWebhookRepository } from './webhooks.queries.ts';
import { reencryptSecrets } from './stored-secrets.queries.ts';
import { createWorkspaceRepository } from './workspaces.queries.ts';

/** The repositories over `db`; `pool`: `db` is the pool, not a transaction (its users' writes may be combined). */
function repositories(db: Database, keyRing: KeyRing, deliveries: UserDeliverySink, pool = false): Repositories {
  return {
    users: createUserRepository(db, deliveries, { combineStatements: pool }),
    groups: createGroupRepository(db),
    products: createProductRepository(db),
    workspaces: createWorkspaceRepository(db),
    apiKeys: createApiKeyRepository(db),
    sessions: createSessionRepository(db),
    operatorSessions: createOperatorSessionRepository(db),
    identityProviders: createIdentityProviderRepository(db, keyRing),
    audit: createAuditRepository(db),
    events: createEventRepository(db),
    webhooks: createWebhookRepository(db, keyRing),
    policies: createPolicyRepository(db),
    lifecycle: createLifecycleRepository(db),
    auditStreams: createAuditStreamRepository(db, keyRing),
    imports: createUserImportRepository(db),
  };
}

/** Options of {@link createStore}. */
export interface StoreOptions {
  /** The keys that encrypt the secrets it stores and decrypt them for their use (docs/security.md, "Secrets at rest"). */
  readonly keyRing: KeyRing;
  /**
   * How long verified API keys and the product catalogue are served from memory, in ms
   * (default {@link DEFAULT_CACHE_TTL_MS}); 0 reads them from the database every time.
   */
  readonly cacheTtlMs?: number;
  /**
   * The clock (ms, any origin) the cached entries age by; `performance.now` when absent. A test
   * moves it forward to see an entry expire instead of waiting.
   */
  readonly cacheClock?: () => number;
  /** Called after this store committed a change other processes may have cached. */
  readonly onChange?: () => void;
  /**
   * Called after this store committed a change that may have written webhook deliveries (a
   * user's insert or write, each with its outbox event; an event the domain appended, such as
   * a stream's pause; a redelivery): wakes the delivery worker.
   */
  readonly onDeliveriesDue?: DeliveriesDue;
  /**
   * This process's delivery worker, which takes the deliveries of the user writes it commits
   * (written leased to it) instead of claiming them; without it they are written due and
   * `onDeliveriesDue` is called.
   */
  readonly deliveryHandOff?: DeliveryHandOff;
  /**
   * Called after this store committed a write of a user that may be due sooner than the sweep
   * of access that ends on time sleeps ({@link mayBeDueSooner}): wakes the sweep. Not called
   * for the rest, so a burst of ordinary writes costs the sweep no look at its next due instant.
   */
  readonly onDueSooner?: () => void;
  /** Called after this store queued an import job (its upload complete): wakes the import worker. */
  readonly onImportQueued?: () => void;
}

/** A {@link Store} that serves key look-ups and the catalogue from a {@link ReadCache}. */
export interface CachingStore extends Store {
  /** Forgets every cached read (another process announced a change of keys, workspaces or products). */
  forgetCached(): void;
  /** Serves cached reads only while `trusted` (see `ReadCache.trust`). */
  trustCache(trusted: boolean): void;
}

/** Wraps methods so that `after` is awaited once each has returned. */
function followedBy(after: () => void | Promise<void>) {
  return <A extends unknown[], R>(method: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const result = await method(...args);
      await after();
      return result;
    };
}

/** The repositories, with `changed` awaited after each method that alters what the cache holds. */
function watchChanges(repos: Repositories, changed: () => void | Promise<void>): Repositories {
  const then = followedBy(changed);
  return {
    ...repos,
    apiKeys: { ...repos.apiKeys, revoke: then(repos.apiKeys.revoke) },
    workspaces: { ...repos.workspaces, delete: then(repos.workspaces.delete) },
    products: { ...repos.products, upsert: then(repos.products.upsert), delete: then(repos.products.delete) },
  };
}

/** The repositories, with `due` called after each method that may write webhook deliveries. */
function watchDeliveries(repos: Repositories, due: () => void): Repositories {
  const then = followedBy(due);
  return {
    ...repos,
    // A write of one user tells of its deliveries itself (UserDeliverySink): it may have handed them over.
    users: {
      ...repos.users,
      insertMany: then(repos.users.insertMany),
      recordNotice: then(repos.users.recordNotice),
    },
    webhooks: { ...repos.webhooks, redeliver: then(repos.webhooks.redeliver) },
    events: { ...repos.events, append: then(repos.events.append) },
  };
}

/**
 * The repositories, with `due` called after each write of one user that {@link mayBeDueSooner}
 * (an import's batch of new users: when any of them may be).
 */
function watchDueSooner(repos: Repositories, due: () => void): Repositories {
  const { users } = repos;
  const tell = <R>(result: R, sooner: boolean): R => {
    if (result && sooner) due();
    return result;
  };
  return {
    ...repos,
    users: {
      ...users,
      insertIfAbsent: async (workspaceId, id, user, record) =>
        tell(await users.insertIfAbsent(workspaceId, id, user, record), mayBeDueSooner(user, record.eventType)),
      insertMany: async (workspaceId, batch) =>
        tell(await users.insertMany(workspaceId, batch), batch.some((b) => mayBeDueSooner(b.user, b.record.eventType))),
      write: async (workspaceId, current, user, record) =>
        tell(await users.write(workspaceId, current, user, record), mayBeDueSooner(user, record.eventType)),
      writeIfUnchanged: async (workspaceId, current, user, record) =>
        tell(await users.writeIfUnchanged(workspaceId, current, user, record), mayBeDueSooner(user, record.eventType)),
    },
  };
}

/**
 * Builds the domain's {@link Store} over a Drizzle database: repositories bound to the pool,
 * and `transaction`, which binds fresh repositories to one transaction and maps constraint
 * violations to AppErrors (e.g. `users__workspace_email` → `user_already_exists`).
 * Outside transactions, key look-ups and the catalogue are read through a {@link ReadCache};
 * a transaction that revoked a key, deleted a workspace or changed the catalogue sends
 * `NOTIFY` in itself (so every replica's listener forgets its cache when it commits, see
 * `notify.ts`) and empties this process's cache once it has committed (and calls
 * `options.onChange`). A transaction that wrote a user (and so an outbox event and its webhook
 * deliveries) or redelivered one calls `options.onDeliveriesDue` once it has committed, and never
 * for a rollback; one that wrote a user who may be due sooner calls `options.onDueSooner` likewise. Source: docs/contract.md Part B, "Running several replicas".
 */
export function createStore(db: Database, options: StoreOptions): CachingStore {
  const { keyRing } = options;
  const cache = new ReadCache(options.cacheTtlMs ?? DEFAULT_CACHE_TTL_MS, options.onChange, options.cacheClock);
  const onDue = options.onDeliveriesDue;
  // Inside a request transaction, a returned method or domain transaction has not committed yet.
  const deliveriesDue = onDue ? () => afterCommit(onDue) : () => {};
  const onSooner = options.onDueSooner;
  const dueSooner = onSooner ? () => afterCommit(onSooner) : () => {};
  const handOff = options.deliveryHandOff;
  const leaseMs = handOff ? () => handOff.leaseMs() : () => 0;
  /** Hands deliveries written leased to the worker once what wrote them has committed. */
  const take = (deliveries: readonly ClaimedDelivery[]) => afterCommit(() => handOff?.take(deliveries));
  // Outside a transaction each change has committed already when its method returns.
  const sink: UserDeliverySink = { leaseMs, leased: take, due: deliveriesDue };
  const base = watchChanges(watchDueSooner(watchDeliveries(repositories(db, keyRing, sink, true), deliveriesDue), dueSooner), async () => {
    cache.invalidate();
    // Outside a transaction the change has committed already: tell the others right after.
    await announceCacheChange(db);
  });
  return {
    ...base,
    apiKeys: {
      ...base.apiKeys,
      resolve: (subdomain, keyHash) => cache.resolve(subdomain, keyHash, () => base.apiKeys.resolve(subdomain, keyHash)),
    },
    products: { ...base.products, findAll: () => cache.products(() => base.products.findAll()) },
    imports: {
      ...base.imports,
      async uploaded(...args) {
        const job = await base.imports.uploaded(...args);
        options.onImportQueued?.();
        return job;
      },
    },
    mapError: mapDatabaseError,
    openSecret: (stored) => decryptSecret(keyRing, stored),
    reencryptSecrets: (scope) => reencryptSecrets(db, keyRing, scope),
    forgetCached: () => cache.clear(),
    trustCache: (trusted) => cache.trust(trusted),
    async transaction(work) {
      let changed = false;
      let delivering = false;
      let sooner = false;
      const leased: ClaimedDelivery[] = [];
      const sink: UserDeliverySink = { leaseMs, leased: (deliveries) => void leased.push(...deliveries), due: () => void (delivering = true) };
      let result;
      try {
        result = await db.transaction(async (tx) => {
          const repos = watchDueSooner(
            watchDeliveries(repositories(tx, keyRing, sink), () => void (delivering = true)),
            () => void (sooner = true),
          );
          const value = await work(watchChanges(repos, () => void (changed = true)));
          // Delivered to every listener when this transaction commits, and never if it rolls back.
          if (changed) await announceCacheChange(tx);
          return value;
        });
      } catch (error) {
        throw mapDatabaseError(error);
      }
      if (changed) cache.invalidate();
      if (delivering) deliveriesDue();
      if (leased.length > 0) take(leased);
      if (sooner) dueSooner();
      return result;
    },
  };
}
