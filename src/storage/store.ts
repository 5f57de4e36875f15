import type { Repositories, Store } from '../core/ports.ts';
import { createApiKeyRepository } from './api-keys.queries.ts';
import { createAuditRepository } from './audit.queries.ts';
import { createEventRepository } from './events.queries.ts';
import { createGroupRepository } from './groups.queries.ts';
import type { Database } from './database.ts';
import { announceCacheChange } from './notify.ts';
import { mapDatabaseError } from './pg-errors.ts';
import { createIdentityProviderRepository } from './identity-providers.queries.ts';
import { createProductRepository } from './products.queries.ts';
import { DEFAULT_CACHE_TTL_MS, ReadCache } from './read-cache.ts';
import { createSessionRepository } from './sessions.queries.ts';
import { createOperatorSessionRepository } from './operator-sessions.queries.ts';
import { createUserRepository } from './users.queries.ts';
import { createWebhookRepository } from './webhooks.queries.ts';
import { createWorkspaceRepository } from './workspaces.queries.ts';

function repositories(db: Database): Repositories {
  return {
    users: createUserRepository(db),
    groups: createGroupRepository(db),
    products: createProductRepository(db),
    workspaces: createWorkspaceRepository(db),
    apiKeys: createApiKeyRepository(db),
    sessions: createSessionRepository(db),
    operatorSessions: createOperatorSessionRepository(db),
    identityProviders: createIdentityProviderRepository(db),
    audit: createAuditRepository(db),
    events: createEventRepository(db),
    webhooks: createWebhookRepository(db),
  };
}

/** Options of {@link createStore}. */
export interface StoreOptions {
  /**
   * How long verified API keys and the product catalogue are served from memory, in ms
   * (default {@link DEFAULT_CACHE_TTL_MS}); 0 reads them from the database every time.
   */
  readonly cacheTtlMs?: number;
  /** Called after this store committed a change other processes may have cached. */
  readonly onChange?: () => void;
}

/** A {@link Store} that serves key look-ups and the catalogue from a {@link ReadCache}. */
export interface CachingStore extends Store {
  /** Forgets every cached read (another process announced a change of keys, workspaces or products). */
  forgetCached(): void;
  /** Serves cached reads only while `trusted` (see `ReadCache.trust`). */
  trustCache(trusted: boolean): void;
}

/** The repositories, with `changed` awaited after each method that alters what the cache holds. */
function watchChanges(repos: Repositories, changed: () => void | Promise<void>): Repositories {
  const then =
    <A extends unknown[], R>(method: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const result = await method(...args);
      await changed();
      return result;
    };
  return {
    ...repos,
    apiKeys: { ...repos.apiKeys, revoke: then(repos.apiKeys.revoke) },
    workspaces: { ...repos.workspaces, delete: then(repos.workspaces.delete) },
    products: { ...repos.products, upsert: then(repos.products.upsert), delete: then(repos.products.delete) },
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
 * `options.onChange`). Source: docs/contract.md Part B, "Running several replicas".
 */
export function createStore(db: Database, options: StoreOptions = {}): CachingStore {
  const cache = new ReadCache(options.cacheTtlMs ?? DEFAULT_CACHE_TTL_MS, options.onChange);
  const base = watchChanges(repositories(db), async () => {
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
    mapError: mapDatabaseError,
    forgetCached: () => cache.clear(),
    trustCache: (trusted) => cache.trust(trusted),
    async transaction(work) {
      let changed = false;
      let result;
      try {
        result = await db.transaction(async (tx) => {
          const value = await work(watchChanges(repositories(tx), () => void (changed = true)));
          // Delivered to every listener when this transaction commits, and never if it rolls back.
          if (changed) await announceCacheChange(tx);
          return value;
        });
      } catch (error) {
        throw mapDatabaseError(error);
      }
      if (changed) cache.invalidate();
      return result;
    },
  };
}
