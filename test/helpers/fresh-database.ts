import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { Store } from '../../src/core/ports.ts';
import { openDatabase, type OpenDatabase } from '../../src/storage/database.ts';
import { createStore } from '../../src/storage/store.ts';
import { SYSTEM_ACTOR } from '../../src/core/actor.ts';
import { DEMO_PRODUCTS } from '../../src/core/demo.ts';
import { putProduct } from '../../src/core/products/products-service.ts';
import { BACKEND } from './test-context.ts';

/** A new, empty database on the TEST_DATABASE_URL server, and how to drop it. */
export interface PostgresDatabase {
  /** Connection URL of the new database. */
  readonly url: string;
  /** Drops the database, closing any connection left open to it. */
  drop(): Promise<void>;
}

async function onServer<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const serverUrl = process.env.TEST_DATABASE_URL;
  if (!serverUrl) throw new Error('WUM_TEST_BACKEND=postgres needs TEST_DATABASE_URL');
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * Creates an empty database (no tables, not migrated) on the server of TEST_DATABASE_URL, the
 * same way `test-context.ts` does, with a unique name starting with `prefix`.
 */
export async function createPostgresDatabase(prefix = 'wum_test'): Promise<PostgresDatabase> {
  const name = `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`;
  await onServer((client) => client.query(`create database ${name}`));
  const url = new URL(process.env.TEST_DATABASE_URL!);
  url.pathname = `/${name}`;
  return {
    url: url.href,
    drop: () => onServer((client) => client.query(`drop database if exists ${name} with (force)`)).then(() => undefined),
  };
}

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
    const database = await openDatabase({ kind: 'memory' });
    return { database, store: createStore(database.db), close: () => database.close() };
  }
  const created = await createPostgresDatabase();
  const database = await openDatabase({ kind: 'postgres', url: created.url, poolSize });
  return {
    database,
    store: createStore(database.db),
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
