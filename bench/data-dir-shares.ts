/*
 * Which table holds the bytes of an embedded PGlite data directory. While the server owns the
 * directory nothing else may open it, so the size of every relation file is read from disk
 * after each block of changes (`relationFileBytes`), and once the server has stopped the
 * directory is opened to learn which table each file belongs to (`relationOwners`, from
 * `pg_class`/`pg_index`) and to read `pg_total_relation_size` of each table, which checks
 * the files' sum at the end. A relation's file node does not change under ANALYZE or
 * (plain) VACUUM, the only maintenance the service runs, so one mapping serves every block.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Bytes of each relation's files (main fork, free space map, visibility map, 1 GB segments), by `<database oid>/<file node>`. */
export type RelationFileBytes = ReadonlyMap<string, number>;

/** What the data directory's catalog says about its relation files, read once the server has stopped. */
export interface RelationOwners {
  /** Table (in `public`) each `<database oid>/<file node>` belongs to: its own, its indexes', its TOAST table's and TOAST index's. */
  readonly owners: ReadonlyMap<string, string>;
  /** `pg_total_relation_size` of each table in `public`, in bytes. */
  readonly totalRelationSize: ReadonlyMap<string, number>;
}

/** `<file node>`, `<file node>_fsm`, `<file node>_vm`, `<file node>.1`, …: a relation's files (PostgreSQL docs, "Database File Layout"). */
const RELATION_FILE = /^(\d+)(?:_(?:fsm|vm|init))?(?:\.\d+)?$/;

/** Sizes of the relation files under `base/` of a data directory (read from disk, the server may be running). */
export function relationFileBytes(dataDir: string): RelationFileBytes {
  const sizes = new Map<string, number>();
  const base = join(dataDir, 'base');
  for (const database of readdirSync(base)) {
    for (const file of readdirSync(join(base, database))) {
      const node = RELATION_FILE.exec(file)?.[1];
      if (node === undefined) continue;
      const key = `${database}/${node}`;
      sizes.set(key, (sizes.get(key) ?? 0) + statSync(join(base, database, file)).size);
    }
  }
  return sizes;
}

/**
 * Opens the data directory with PGlite (the server must have stopped) and reads which table
 * each relation file belongs to, and `pg_total_relation_size` of each table.
 */
export async function relationOwners(dataDir: string): Promise<RelationOwners> {
  const { PGlite } = await import('@electric-sql/pglite');
  const db = await PGlite.create(dataDir);
  try {
    const [{ oid: database }] = (await db.query<{ oid: number }>('select oid from pg_database where datname = current_database()')).rows as [{ oid: number }];
    // Each relation with its owning table: itself, the table of an index, the table whose
    // TOAST table it is (or whose TOAST table an index belongs to).
    const { rows } = await db.query<{ node: number; owner: string }>(`
      with owned as (
        select c.oid, coalesce(i.indrelid, c.oid) as rel from pg_class c left join pg_index i on i.indexrelid = c.oid
      )
      select pg_relation_filenode(o.oid) as node, t.relname as owner
      from owned o
      join pg_class r on r.oid = o.rel
      join pg_class t on t.oid = coalesce((select p.oid from pg_class p where p.reltoastrelid = r.oid), r.oid)
      where t.relnamespace = 'public'::regnamespace and pg_relation_filenode(o.oid) is not null`);
    const totals = await db.query<{ name: string; bytes: string }>(
      "select relname as name, pg_total_relation_size(oid)::text as bytes from pg_class where relkind = 'r' and relnamespace = 'public'::regnamespace",
    );
    return {
      owners: new Map(rows.map((r) => [`${database}/${r.node}`, r.owner])),
      totalRelationSize: new Map(totals.rows.map((r) => [r.name, Number(r.bytes)])),
    };
  } finally {
    await db.close();
  }
}

/** Label of the bytes no table in `public` owns (system catalogs, the template databases). */
export const OTHER_RELATIONS = '(catalogs and other databases)';

/** Bytes per table (and {@link OTHER_RELATIONS}) of one snapshot of the relation files. */
export function bytesByTable(files: RelationFileBytes, owners: RelationOwners): Map<string, number> {
  const byTable = new Map<string, number>();
  for (const [key, bytes] of files) {
    const table = owners.owners.get(key) ?? OTHER_RELATIONS;
    byTable.set(table, (byTable.get(table) ?? 0) + bytes);
  }
  return byTable;
}
