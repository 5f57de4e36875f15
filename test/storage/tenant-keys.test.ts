import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { openFreshStore, type FreshStore } from '../helpers/fresh-database.ts';
import { BACKEND } from '../helpers/test-context.ts';

/*
 * The way to a distributed PostgreSQL (Citus, distribution column `workspace_id`) stays open
 * only while every tenant table can be distributed by it: its primary key and each unique index
 * lead with `workspace_id`, and a foreign key between two tenant tables carries it, so that it
 * joins rows of one shard. docs/scaling.md, "What the schema must keep". The schema is read
 * from the catalogue of a database the migrations built, on the current backend.
 */

/** Tables without tenant rows: Citus reference tables, copied to every node. */
const REFERENCE_TABLES = new Set(['workspaces', 'products']);

/**
 * Tenant tables allowed to break the rule, each for a reason docs/scaling.md, "What must change",
 * also gives. `audit_events`: operator changes of the catalogue have no workspace
 * (`workspace_id` is nullable), so its key is a global id; `audit_streams`: an operator's stream
 * covers every workspace (`workspace_id` null), so its key is its id.
 */
const EXCEPTIONS = new Set(['audit_events', 'audit_streams']);

interface Rows<T> {
  rows: T[];
}

describe(`tenant tables lead with workspace_id [${BACKEND}]`, () => {
  let fresh: FreshStore;
  const rows = async <T>(query: ReturnType<typeof sql>): Promise<T[]> =>
    ((await fresh.database.db.execute(query)) as unknown as Rows<T>).rows;

  before(async () => {
    fresh = await openFreshStore(2);
  });
  after(() => fresh?.close());

  /** Tables of the public schema with a `workspace_id` column, but for the reference tables. */
  async function tenantTables(): Promise<string[]> {
    const found = await rows<{ table_name: string }>(sql`
      select c.table_name from information_schema.columns c
      join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
      where c.table_schema = 'public' and c.column_name = 'workspace_id' and t.table_type = 'BASE TABLE'
      order by c.table_name`);
    return found.map((r) => r.table_name).filter((name) => !REFERENCE_TABLES.has(name));
  }

  test('the schema has the tenant tables this check is about', async () => {
    const tables = await tenantTables();
    for (const name of ['users', 'user_apps', 'api_keys', 'events', 'webhook_deliveries', 'audit_events']) {
      assert.ok(tables.includes(name), `${name} is a tenant table: ${tables.join(', ')}`);
    }
  });

  test('every primary key and unique index of a tenant table starts with workspace_id', async () => {
    const tables = (await tenantTables()).filter((name) => !EXCEPTIONS.has(name));
    // indkey[0] is 0 for an index whose first key is an expression: that never names workspace_id.
    const indexes = await rows<{ table_name: string; index_name: string; first_column: string | null }>(sql`
      select t.relname as table_name, i.relname as index_name, a.attname as first_column
      from pg_index x
      join pg_class t on t.oid = x.indrelid
      join pg_class i on i.oid = x.indexrelid
      join pg_namespace n on n.oid = t.relnamespace
      left join pg_attribute a on a.attrelid = t.oid and a.attnum = x.indkey[0]
      where n.nspname = 'public' and (x.indisunique or x.indisprimary)
      order by t.relname, i.relname`);
    const offending = indexes
      .filter((ix) => tables.includes(ix.table_name) && ix.first_column !== 'workspace_id')
      .map((ix) => `${ix.table_name}.${ix.index_name} starts with ${ix.first_column ?? 'an expression'}`);
    assert.deepEqual(offending, []);
    for (const table of tables) {
      assert.ok(indexes.some((ix) => ix.table_name === table), `${table} has a primary key`);
    }
  });

  test('a foreign key between two tenant tables includes workspace_id on both sides', async () => {
    const tables = await tenantTables();
    const keys = await rows<{ name: string; from_table: string; to_table: string; from_columns: string[]; to_columns: string[] }>(sql`
      select c.conname as name, f.relname as from_table, t.relname as to_table,
        array(select a.attname::text from unnest(c.conkey) k join pg_attribute a on a.attrelid = c.conrelid and a.attnum = k) as from_columns,
        array(select a.attname::text from unnest(c.confkey) k join pg_attribute a on a.attrelid = c.confrelid and a.attnum = k) as to_columns
      from pg_constraint c
      join pg_class f on f.oid = c.conrelid
      join pg_class t on t.oid = c.confrelid
      join pg_namespace n on n.oid = f.relnamespace
      where c.contype = 'f' and n.nspname = 'public'
      order by c.conname`);
    const between = keys.filter((k) => tables.includes(k.from_table) && tables.includes(k.to_table));
    const offending = between
      .filter((k) => !k.from_columns.includes('workspace_id') || !k.to_columns.includes('workspace_id'))
      .map((k) => `${k.name}: ${k.from_table}(${k.from_columns.join(', ')}) → ${k.to_table}(${k.to_columns.join(', ')})`);
    assert.deepEqual(offending, []);
  });
});
