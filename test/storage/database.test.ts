import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { SYSTEM_ACTOR } from '../../src/core/actor.ts';
import { createWorkspace } from '../../src/core/workspaces/workspaces-service.ts';
import { openDatabase, PGLITE_SETTINGS, type OpenDatabase } from '../../src/storage/database.ts';
import { isInitialisedDataDir, pgliteTemplatePath, unpackPgliteTemplate } from '../../src/storage/pglite-template.ts';
import { createStore } from '../../src/storage/store.ts';
import { createPostgresDatabase, type PostgresDatabase } from '../../harness/postgres-cluster.ts';
import { BACKEND, testKeyRing } from '../helpers/test-context.ts';
import { PGlite } from '@electric-sql/pglite';

/** Migrations shipped with the code (drizzle-kit's journal). */
const MIGRATIONS: number = (
  JSON.parse(readFileSync(new URL('../../src/storage/migrations/meta/_journal.json', import.meta.url), 'utf8')) as { entries: unknown[] }
).entries.length;

/** What `execute` resolves to on both drivers (pg's QueryResult and PGlite's Results have `rows`). */
interface Rows<T> {
  readonly rows: T[];
}

/** How many migrations the database records as applied. */
async function appliedMigrations(database: OpenDatabase): Promise<number> {
  const result = (await database.db.execute(sql`select count(*)::int as n from drizzle.__drizzle_migrations`)) as unknown as Rows<{ n: number }>;
  return result.rows[0]!.n;
}

/** The tables of the public schema, sorted. */
async function tables(database: OpenDatabase): Promise<string[]> {
  const result = (await database.db.execute(
    sql`select table_name from information_schema.tables where table_schema = 'public' order by table_name`,
  )) as unknown as Rows<{ table_name: string }>;
  return result.rows.map((r) => r.table_name);
}

describe(`openDatabase [${BACKEND}]`, () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  if (BACKEND === 'pglite') {
    test('an in-memory database is new, migrated and answers ping; ping fails once closed', async () => {
      const database = await openDatabase({ kind: 'memory' });
      assert.equal(database.kind, 'pglite');
      assert.equal(database.created, true);
      await database.ping();
      assert.equal(await appliedMigrations(database), MIGRATIONS);
      assert.ok((await tables(database)).includes('users'));
      await database.close();
      await assert.rejects(database.ping());
    });

    test('PGlite in a data dir: created on first open, migrations applied once, data kept on reopen', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'wum-db-'));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      const dataDir = join(dir, 'nested', 'data');

      const first = await openDatabase({ kind: 'pglite', dataDir });
      assert.equal(first.kind, 'pglite');
      assert.equal(first.created, true);
      assert.ok(existsSync(dataDir), 'the data dir is created');
      await first.ping();
      assert.equal(await appliedMigrations(first), MIGRATIONS);
      const schema = await tables(first);
      await createWorkspace(createStore(first.db, { keyRing: testKeyRing() }), 'kept', 'Kept Inc', SYSTEM_ACTOR);
      await first.close();

      const second = await openDatabase({ kind: 'pglite', dataDir });
      try {
        assert.equal(second.created, false, 'an existing data dir is not new');
        await second.ping();
        assert.equal(await appliedMigrations(second), MIGRATIONS, 'no migration is applied twice');
        assert.deepEqual(await tables(second), schema);
        const kept = await createStore(second.db, { keyRing: testKeyRing() }).workspaces.findBySubdomain('kept');
        assert.equal(kept?.name, 'Kept Inc');
      } finally {
        await second.close();
      }
    });

    test('an existing but empty data dir counts as new', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'wum-db-'));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      const database = await openDatabase({ kind: 'pglite', dataDir: dir });
      try {
        assert.equal(database.created, true);
        assert.equal(await appliedMigrations(database), MIGRATIONS);
      } finally {
        await database.close();
      }
    });

    /** A temporary directory (removed after the file) with the template unpacked into `sub` of it. */
    async function unpackedTemplate(sub = ''): Promise<string> {
      const dir = mkdtempSync(join(tmpdir(), 'wum-db-'));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      const dataDir = join(dir, sub);
      assert.equal(await unpackPgliteTemplate(dataDir), true);
      return dataDir;
    }

    test('the pre-initialised data directory exists for the installed PGlite (else: npm run build:pglite-template)', () => {
      assert.ok(existsSync(pgliteTemplatePath()), `${pgliteTemplatePath()} is missing: run npm run build:pglite-template and commit it`);
    });

    test('a new data dir is unpacked from the template: a complete cluster, migrated, with the embedded settings', async () => {
      const dataDir = await unpackedTemplate('data');
      assert.ok(isInitialisedDataDir(dataDir), 'PG_VERSION is there once unpacked');
      const database = await openDatabase({ kind: 'pglite', dataDir });
      try {
        assert.equal(database.created, false, 'what is unpacked before the open is an existing cluster to it');
        assert.equal(await appliedMigrations(database), MIGRATIONS);
        const settings = (await database.db.execute(sql`select current_setting('shared_buffers') as shared_buffers`)) as unknown as Rows<{ shared_buffers: string }>;
        assert.equal(settings.rows[0]!.shared_buffers, PGLITE_SETTINGS.shared_buffers);
      } finally {
        await database.close();
      }
    });

    test('the template is migrated to the newest migration (else: npm run build:pglite-template)', async () => {
      const dir = await unpackedTemplate();
      // Opened bare, without openDatabase's migrations: what the template itself holds.
      const pglite = await PGlite.create(dir);
      try {
        const applied = await pglite.query<{ n: number }>('select count(*)::int as n from drizzle.__drizzle_migrations');
        assert.equal(applied.rows[0]!.n, MIGRATIONS, 'run npm run build:pglite-template and commit the template');
        // Only the database PGlite serves: template0 and template1 were 600 files to create at a first start.
        const databases = await pglite.query<{ datname: string }>('select datname from pg_database order by datname');
        assert.deepEqual(databases.rows.map((row) => row.datname), ['postgres']);
      } finally {
        await pglite.close();
      }
    });

    test('a data dir left half-unpacked (no PG_VERSION) counts as new and is unpacked again over what is there', async () => {
      const dir = await unpackedTemplate();
      rmSync(join(dir, 'PG_VERSION'));
      rmSync(join(dir, 'global'), { recursive: true });
      const database = await openDatabase({ kind: 'pglite', dataDir: dir });
      try {
        assert.equal(database.created, true);
        assert.equal(await appliedMigrations(database), MIGRATIONS);
        await createWorkspace(createStore(database.db, { keyRing: testKeyRing() }), 'after-crash', undefined, SYSTEM_ACTOR);
      } finally {
        await database.close();
      }
    });
  } else {
    async function freshDatabase(): Promise<PostgresDatabase> {
      const created = await createPostgresDatabase('wum_db');
      cleanups.push(() => created.drop());
      return created;
    }

    test('PostgreSQL: migrations applied once; reopening changes nothing; data kept', async () => {
      const { url } = await freshDatabase();
      const first = await openDatabase({ kind: 'postgres', url, poolSize: 2 });
      assert.equal(first.kind, 'postgres');
      assert.equal(first.created, false, 'only an embedded database is ever "created" (no demo seed)');
      await first.ping();
      assert.equal(await appliedMigrations(first), MIGRATIONS);
      const schema = await tables(first);
      await createWorkspace(createStore(first.db, { keyRing: testKeyRing() }), 'kept', undefined, SYSTEM_ACTOR);
      await first.close();
      await assert.rejects(first.ping(), 'a closed pool does not answer');

      const second = await openDatabase({ kind: 'postgres', url, poolSize: 2 });
      try {
        await second.ping();
        assert.equal(await appliedMigrations(second), MIGRATIONS);
        assert.deepEqual(await tables(second), schema);
        assert.equal((await createStore(second.db, { keyRing: testKeyRing() }).workspaces.findBySubdomain('kept'))?.name, 'kept');
      } finally {
        await second.close();
      }
    });

    test('PostgreSQL: several replicas opening a new database at once all succeed (advisory lock)', async () => {
      for (let round = 0; round < 3; round += 1) {
        const { url } = await freshDatabase();
        const opened = await Promise.allSettled(
          Array.from({ length: 4 }, () => openDatabase({ kind: 'postgres', url, poolSize: 2 })),
        );
        const databases = opened.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
        try {
          assert.deepEqual(
            opened.map((r) => (r.status === 'fulfilled' ? 'ok' : String(r.reason))),
            ['ok', 'ok', 'ok', 'ok'],
          );
          for (const database of databases) await database.ping();
          assert.equal(await appliedMigrations(databases[0]!), MIGRATIONS);
        } finally {
          for (const database of databases) await database.close();
        }
      }
    });

    test('PostgreSQL: opening a database that does not exist rejects with the server error', async () => {
      const url = new URL(process.env.TEST_DATABASE_URL!);
      url.pathname = '/wum_db_does_not_exist';
      await assert.rejects(openDatabase({ kind: 'postgres', url: url.href, poolSize: 1 }), /does not exist/);
    });
  }
});
