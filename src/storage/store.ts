import type { Repositories, Store } from '../core/ports.ts';
import { createApiKeyRepository } from './api-keys.queries.ts';
import { createAuditRepository } from './audit.queries.ts';
import type { Database } from './database.ts';
import { mapDatabaseError } from './pg-errors.ts';
import { createProductRepository } from './products.queries.ts';
import { createUserRepository } from './users.queries.ts';
import { createWorkspaceRepository } from './workspaces.queries.ts';

function repositories(db: Database): Repositories {
  return {
    users: createUserRepository(db),
    products: createProductRepository(db),
    workspaces: createWorkspaceRepository(db),
    apiKeys: createApiKeyRepository(db),
    audit: createAuditRepository(db),
  };
}

/**
 * Builds the domain's {@link Store} over a Drizzle database: repositories bound to the pool,
 * and `transaction`, which binds fresh repositories to one transaction and maps constraint
 * violations to AppErrors (e.g. `users__workspace_email` → `user_already_exists`).
 */
export function createStore(db: Database): Store {
  return {
    ...repositories(db),
    async transaction(work) {
      try {
        return await db.transaction(async (tx) => work(repositories(tx as unknown as Database)));
      } catch (error) {
        throw mapDatabaseError(error);
      }
    },
  };
}
