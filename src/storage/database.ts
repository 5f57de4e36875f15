import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { migrate as migratePg } from 'drizzle-orm/node-postgres/migrator';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import pg from 'pg';
import type { StorageConfig } from '../config/load-config.ts';
import * as schema from './schema.ts';

/** Drizzle over either backend; query code is typed against this and never knows which. */
export type Database = PgDatabase<PgQueryResultHKT, typeof schema>;

/** An open database: the query builder, what it runs on, and how to check and close it. */
export interface OpenDatabase {
  readonly db: Database;
  readonly kind: 'postgres' | 'pglite';
  /** True when this open created a new embedded database (first start on an empty DATA_DIR). */
  readonly created: boolean;
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

const MIGRATIONS_FOLDER = fileURLToPath(new URL('./migrations', import.meta.url));
/** Arbitrary constant shared by every replica: only one migrates at a time. */
const MIGRATION_LOCK_ID = 746_574_001;

async function openPostgres(config: StorageConfig & { kind: 'postgres' }): Promise<OpenDatabase> {
  const pool = new pg.Pool({
    connectionString: config.url,
    max: config.poolSize,
    // A runaway query is cancelled by the server (SQLSTATE 57014, answered 503 by pg-errors.ts).
    ...(config.statementTimeoutMs ? { statement_timeout: config.statementTimeoutMs } : {}),
    // Waiting for a free connection (or a new one) is bounded too, so a stalled database turns
    // into quick 503s rather than a queue of requests that grows without limit.
    ...(config.connectTimeoutMs ? { connectionTimeoutMillis: config.connectTimeoutMs } : {}),
  });
  // An idle client's network error must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  const db = drizzlePg({ client: pool, schema }) as unknown as Database;
  const lockClient = await pool.connect();
  try {
    // Waiting while another replica migrates, and migrating, may take longer than a request may.
    await lockClient.query('set statement_timeout = 0');
    await lockClient.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
    await migratePg(drizzlePg({ client: lockClient, schema }), { migrationsFolder: MIGRATIONS_FOLDER });
  } finally {
    await lockClient.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]).catch(() => {});
    await lockClient.query('reset statement_timeout').catch(() => {});
    lockClient.release();
  }
  return {
    db,
    kind: 'postgres',
    created: false,
    ping: async () => void (await pool.query('select 1')),
    close: () => pool.end(),
  };
}

async function openPglite(dataDir: string | undefined): Promise<OpenDatabase> {
  let created = true;
  if (dataDir !== undefined) {
    created = !existsSync(join(dataDir, 'PG_VERSION'));
    mkdirSync(dataDir, { recursive: true });
  }
  // Loaded only when used: a process on PostgreSQL does not carry PGlite (about 13 MB resident).
  const [{ PGlite }, { drizzle: drizzlePglite }, { migrate: migratePglite }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('drizzle-orm/pglite'),
    import('drizzle-orm/pglite/migrator'),
  ]);
  const client = await PGlite.create(dataDir);
  const db = drizzlePglite({ client, schema }) as unknown as Database;
  await migratePglite(drizzlePglite({ client, schema }), { migrationsFolder: MIGRATIONS_FOLDER });
  return {
    db,
    kind: 'pglite',
    created,
    ping: async () => void (await db.execute(sql`select 1`)),
    close: () => client.close(),
  };
}

/**
 * Opens the configured storage and applies pending migrations: PostgreSQL through a pool
 * (migrations under an advisory lock, so replicas may start together), or embedded PGlite
 * in `dataDir` (`dataDir` undefined in storage config means in memory, for tests).
 * Source: SPEC.md Part B, Running; DESIGN.md, Storage.
 */
export async function openDatabase(
  config: StorageConfig | { readonly kind: 'memory' },
): Promise<OpenDatabase> {
  if (config.kind === 'postgres') return openPostgres(config);
  return openPglite(config.kind === 'pglite' ? config.dataDir : undefined);
}
