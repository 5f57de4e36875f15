import type { SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import type { Database } from './database.ts';

const dialect = new PgDialect();

/**
 * Runs `query` as the named prepared statement `name` and returns its rows (objects keyed by
 * column name, values as the driver decodes them). Over PostgreSQL, each pooled connection
 * parses and plans a name once and then only binds and executes it: for the short queries of
 * the hot paths, planning costs as much as running. PGlite runs it like any query.
 *
 * `name` must always stand for the same SQL text (the driver refuses one name for two texts),
 * so a query with variants (a status filter, a lock clause) needs one name per variant.
 * Source: PostgreSQL "PREPARE" (plan caching); node-postgres "Prepared statements".
 */
export async function runNamed<T>(db: Database, name: string, query: SQL): Promise<T[]> {
  const prepared = db._.session.prepareQuery(dialect.sqlToQuery(query), undefined, name, false);
  const result = (await prepared.execute()) as { rows: T[] };
  return result.rows;
}
