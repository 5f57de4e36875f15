import { mkdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { sql } from 'drizzle-orm';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { migrate as migratePg } from 'drizzle-orm/node-postgres/migrator';
import pg from 'pg';
import type { StorageConfig } from '../config/load-config.ts';
import { enablePreparedStatements } from './pglite-prepared.ts';
import { isInitialisedDataDir, readPgliteTemplate, unpackPgliteTemplate } from './pglite-template.ts';
import { createConnector, type ClientOptions } from './postgres-connector.ts';
import type { RequestTransaction } from '../core/idempotency/request-transaction.ts';
import { beginRequestTransaction, scopedDatabase } from './request-transaction.ts';
import * as schema from './schema.ts';
import type { Database } from './database-handle.ts';
import { packagePath } from '../package-root.ts';
import type { PGlite } from '@electric-sql/pglite';

export type { Database } from './database-handle.ts';

/** An open database: the query builder, what it runs on, and how to check and close it. */
export interface OpenDatabase {
  readonly db: Database;
  readonly kind: 'postgres' | 'pglite';
  /** True when this open created a new embedded database (first start on an empty DATA_DIR). */
  readonly created: boolean;
  /**
   * Opens a new connection outside the pool, for the cache listener's `LISTEN`
   * (`storage/notify.ts`). PostgreSQL only: PGlite serves one process, which needs no
   * notification from others. The one place that decides where that connection goes.
   */
  readonly connectListener?: () => Promise<pg.Client>;
  /**
   * Opens a new connection outside the pool, on the primary (PostgreSQL only), for a
   * long-lived client such as a background worker; the caller ends it. Made by the same
   * connector as the pool's, so it follows a failover the same way.
   */
  readonly connect?: (options?: ClientOptions) => Promise<pg.Client>;
  /**
   * Opens one transaction for a whole request (PostgreSQL only): see request-transaction.ts.
   * PGlite has none: it serves one process, and its one connection cannot be held by a request.
   */
  readonly beginRequestTransaction?: () => Promise<RequestTransaction>;
  /** `host:port` of the server the pool currently connects to (PostgreSQL only), when known. */
  readonly currentPrimary?: () => string | undefined;
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

const MIGRATIONS_FOLDER = packagePath('src/storage/migrations');
/** `application_name` of the cache listener's session, so operators can tell it in `pg_stat_activity`. */
export const LISTENER_APPLICATION_NAME = 'wum-cache-listener';
/** `application_name` of the session that takes the migration lock and migrates. */
const MIGRATION_APPLICATION_NAME = 'wum-migrate';
/** Arbitrary constant shared by every replica: only one migrates at a time. */
const MIGRATION_LOCK_ID = 746_574_001;

async function openPostgres(config: StorageConfig & { kind: 'postgres' }): Promise<OpenDatabase> {
  // Every connection, pooled or not, is made by the connector: to the primary of a
  // multi-host DATABASE_URL, with the connect, statement and reply limits (postgres-connector.ts).
  const connector = createConnector({
    url: config.url,
    ...(config.connectTimeoutMs ? { connectTimeoutMs: config.connectTimeoutMs } : {}),
    // A runaway query is cancelled by the server (SQLSTATE 57014, answered 503 by pg-errors.ts).
    ...(config.statementTimeoutMs ? { statementTimeoutMs: config.statementTimeoutMs } : {}),
    ...(config.queryTimeoutMs ? { queryTimeoutMs: config.queryTimeoutMs } : {}),
  });
  // Waiting for a free connection (or a new one) is bounded too (connectionTimeoutMillis, the
  // connect timeout), so a stalled database turns into quick 503s rather than a growing queue.
  const pool = new pg.Pool(connector.poolConfig(config.poolSize));
  // An idle client's network error must not crash the process; the pool replaces it.
  pool.on('error', () => {});
  const raw = drizzlePg({ client: pool, schema }) as unknown as Database;
  // Waiting while another replica migrates, and migrating, may take longer than a request may.
  const lockClient = await connector.connect({ applicationName: MIGRATION_APPLICATION_NAME, statementTimeoutMs: 0, queryTimeoutMs: 0 });
  try {
    await lockClient.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
    await migratePg(drizzlePg({ client: lockClient, schema }), { migrationsFolder: MIGRATIONS_FOLDER });
  } catch (error) {
    await pool.end().catch(() => {});
    throw error;
  } finally {
    // Ending the session releases its advisory lock too.
    await lockClient.end().catch(() => {});
  }
  const writable = connector.targetSessionAttrs !== 'any';
  return {
    db: scopedDatabase(raw),
    kind: 'postgres',
    created: false,
    connect: (options) => connector.connect(options),
    connectListener: () => connector.connect({ applicationName: LISTENER_APPLICATION_NAME }),
    beginRequestTransaction: () => beginRequestTransaction(pool),
    currentPrimary: () => connector.current(),
    async ping() {
      const { rows } = await pool.query<{ standby: boolean }>('select pg_catalog.pg_is_in_recovery() as standby');
      // With target_session_attrs, ready means a session that can write.
      if (writable && rows[0]?.standby) throw new Error('the database server is a standby');
    },
    close: () => pool.end(),
  };
}

/**
 * PostgreSQL settings of the embedded database, on top of PGlite's own start parameters.
 * `shared_buffers`: PostgreSQL's default of 128 MB is allocated and zeroed in PGlite's
 * WebAssembly memory at every start, so it is resident at once, before a single page is
 * read; 16 MB (2,048 pages) holds the catalogue and a small installation's tables, and a page
 * that does not fit is read again from the operating system's file cache
 * (docs/performance.md, "The embedded store").
 * `max_wal_size`: PGlite runs no checkpointer and a single-user backend requests no
 * checkpoint for the WAL it writes, so the embedded maintenance task checkpoints when the
 * checkpointer would, from this setting (storage/embedded-maintenance.ts): 64 MB keeps the
 * WAL directory near 64 MB (docs/operations.md, "The embedded store maintains itself").
 */
export const PGLITE_SETTINGS: Readonly<Record<string, string>> = { shared_buffers: '16MB', max_wal_size: '64MB', min_wal_size: '32MB' };

/** PGlite's start parameters (`postgres --single …`) with {@link PGLITE_SETTINGS} added. */
function pgliteStartParams(defaults: readonly string[]): string[] {
  return [...defaults, ...Object.entries(PGLITE_SETTINGS).flatMap(([name, value]) => ['-c', `${name}=${value}`])];
}

/**
 * `WUM_PGLITE_BASELINE=1` opens the embedded database as before the template and settings
 * existed (PGlite's initdb, PGlite's default settings), so that `npm run bench:embedded` can
 * measure both in one run. A benchmark switch, not a setting: the behaviour is the same.
 */
const PGLITE_BASELINE = process.env.WUM_PGLITE_BASELINE === '1';

/**
 * Applies the pending migrations to an embedded database (all of them to a new one; none to
 * one already at the newest). Used at every open and by `npm run build:pglite-template`.
 * @throws the failing migration's database error.
 */
export async function migrateEmbedded(client: PGlite): Promise<void> {
  const [{ drizzle }, { migrate }] = await Promise.all([import('drizzle-orm/pglite'), import('drizzle-orm/pglite/migrator')]);
  await migrate(drizzle({ client, schema }), { migrationsFolder: MIGRATIONS_FOLDER });
}

async function openPglite(dataDir: string | undefined, from?: string): Promise<OpenDatabase> {
  let created = true;
  // A new database starts from the pre-initialised data directory instead of running initdb
  // (pglite-template.ts); without a template for the installed PGlite, PGlite runs initdb.
  let template: Blob | undefined;
  if (dataDir !== undefined) {
    created = !isInitialisedDataDir(dataDir);
    if (created && !PGLITE_BASELINE) await unpackPgliteTemplate(dataDir);
    mkdirSync(dataDir, { recursive: true });
  } else if (from !== undefined) {
    template = new Blob([await readFile(from)]);
  } else if (!PGLITE_BASELINE) {
    template = await readPgliteTemplate();
  }
  // Loaded only when used: a process on PostgreSQL does not carry PGlite (about 13 MB resident).
  const [{ PGlite, protocol, parse }, { drizzle: drizzlePglite }] = await Promise.all([import('@electric-sql/pglite'), import('drizzle-orm/pglite')]);
  const client = await PGlite.create(dataDir, {
    ...(PGLITE_BASELINE ? {} : { startParams: pgliteStartParams(PGlite.defaultStartParams) }),
    ...(template ? { loadDataDir: template } : {}),
  });
  const db = drizzlePglite({ client, schema }) as unknown as Database;
  await migrateEmbedded(client);
  enablePreparedStatements(client, { serialize: protocol.serialize, ...parse });
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
 * in `dataDir`, or in memory (tests): from the tar of a data directory `from` (as PGlite's
 * `dumpDataDir` writes; `npm test` makes a migrated one once), else from the template.
 * Source: docs/contract.md Part B, Running; docs/architecture.md, Storage.
 */
export async function openDatabase(
  config: StorageConfig | { readonly kind: 'memory'; readonly from?: string },
): Promise<OpenDatabase> {
  if (config.kind === 'postgres') return openPostgres(config);
  if (config.kind === 'pglite') return openPglite(config.dataDir);
  return openPglite(undefined, config.from);
}
