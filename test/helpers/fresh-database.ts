import type { Store } from '../../src/core/ports.ts';
import { openDatabase, type OpenDatabase } from '../../src/storage/database.ts';
import { createStore } from '../../src/storage/store.ts';
import { SYSTEM_ACTOR } from '../../src/core/actor.ts';
import { DEMO_PRODUCTS } from '../../src/core/demo.ts';
import { putProduct } from '../../src/core/products/products-service.ts';
import { createPostgresDatabase } from '../../harness/postgres-cluster.ts';
import { BACKEND, memoryDatabase, testKeyRing } from './test-context.ts';

/** A fresh migrated database of the current backend with a Store over it. */
export interface FreshStore {
  readonly database: OpenDatabase;
  readonly store: Store;
  close(): Promise<void>;
}

/**
 * Opens a fresh migrated database of the current backend (in-memory PGlite, or a new
 * PostgreSQL database on TEST_DATABASE_URL's server) and builds the Store over it.
 */
export async function openFreshStore(poolSize = 30): Promise<FreshStore> {
  if (BACKEND === 'pglite') {
    const database = await openDatabase(memoryDatabase());
    return { database, store: createStore(database.db, { keyRing: testKeyRing() }), close: () => database.close() };
  }
  const created = await createPostgresDatabase(undefined, { migrated: true });
  const database = await openDatabase({ kind: 'postgres', url: created.url, poolSize });
  return {
    database,
    store: createStore(database.db, { keyRing: testKeyRing() }),
    async close() {
      await database.close();
      await created.drop();
    },
  };
}

/** {@link openFreshStore} with the demo catalogue (analytics, crm, helpdesk) already put. */
export async function openFreshStoreWithProducts(): Promise<FreshStore> {
  const fresh = await openFreshStore();
  for (const product of DEMO_PRODUCTS) await putProduct(fresh.store, product.name, product.roles, SYSTEM_ACTOR);
  return fresh;
}
